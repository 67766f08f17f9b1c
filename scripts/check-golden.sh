#!/usr/bin/env bash
# The project's own CI is the first user of `plan check`: every golden plan in
# testdata/golden is verified independently, compared with itself as the golden reference
# and re-solved from its embedded inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
plan=${1:-bin/plan}
shopt -s nullglob
# legacy/ holds plans written before provenance.options were typed (string maps): they must
# still verify and re-solve.
plans=(testdata/golden/*.json testdata/golden/legacy/*.json)
# A gate that checks nothing must not pass.
if [ ${#plans[@]} -eq 0 ]; then
  echo "no golden plans in testdata/golden" >&2
  exit 1
fi
for p in "${plans[@]}"; do
  echo "== plan check $p"
  "$plan" check "$p" --golden "$p" --tolerance 1% --resolve
done
