#!/usr/bin/env bash
# Writes the native engine's hot list (solver/internal/highs/w2cgen/hot.txt): the functions of
# highs.wasm that `make native` compiles with NATIVE_CFLAGS (-O3); the rest get
# NATIVE_COLD_CFLAGS (-O1), which compiles in less than half the time.
#
#   scripts/native-hot.sh [COLD_SHARE]
#
# How: the engine is built with every function at -O1 and no inlining (so that each sample
# lands in the function that ran), a plan binary is linked against it in a copy of the tree,
# and perf records it (cpu-clock, 4,999 Hz) over the solver's work: `plan bench solver`
# (the bundled LPs and the hc2-g1 MILP), `plan bench ppipe --quick`, every golden solve, the
# cost solves of each system, a schedule and a frontier. Every function sampled is hot but
# the coldest by samples per byte of code, up to COLD_SHARE of the engine's samples (default
# 0.005): those run at -O1 at a cost of well under 1% of the engine's time. Run it when
# highs.wasm changes (w2cgen refuses a list made for another wasm). Needs perf (Debian:
# linux-perf) and wasm2c.
set -euo pipefail
cd "$(dirname "$0")/.."
share=${1:-0.005}
command -v perf >/dev/null || { echo "native-hot: perf not found (apt-get install linux-perf)" >&2; exit 1; }
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/repo"
tar --exclude=./.git --exclude=./out --exclude=./third_party/highs/native -cf - . | tar -xf - -C "$tmp/repo"
native=$tmp/repo/third_party/highs/native
go run ./solver/internal/highs/w2cgen -wasm third_party/highs/highs.wasm -out "$native" -parts 8 -guard-pages
flags="-O1 -fno-inline -march=native -fno-strict-aliasing -ffp-contract=off -fno-math-errno -w"
# shellcheck disable=SC2086
ls "$native"/*.c | xargs -P "$(nproc)" -I{} sh -c "cc $flags -c {} -o {}.o"
ar rcs "$native/libhighs_w2c.a" "$native"/*.c.o
(cd "$tmp/repo" && go build -tags highs_native -o "$tmp/plan" ./cmd/plan)

cat >"$tmp/work.sh" <<'EOF'
set -u
P=$PLAN o=$OUTDIR
s() { $P solve -q --deterministic "$@"; }
$P bench solver -q --report "$o/bs"
$P bench ppipe --quick -q --report "$o/bp"
s -o "$o/g0.json"
s --strategy np -o "$o/g1.json"
s --strategy dart-r -o "$o/g2.json"
s --slo 200ms -o "$o/g3.json"
s --cluster testdata/ppipe/cluster-hc1.yaml -o "$o/g4.json"
s --profile testdata/ppipe/profile.json --cluster testdata/ppipe/cluster.yaml --workload testdata/ppipe/workload.yaml --max-partitions 2 -o "$o/g5.json"
s --profile testdata/pard/profile.json --cluster testdata/pard/cluster.json --workload testdata/pard/workload.json -o "$o/g6.json"
s --profile testdata/cascade/profile.json --cluster testdata/cascade/cluster.yaml --workload testdata/cascade/workload-small.yaml -o "$o/g7.json"
s --profile testdata/qlm/profile.json --cluster testdata/qlm/cluster.yaml --workload testdata/qlm/workload.yaml -o "$o/g8.json"
s --cluster testdata/dyorc/cluster-small.json --workload testdata/dyorc/small.json -o "$o/g9.json"
s --objective cost --profile testdata/ppipe/profile.json --cluster testdata/cost/cluster-priced.yaml --workload testdata/cost/workload.yaml -o "$o/c1.json"
s --objective cost --profile testdata/pard/profile.json --cluster testdata/cost/cluster-pard.yaml --workload testdata/pard/workload.json -o "$o/c2.json"
s --objective cost --profile testdata/cascade/profile.json --cluster testdata/cost/cluster-cascade.yaml --workload testdata/cascade/workload-small.yaml -o "$o/c3.json"
s --objective cost --cluster testdata/cost/cluster-dyorc.yaml --workload testdata/dyorc/small.json --accept-miss -o "$o/c4.json"
s --objective cost --profile testdata/ppipe/profile.json --cluster testdata/cost/cluster-priced.yaml --workload testdata/cost/workload.yaml --trace testdata/schedule/toy-3windows.csv --window 2m -o "$o/s1.json"
$P frontier -q --profile testdata/ppipe/profile.json --cluster testdata/cost/cluster-priced.yaml --workload testdata/cost/workload.yaml --rate 0.5,1,1.5 -O json >"$o/f.json"
EOF
mkdir "$tmp/out"
PLAN=$tmp/plan OUTDIR=$tmp/out perf record -q -F 4999 -e cpu-clock -o "$tmp/perf.data" -- bash -e "$tmp/work.sh" >/dev/null 2>"$tmp/work.log" ||
  { cat "$tmp/work.log" >&2; exit 1; }
perf report -i "$tmp/perf.data" -n --no-children --sort sym -F sample,sym --stdio 2>/dev/null |
  awk '$3 ~ /^w2c_f[0-9]+$/ { print $1, $3 }' >"$tmp/samples"
nm -S "$tmp/plan" | awk '$4 ~ /^w2c_f[0-9]+$/ { print $2, $4 }' >"$tmp/sizes"
sha=$(sha256sum third_party/highs/highs.wasm | cut -d' ' -f1)
python3 - "$tmp/samples" "$tmp/sizes" "$share" "$sha" >"$tmp/hot.txt" <<'EOF'
import sys
samples = {n: int(c) for c, n in (l.split() for l in open(sys.argv[1]))}
sizes = {n: int(s, 16) for s, n in (l.split() for l in open(sys.argv[2]))}
share, sha = float(sys.argv[3]), sys.argv[4]
total = sum(samples.values())
# The coldest first, by samples per byte; the cold set grows while its samples stay within share.
order = sorted(sizes, key=lambda n: (samples.get(n, 0) / max(sizes[n], 1), n))
cold, spent = set(), 0
for n in order:
    if spent + samples.get(n, 0) > share * total:
        break
    spent += samples.get(n, 0)
    cold.add(n)
hot = sorted((n for n in sizes if n not in cold), key=lambda n: int(n[5:]))
hot_bytes = sum(sizes[n] for n in hot)
print("# highs.wasm sha256 " + sha)
print("# Written by scripts/native-hot.sh %s: %d of %d functions, %.1f%% of the code and %.2f%%"
      % (share, len(hot), len(sizes), 100 * hot_bytes / sum(sizes.values()), 100 * (total - spent) / total))
print("# of the engine's %d samples. The rest compile with NATIVE_COLD_CFLAGS." % total)
for n in hot:
    print(n)
EOF
cp "$tmp/hot.txt" "$root/solver/internal/highs/w2cgen/hot.txt"
sed -n 2,3p "$tmp/hot.txt"
