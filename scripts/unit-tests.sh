#!/usr/bin/env bash
# The unit tests in two groups, so that the race detector runs where concurrency lives and
# nowhere else (under -race the simulator and the planners, which are single-threaded, run
# 5-17x slower and the command tests alone took 14 minutes on an idle 2-core machine):
#
#   scripts/unit-tests.sh race    -race over RACE_PKGS (serve and its front ends, the queue, the
#                                 simulator's parallel sweep, the solver's race, the autopilot,
#                                 the profiler's parallel measurement, the formats' reader, the
#                                 deployment search's worker pool) and
#                                 over the command tests that start a server (CLI_RACE)
#   scripts/unit-tests.sh plain   every other package and command test, without -race
#   scripts/unit-tests.sh full    every package under -race, as CI ran before the split
#
# Every test runs in exactly one of race and plain. TAGS (build tags) and TIMEOUT pass through.
# VETTED=1 (make test, whose lint phase ran go vet with every analyzer over every package and
# its tests, with the same tags) turns off go test's own vet pass, a subset of those
# analyzers that each group would otherwise run again (45 CPU-s a group, cold).
# go test's JSON events go through scripts/gotest-filter.py, which prints what plain go test
# prints and appends each stream's test counts (passed, skipped, heavy, failed) to
# $PLAN_CI_DIR/tests.tsv, and each top-level test's time to test-times.tsv, for ci-phase.sh's
# summary.
set -euo pipefail
cd "$(dirname "$0")/.."
group=${1:?usage: scripts/unit-tests.sh race|plain|full}
TAGS=${TAGS:-}
TIMEOUT=${TIMEOUT:-15m}
vet=""
[ "${VETTED:-}" = 1 ] && vet="-vet=off"
mod=github.com/plan-dev/plan
# Packages whose production code starts goroutines or shares memory between them (checked by
# internal/layering's TestRaceGroupCoversConcurrency, which reads this line), the longest under
# -race first: go test starts them in this order, and the two planners, listed last, ran alone
# at the group's end (66 and 50 s under -race; the warm group 197 -> 185 s in this order).
RACE_PKGS="./planner/llmdeploy ./planner/autopilot ./sim ./serve/... ./bench/ppipebench ./formats ./internal/run/serve ./solver/... ./dataplane/autopilot ./profiler/measure ./internal/base/progress ./internal/run/solve/explain"
CLI=./cmd/plan/internal/cli
# The command tests that run `plan serve` in-process (servers, signals, reloads, load against
# them); the rest of the command package is single-threaded planning and simulation.
CLI_RACE='^Test(Serve|Load|Signals|MetricsExposition)'
counts=${PLAN_CI_DIR:-out/ci}/tests.tsv
times=${PLAN_CI_DIR:-out/ci}/test-times.tsv
mkdir -p "$(dirname "$counts")"
# gotest GROUP ARGS...: the shell text of `go test -json ARGS` through the filter, failing when
# go test or the filter fails.
gotest() {
  local g=$1
  shift
  echo "set -o pipefail; go test -json $vet $* | python3 scripts/gotest-filter.py --counts '$counts' --times '$times' --group $g"
}

# run_pair A B: two `go test` invocations side by side (they share the build cache and the two
# cores), failing when either fails; each prints its own per-package result lines.
run_pair() {
  local pa pb ra=0 rb=0
  bash -c "$1" & pa=$!
  bash -c "$2" & pb=$!
  wait "$pa" || ra=$?
  wait "$pb" || rb=$?
  [ "$ra" -eq 0 ] && [ "$rb" -eq 0 ]
}

# streams GROUP:CMD...: run each command (a shell string) at once, print each one's output
# whole when it ends, its `ok`/`FAIL` package lines tagged with GROUP, and fail when any
# failed. (The race group's streams run as run_pair does, untagged: its tests time a server.)
streams() {
  local dir pids=() rc=0 i=0
  dir=$(mktemp -d)
  for c in "$@"; do
    bash -c "${c#*:}" >"$dir/$i" 2>&1 &
    pids+=($!)
    i=$((i + 1))
  done
  i=0
  for c in "$@"; do
    wait "${pids[$i]}" || rc=1
    awk -v g="${c%%:*}" '($1 == "ok" || $1 == "FAIL") && NF >= 3 { print $0 "\t(" g ")"; next } { print }' "$dir/$i"
    i=$((i + 1))
  done
  rm -rf "$dir"
  return "$rc"
}

case "$group" in
race)
  run_pair "$(gotest race -race -count=1 -timeout "$TIMEOUT" -tags "'$TAGS'" "$RACE_PKGS")" \
    "$(gotest race-cli -race -count=1 -timeout "$TIMEOUT" -tags "'$TAGS'" -run "'$CLI_RACE'" "$CLI")"
  ;;
plain)
  # shellcheck disable=SC2086
  plain=$(comm -23 <(go list ./... | sort) <(go list $RACE_PKGS $CLI | sort) | sed "s|^$mod|.|")
  # The command package's tests in two halves by name (its 180 s were the group's tail):
  # A-R and Simulate*, then Solve* and the rest (go test -list: every test in exactly one).
  streams "plain:$(gotest plain -count=1 -timeout "$TIMEOUT" -tags "'$TAGS'" $(echo $plain))" \
    "plain:$(gotest plain-cli-a -count=1 -timeout "$TIMEOUT" -tags "'$TAGS'" -run "'^(Test[A-Ra-r]|TestSim|Fuzz|Example)'" -skip "'$CLI_RACE'" "$CLI")" \
    "plain:$(gotest plain-cli-b -count=1 -timeout "$TIMEOUT" -tags "'$TAGS'" -run "'^Test([^A-Ra-rS]|S[^i]|Si[^m])'" -skip "'$CLI_RACE'" "$CLI")"
  ;;
full)
  bash -c "$(gotest full -race -count=1 -timeout 45m -tags "'$TAGS'" ./...)"
  ;;
*)
  echo "scripts/unit-tests.sh: unknown group $group (race, plain or full)" >&2
  exit 2
  ;;
esac
