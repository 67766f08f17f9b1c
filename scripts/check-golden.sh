#!/usr/bin/env bash
# The project's own CI is the first user of `plan check`: every golden plan in
# testdata/golden is verified independently, compared with itself as the golden reference
# and re-solved from its embedded inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
plan=${1:-bin/plan}
shopt -s nullglob
plans=(testdata/golden/*.json)
if [ ${#plans[@]} -eq 0 ]; then
  echo "no golden plans in testdata/golden"
  exit 0
fi
for p in "${plans[@]}"; do
  echo "== plan check $p"
  "$plan" check "$p" --golden "$p" --tolerance 1% --resolve
done
