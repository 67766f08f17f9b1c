#!/usr/bin/env bash
# bench-serve.sh — serve against simulate, out of process: `plan serve` and `plan load` as
# two processes on this machine, against `plan simulate` on the same trace, and against the
# HTTP floor (serve/load/floor: a trivial net/http handler that waits the model's latency).
#
#   serve/load/bench-serve.sh [PLAN]          # default: plan solve --slo 200ms on the demo
#   LOADS="0.9 2 3" DURATION=60s AFTER=30 FLOOR_RATES="1000 2000 3000 4000" serve/load/bench-serve.sh
#
# Per load: serve's goodput, attainment and p50/p99 next to simulate's, the server's CPU per
# request (utime+stime of the serve process / requests), its RSS before, at peak, at the end
# and AFTER seconds idle. Then plan vs floor on testdata/serve/wide.json (32 emulated L4s,
# 2 ms, SLO 50 ms: the GPUs never bind, so the comparison is the HTTP and driver overhead) at
# FLOOR_RATES: attainment, p50, p99, server CPU per request; the max rate within SLO is the
# highest rate with ≥ 99% attainment. LOADS="" skips the first part. NICE (default 0) runs the measured processes at that
# niceness (e.g. NICE=-10 on a machine shared with other jobs).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d)}
LOADS=${LOADS-"0.9 2 3"}; DURATION=${DURATION:-60s}; AFTER=${AFTER:-30}
FLOOR_RATES=${FLOOR_RATES:-"1000 2000 3000 4000 6000"}; FLOOR_DURATION=${FLOOR_DURATION:-10s}
N="nice -n ${NICE:-0}"
# PLAN_BIN and FLOOR_BIN use prebuilt binaries (a machine without Go).
if [ -n "${PLAN_BIN:-}" ]; then cp "$PLAN_BIN" "$OUT/plan"; else go build -o "$OUT/plan" ./cmd/plan; fi
if [ -n "${FLOOR_BIN:-}" ]; then cp "$FLOOR_BIN" "$OUT/floor"; else go build -o "$OUT/floor" ./serve/load/floor; fi
PLAN=${1:-}
if [ -z "$PLAN" ]; then
  PLAN="$OUT/plan.json"
  "$OUT/plan" solve --slo 200ms -o "$PLAN" -q
fi
ADDR=127.0.0.1:18180
echo "# $(date -u) on $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); plan $PLAN; results in $OUT"

start() { # start KIND PLAN → PID in $SP
  if [ "$1" = serve ]; then $N "$OUT/plan" serve "$2" --addr $ADDR --log-level error >"$OUT/server.log" 2>&1 &
  else $N "$OUT/floor" --plan "$2" --addr $ADDR >"$OUT/server.log" 2>&1 & fi
  SP=$!
  for _ in $(seq 50); do curl -sf "http://$ADDR/v1/plan" >/dev/null && return; sleep 0.1; done
  echo "server did not start" >&2; exit 1
}
cpu() { awk '{print $14+$15}' /proc/$SP/stat; }
rss() { awk '/VmRSS/{print $2}' /proc/$SP/status; }
summary() { # summary JSON LABEL CPUTICKS [short]
  python3 - "$@" <<'PY'
import json, sys, os
d = json.load(open(sys.argv[1])); t = d['points'][0]['total']; ticks = int(sys.argv[3])
hz = os.sysconf('SC_CLK_TCK')
print("%-22s offered %6.0f/s  attainment %7.3f%%  goodput %7.1f/s  late %6d  dropped %7d  p50 %7.1f ms  p99 %7.1f ms  server CPU %6.1f µs/req"
      % (sys.argv[2], t['offered_rps'], 100*t['attainment'], t['goodput_rps'], t['late'], t['dropped'],
         t['latency']['p50_us']/1e3, t['latency']['p99_us']/1e3, ticks*1e6/hz/max(t['requests'],1)))
if len(sys.argv) < 5:
    print("%-22s drops %s" % ("", [(x['stage'], x['reason'], x['count']) for x in (t.get('drops') or [])]))
    o = d.get('outcomes') or {}
    print("%-22s late by the server's clock %d of %d; server-reported p99 %.1f ms"
          % ("", o.get('server_late', 0), o.get('late', 0), o.get('server_p99_ns', 0)/1e6))
PY
}

[ -n "$LOADS" ] && echo "## serve vs simulate"
for L in $LOADS; do
  start serve "$PLAN"
  c0=$(cpu); r0=$(rss); peak=$r0
  ( while kill -0 $SP 2>/dev/null; do r=$(rss || echo 0); [ "${r:-0}" -gt "$(cat "$OUT/peak" 2>/dev/null || echo 0)" ] && echo "$r" >"$OUT/peak"; sleep 0.5; done ) & MP=$!
  echo "$r0" >"$OUT/peak"
  $N "$OUT/plan" load "http://$ADDR" --load "$L" --duration "$DURATION" --seed 1 -O json >"$OUT/load-$L.json" 2>"$OUT/load-$L.err" || true
  c1=$(cpu); r1=$(rss); sleep "$AFTER"; r2=$(rss)
  kill $MP 2>/dev/null || true; kill -TERM $SP; wait $SP || true
  summary "$OUT/load-$L.json" "serve load $L" $((c1 - c0))
  echo "                       RSS before ${r0} kB, peak $(cat "$OUT/peak") kB, end ${r1} kB, after ${AFTER}s idle ${r2} kB; $(grep -ho 'max_lag=.*' "$OUT/load-$L.err" | sed 's/max_lag=/generator lag /' || true)"
done
[ -n "$LOADS" ] && $N "$OUT/plan" simulate "$PLAN" --load "$(echo $LOADS | tr ' ' ,)" --duration "$DURATION" --seed 1 -q 2>/dev/null

echo "## plan vs floor on testdata/serve/wide.json (interleaved, so both see the same machine)"
for R in $FLOOR_RATES; do
  for K in floor serve; do
    start $K testdata/serve/wide.json
    c0=$(cpu)
    $N "$OUT/plan" load "http://$ADDR" --rate "$R" --model w --duration "$FLOOR_DURATION" --seed 1 -O json >"$OUT/$K-$R.json" 2>/dev/null || true
    c1=$(cpu); kill -TERM $SP; wait $SP || true
    summary "$OUT/$K-$R.json" "$K $R/s" $((c1 - c0)) short
  done
done
