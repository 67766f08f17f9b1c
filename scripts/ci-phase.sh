#!/usr/bin/env bash
# Times the phases of `make test` (and of .ci/run around it), so that a slow CI run says where
# its time went:
#
#   scripts/ci-phase.sh --begin            start a run (keeps the phases .ci/run recorded when it
#                                          set PLAN_CI_T0, its own start time)
#   scripts/ci-phase.sh NAME CMD [ARG...]  run CMD as phase NAME: its output is shown and kept in
#                                          $PLAN_CI_DIR/NAME.log, its wall time, exit status and
#                                          the load average before and after recorded
#   scripts/ci-phase.sh --record NAME SECONDS  record a phase timed elsewhere (.ci/run's install)
#   scripts/ci-phase.sh --summary          the phase table, the ten slowest test packages and the
#                                          load average; also printed when a phase fails
#
# Past PLAN_CI_WARN_S (default 2700 s, 45 minutes) from the start, every phase that ends prints
# a warning in capitals naming itself: a warning, never a failure (a slow machine must not block
# a landing, but the next regression must not eat the 90-minute margin silently).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${PLAN_CI_DIR:-out/ci}
warn_s=${PLAN_CI_WARN_S:-2700}
mkdir -p "$dir"

now() { date +%s; }
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
t0() { cat "$dir/t0" 2>/dev/null || now; }
hms() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
# cpu: the machine's busy and total jiffies so far ("BUSY TOTAL", /proc/stat's first line:
# user nice system idle iowait irq softirq steal); two readings give a phase's CPU use, the
# share of all cores' time spent busy, so that a phase that leaves cores idle shows it.
cpu() { awk '$1 == "cpu" { b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6; exit }' /proc/stat 2>/dev/null || echo "0 0"; }
# busy BEFORE AFTER: the percentage of core time busy between two cpu readings.
busy() {
  local b0 t0 b1 t1
  read -r b0 t0 <<<"$1"
  read -r b1 t1 <<<"$2"
  if [ $((t1 - t0)) -gt 0 ]; then echo "$(((b1 - b0) * 100 / (t1 - t0)))%"; else echo "-"; fi
}

summary() {
  local total=$(($(now) - $(t0)))
  echo
  echo "== CI phases (wall time; CPU: the share of all $(nproc) cores busy during the phase; load average 1/5/15 min at its start and end) =="
  printf '%-12s %8s  %5s  %-6s  %-16s  %-16s\n' phase time CPU status "load before" "load after"
  while IFS=$'\t' read -r name secs status lb la use; do
    printf '%-12s %8s  %5s  %-6s  %-16s  %-16s\n' "$name" "$(hms "$secs")" "${use:--}" "$status" "$lb" "$la"
  done <"$dir/phases.tsv"
  printf '%-12s %8s\n' total "$(hms "$total")"
  echo "== the ten slowest test packages (go test's own times; (race) = under -race) =="
  for f in "$dir"/unit-race.log "$dir"/unit.log "$dir"/agreement.log; do
    [ -f "$f" ] || continue
    g=$(basename "$f" .log)
    # unit-tests.sh all tags each package line with its group: "(race)" or "(plain)".
    awk -v g="$g" '($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { sub(/s$/, "", $3); h = g; if ($NF ~ /^\(.*\)$/) h = g " " $NF; printf "%s\t%s\t%s\n", $3, h, $2 }' "$f"
  done | sort -t$'\t' -k1,1 -rn | head -10 | while IFS=$'\t' read -r secs g pkg; do
    flag=""
    # No package's tests may take over 5 minutes under CI's flags.
    awk -v s="$secs" 'BEGIN { exit !(s > 300) }' && flag="  OVER 5 MINUTES"
    printf '%8.1fs  %-18s %s%s\n' "$secs" "$g" "${pkg#github.com/plan-dev/plan/}" "$flag"
  done
  if [ -s "$dir/test-times.tsv" ]; then
    # Each top-level test's own time (scripts/gotest-filter.py --times): where a package's
    # minutes go, and the candidates for make test-full's heavy cases (internal/base/testmode).
    echo "== the ten slowest tests =="
    sort -t$'\t' -k1,1 -rn "$dir/test-times.tsv" | head -10 | while IFS=$'\t' read -r secs g pkg test; do
      printf '%8.1fs  %-12s %s %s\n' "$secs" "$g" "${pkg#github.com/plan-dev/plan/}" "$test"
    done
  fi
  if [ -s "$dir/tests.tsv" ]; then
    # Each unit-test stream's counts (scripts/gotest-filter.py): tests and subtests.
    echo "== unit tests (tests and subtests; heavy: the cases only make test-full runs) =="
    awk -F'\t' '{ p += $2; s += $3; h += $4; f += $5; printf "  %-12s %6d passed %5d skipped (%d heavy) %4d failed\n", $1, $2, $3, $4, $5 }
      END { printf "  %-12s %6d passed %5d skipped (%d heavy) %4d failed\n", "total", p, s, h, f }' "$dir/tests.tsv"
  fi
  echo "== load average now: $(load) on $(nproc) CPUs =="
  if [ "$total" -gt "$warn_s" ]; then
    crossed=$(cat "$dir/crossed" 2>/dev/null || echo "?")
    echo "WARNING: CI TOOK $(hms "$total") (OVER $(hms "$warn_s")); IT PASSED $(hms "$warn_s") IN PHASE ${crossed^^}."
  fi
}

case "${1:-}" in
--begin)
  if [ -z "${PLAN_CI_T0:-}" ]; then
    rm -f "$dir"/*.log "$dir"/phases.tsv "$dir"/crossed "$dir"/tests.tsv "$dir"/test-times.tsv
    now >"$dir/t0"
  else
    echo "$PLAN_CI_T0" >"$dir/t0"
  fi
  touch "$dir/phases.tsv"
  ;;
--record)
  printf '%s\t%s\tok\t-\t%s\n' "$2" "$3" "$(load)" >>"$dir/phases.tsv"
  ;;
--summary)
  summary
  ;;
"" | -*)
  echo "usage: scripts/ci-phase.sh --begin | NAME CMD [ARG...] | --record NAME SECONDS | --summary" >&2
  exit 2
  ;;
*)
  name=$1
  shift
  lb=$(load)
  start=$(now)
  c0=$(cpu)
  echo "== phase $name (load average $lb) =="
  "$@" 2>&1 | tee "$dir/$name.log"
  rc=${PIPESTATUS[0]}
  end=$(now)
  use=$(busy "$c0" "$(cpu)")
  status=ok
  [ "$rc" -ne 0 ] && status=FAILED
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" $((end - start)) "$status" "$lb" "$(load)" "$use" >>"$dir/phases.tsv"
  echo "== phase $name: $(hms $((end - start))) ($status; CPU $use; $(hms $((end - $(t0)))) since the start) =="
  if [ $((end - $(t0))) -gt "$warn_s" ]; then
    [ -f "$dir/crossed" ] || echo "$name" >"$dir/crossed"
    echo "WARNING: CI PAST $(hms "$warn_s") AT THE END OF PHASE ${name^^} ($(hms $((end - $(t0)))) SO FAR; load average $(load))"
  fi
  if [ "$rc" -ne 0 ]; then
    ./scripts/ci-background.sh stop
    summary
    exit "$rc"
  fi
  ;;
esac
