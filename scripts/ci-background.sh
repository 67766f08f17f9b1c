#!/usr/bin/env bash
# Background work for `make test`: a job started early at idle priority, so that it uses only
# the CPU time the phases in front of it leave (the native build's serial generation step, the
# race tests' waits on timers, the agreement runs' one idle core), and waited for by the phase
# that needs its result.
#
#   scripts/ci-background.sh start NAME CMD [ARG...]  run CMD under SCHED_IDLE (chrt --idle 0;
#                                                     nice 19 where chrt is missing), its output
#                                                     to $PLAN_CI_DIR/NAME.bg.log
#   scripts/ci-background.sh wait NAME                wait for it, print its output and how long
#                                                     the wait took, and exit with its status
#   scripts/ci-background.sh stop                     end every job still running (a failed
#                                                     phase: scripts/ci-phase.sh)
#
# Under SCHED_IDLE the kernel runs the job only when no normal task wants the CPU, and a normal
# task that wakes preempts it at once, so the timers of the tests in front keep time.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${PLAN_CI_DIR:-out/ci}
mkdir -p "$dir"

case "${1:-}" in
start)
  name=${2:?usage: scripts/ci-background.sh start NAME CMD [ARG...]}
  shift 2
  idle=(nice -n 19)
  command -v chrt >/dev/null && chrt --idle 0 true 2>/dev/null && idle=(chrt --idle 0)
  rm -f "$dir/$name.bg.rc"
  # In a process group of its own (job control: stop ends the whole group) but in CI's session:
  # with autogroup scheduling (kernel.sched_autogroup_enabled) a new session (setsid) is a new
  # scheduling group that the kernel shares the CPU with equally, whatever its tasks' policy,
  # and the "idle" build took half the machine from the native build. Every descriptor goes to
  # the log: a phase's output pipe (ci-phase.sh's tee) must not wait for it.
  set -m
  "$0" _run "$name" "${idle[@]}" "$@" >"$dir/$name.bg.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.bg.pid"
  echo "ci-background: $name started at idle priority (${idle[*]}): $*"
  ;;
_run)
  name=$2
  shift 2
  "$@"
  echo $? >"$dir/$name.bg.rc.tmp"
  mv "$dir/$name.bg.rc.tmp" "$dir/$name.bg.rc"
  ;;
wait)
  name=${2:?usage: scripts/ci-background.sh wait NAME}
  [ -f "$dir/$name.bg.pid" ] || { echo "ci-background: no job $name was started" >&2; exit 2; }
  start=$(date +%s)
  while [ ! -f "$dir/$name.bg.rc" ]; do
    if ! kill -0 "$(cat "$dir/$name.bg.pid")" 2>/dev/null && [ ! -f "$dir/$name.bg.rc" ]; then
      echo "ci-background: $name ended without a status" >&2
      cat "$dir/$name.bg.log"
      exit 1
    fi
    sleep 1
  done
  cat "$dir/$name.bg.log"
  rc=$(cat "$dir/$name.bg.rc")
  echo "ci-background: $name ended with status $rc; waited $(($(date +%s) - start)) s for it"
  rm -f "$dir/$name.bg.pid"
  exit "$rc"
  ;;
stop)
  for f in "$dir"/*.bg.pid; do
    [ -f "$f" ] || continue
    kill -TERM -- "-$(cat "$f")" 2>/dev/null
    rm -f "$f"
  done
  ;;
*)
  echo "usage: scripts/ci-background.sh start NAME CMD [ARG...] | wait NAME | stop" >&2
  exit 2
  ;;
esac
