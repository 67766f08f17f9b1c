#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time (default 5s each).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-5s}
status=0
while IFS=: read -r file _ line; do
  pkg=./$(dirname "$file")
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$line")
  echo "== fuzz $pkg $name ($fuzztime)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 3s "$pkg"; then
    status=1
  fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | sort)
exit $status
