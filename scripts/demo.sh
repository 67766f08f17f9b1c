#!/usr/bin/env bash
# The main job on the embedded demo (a small CNN on 4×L4 + 12×P4), as `make demo` runs it
# after building: solve for a plan, simulate it at a range of loads with plots, check it.
# Outputs land in out/demo/ (git-ignored). Usage: scripts/demo.sh [PLAN_BINARY]
set -euo pipefail
plan=${1:-bin/plan}
out=out/demo
mkdir -p "$out"
"$plan" solve --slo 200ms -o "$out/plan.json"
"$plan" simulate "$out/plan.json" --load 0.5:1.0:0.1 --duration 10s --report "$out/report"
"$plan" check "$out/plan.json" --resolve
echo "demo: the plan, report.json and the attainment and timeline plots are in $out/"
