#!/usr/bin/env bash
# The wall-clock agreement runs (serve against simulate), in lanes side by side.
#
# Each run serves a plan in-process with real timers for a fixed time at a modest rate: a
# 20-30 s run uses 2-5 CPU-seconds (measured: TestAgreementPARD 20.7 s wall, 3.6 s CPU;
# TestAgreementCascade 30.7 s wall, 4.8 s CPU), so the cores sit idle for most of it and
# one after another they took 3 minutes of CI's wall time. Four lanes at once keep the
# machine under one busy core, and each lane's runs stay in order:
#
#   load-a    TestAgreement (PPipe), TestAgreementPARD, TestAgreementCascade   (serve/load)
#   load-b    TestAgreementDyOrc, TestOpenAIAgreement, TestAgreementDisagg      (serve/load)
#   load-c    QLM's goodput under overload, TestOpenAIAgreementOverload (75 s)  (serve/load)
#   cli       TestAutopilotServeSimulateAgree* (cmd/plan/internal/cli), the streaming
#             rule's TTFT clocks (serve/openai TestStreamTTFTIndependentOfMaxTokens), then
#             DyOrc's goodput at 3x its rates (serve/load TestAgreementDyOrcOverload, 21 s;
#             make test-full only: it skips itself otherwise)
#
# The test binaries are built first, one at a time (building while a lane runs would take
# the cores from its timers). A lane that fails is retried twice, alone in its lane, as
# wall-clock runs share the machine with whatever else runs (at load 0.9 the PPipe
# comparison sits 2–3 points apart, close to its 3-point bound). Each lane's output is
# printed whole when all have ended, with a `go test`-style "ok"/"FAIL" line per lane for
# scripts/ci-phase.sh's slowest-package table.
#
# Environment: TAGS (build tags), PLAN_AGREEMENT_DURATION, PLAN_OPENAI_AGREEMENT_DURATION.
set -euo pipefail
cd "$(dirname "$0")/.."
TAGS=${TAGS:-}
export PLAN_AGREEMENT=1
export PLAN_AGREEMENT_DURATION=${PLAN_AGREEMENT_DURATION:-10s}
export PLAN_OPENAI_AGREEMENT_DURATION=${PLAN_OPENAI_AGREEMENT_DURATION:-30s}
mod=github.com/plan-dev/plan
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# -ldflags=-w: no DWARF (no debugger runs it; go test without -c leaves it out itself),
# which halves the link (the command package's test binary 8.9 -> 5.0 CPU-s).
for p in serve/load cmd/plan/internal/cli serve/openai; do
  go test -c -ldflags=-w -tags "$TAGS" -o "$dir/$(basename "$p").test" "./$p"
done

# run PKGDIR BIN REGEX: one test binary in its package's directory (as go test runs it).
# Each lane has its own state directory: the OpenAI front end keeps its batch queue under
# $XDG_STATE_HOME, one directory per --addr, and two lanes' servers may share an address form.
run() {
  (cd "$1" && XDG_STATE_HOME="$dir/state-$lane_name" "$2" -test.v -test.count=1 -test.timeout 10m -test.run "$3")
}

# lane NAME STEP...: each STEP is "PKGDIR REGEX"; the lane passes when every step passes
# within three tries.
lane() {
  local name=$1 status=0 start pkg rx attempt
  shift
  lane_name=$name
  start=$(date +%s)
  for step in "$@"; do
    pkg=${step%% *}
    rx=${step#* }
    for attempt in 1 2 3; do
      if run "$pkg" "$dir/$(basename "$pkg").test" "$rx"; then
        break
      fi
      if [ "$attempt" -lt 3 ]; then
        echo "agreement: $name: $rx failed; retrying ($attempt of 2)"
      else
        status=1
      fi
    done
    [ "$status" -eq 0 ] || break
  done
  local word=ok
  [ "$status" -eq 0 ] || word=FAIL
  printf '%s\t%s\t%ds\t(%s)\n' "$word" "$mod/${1%% *}" "$(($(date +%s) - start))" "$name"
  return "$status"
}

pids=()
lane load-a "serve/load ^Test(Agreement|AgreementPARD|AgreementCascade)\$" >"$dir/load-a.out" 2>&1 &
pids+=($!)
lane load-b "serve/load ^Test(AgreementDyOrc|OpenAIAgreement|AgreementDisagg)\$" >"$dir/load-b.out" 2>&1 &
pids+=($!)
lane cli "cmd/plan/internal/cli ^TestAutopilotServeSimulateAgree" \
  "serve/openai ^TestStreamTTFTIndependentOfMaxTokens\$" \
  "serve/load ^TestAgreementDyOrcOverload\$" >"$dir/cli.out" 2>&1 &
pids+=($!)
lane load-c "serve/load ^TestOpenAIAgreementOverload\$" >"$dir/load-c.out" 2>&1 &
pids+=($!)
status=0
for p in "${pids[@]}"; do
  wait "$p" || status=1
done
for f in load-a load-b load-c cli; do
  echo "== agreement lane $f"
  cat "$dir/$f.out"
done
exit "$status"
