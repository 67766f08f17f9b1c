#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time (default 5s each).
#
# Go's fuzzing coordinator sometimes fails a run with a bare "context deadline exceeded" when
# a worker is still busy at the deadline (no crasher is found or written). Such a run is retried
# (up to twice); any run that found a failing input fails the script at once.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-5s}
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
while IFS=: read -r file _ line; do
  pkg=./$(dirname "$file")
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$line")
  for attempt in 1 2 3; do
    echo "== fuzz $pkg $name ($fuzztime)"
    if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 3s "$pkg" 2>&1 | tee "$log"; then
      break
    fi
    if [ "$attempt" -lt 3 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "== fuzz $pkg $name: coordinator deadline flake, retrying"
      continue
    fi
    status=1
    break
  done
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | sort)
exit $status
