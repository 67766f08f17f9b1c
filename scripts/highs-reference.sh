#!/usr/bin/env bash
# Builds a native HiGHS from Debian's source package and solves model files with it, for the
# native side of the "native engine ≤ 1.1× native HiGHS per unit of work" ratio (Makefile, NATIVE_MEMCHECK).
#
#   scripts/highs-reference.sh FILE.lp [FILE.lp ...]
#
# Each file's LP relaxation is solved with one thread, presolve off (PRESOLVE=on to change) and
# the simplex solver (highs-reference.cpp): the options of `go test -bench BenchmarkLPFile
# ./solver/` with PLAN_BENCH_LP=FILE.lp,... for the embedded engines, so both sides report the
# simplex iterations and the time per iteration of the same model. REPS runs (default 3).
# CXXFLAGS adds to HiGHS's Release flags (-O3). Build it as the native engine is built:
#
#   CXXFLAGS='-march=native -ffp-contract=off' scripts/highs-reference.sh FILE.lp ...
#
# -ffp-contract=off matters: without it the compiler fuses multiply-adds, rounds differently
# from the wasm the engines run, and the simplex takes another path (with -march=native alone,
# 3 of 5 files took 1777 against 1858 iterations), so a time per iteration compares different
# work. Measured this way the native engine (guard) runs at 1.08-1.10x this
# HiGHS per iteration on the hc2-g1 LP relaxation and 0.96-1.01x on the small demo
# model (CPU time; on a shared machine, wall-clock time spreads wider: bench/results/solver.md).
#
# ENGINE=FILE compares: FILE is `go test -bench BenchmarkLPFile ./solver/` output for the same
# files; the script prints engine/native per iteration for each file and engine, and refuses
# (exit 1, no ratio) where the iteration counts differ. NATIVE=FILE takes the native side from
# an earlier run's output instead of building and running HiGHS (TestHighsReferenceRatio).
#
# Debian's archive is where a HiGHS source tarball can be fetched from here (the Go module
# proxy refuses github.com/ERGO-Code/HiGHS; npm has only builds). The newest source in its pool
# is trixie's 1.10.0 (sid lists 1.14.0, whose files the pool does not serve): the embedded
# engines run 1.15.1, so compare per iteration, and check the iteration counts agree. Needs
# cmake and g++ (apt-get install cmake g++). Nothing here is committed: the source and build
# live under third_party/highs/reference/ (git-ignored).
set -euo pipefail
# ENGINE and NATIVE name files relative to where the script was started.
for v in ENGINE NATIVE; do [ -z "${!v:-}" ] || export "$v=$(realpath "${!v}")"; done
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 FILE.lp [FILE.lp ...]" >&2; exit 2; }

ver=1.10.0
tarball=highs_${ver}+ds.orig.tar.xz
sum=5964fc1ca4f0b23dd45987bbed1838f2e570e96aa624635ac63d277152b6c94a
dir=third_party/highs/reference
src=$dir/HiGHS-$ver
flags=${CXXFLAGS:-}
build=$src/build${flags:+-$(echo "$flags" | tr -c 'A-Za-z0-9=\n' '_')}
bin=$build/lpbench

if [ -n "${NATIVE:-}" ]; then
  out=$(cat "$NATIVE")
elif [ ! -x "$bin" ]; then
  command -v cmake >/dev/null || { echo "$0: cmake not found: apt-get install cmake" >&2; exit 1; }
  mkdir -p "$dir"
  if ! echo "$sum  $dir/$tarball" | sha256sum -c --status 2>/dev/null; then
    curl -fsSL -o "$dir/$tarball.tmp" "http://deb.debian.org/debian/pool/main/h/highs/${tarball/+/%2B}"
    echo "$sum  $dir/$tarball.tmp" | sha256sum -c --status || { echo "$0: checksum mismatch for $tarball" >&2; exit 1; }
    mv "$dir/$tarball.tmp" "$dir/$tarball"
  fi
  [ -d "$src" ] || tar -xJf "$dir/$tarball" -C "$dir"
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" >/dev/null
  cmake --build "$build" --target highs -j"$(nproc)" >/dev/null
  # shellcheck disable=SC2086 # flags are words
  ${CXX:-g++} -O2 $flags -std=c++17 -I"$src/src" -I"$build" scripts/highs-reference.cpp \
    "$build/lib/libhighs.a" -lpthread -lz -o "$bin.tmp"
  mv "$bin.tmp" "$bin"
fi

[ -n "${NATIVE:-}" ] || out=$(for _ in $(seq "${REPS:-3}"); do PRESOLVE=${PRESOLVE:-off} "$bin" "$@"; done)
echo "$out"
[ -n "${ENGINE:-}" ] || exit 0
# Per file: the native side's iterations (every run must agree) and its median µs/iter; per
# BenchmarkLPFile/<file>/<engine> line: iters/op and run-µs/iter. A ratio only where the
# iteration counts are equal: otherwise the two solved different paths, and the ratio lies.
awk -v engine="$ENGINE" '
  FNR == NR {
    f = $1; sub(/:$/, "", f); n = split(f, parts, "/"); f = parts[n]
    for (i = 1; i <= NF; i++) { if ($(i+1) == "iterations,") it = $i; if ($(i+1) == "µs/iter") us = $i }
    if (f in iters && iters[f] != it) { printf "%s: native runs disagree (%s vs %s iterations)\n", f, iters[f], it > "/dev/stderr"; bad = 1 }
    iters[f] = it; cnt[f]++; v[f, cnt[f]] = us; next
  }
  /^BenchmarkLPFile\// {
    split($1, p, "/"); f = p[2]; e = p[3]; sub(/-[0-9]+$/, "", e); ei = ""; eu = ""
    for (i = 2; i <= NF; i++) { if ($(i+1) == "iters/op") ei = $i; if ($(i+1) == "run-µs/iter") eu = $i }
    if (!(f in iters)) next
    if (ei + 0 != iters[f] + 0) { printf "%s/%s: %s iterations against native %s: no ratio\n", f, e, ei, iters[f] > "/dev/stderr"; bad = 1; next }
    m = cnt[f]; for (i = 1; i <= m; i++) s[i] = v[f, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (s[j] + 0 < s[i] + 0) { t = s[i]; s[i] = s[j]; s[j] = t }
    med = s[int((m + 1) / 2)]
    printf "%s/%s: %d iterations, %.2fx native HiGHS per iteration\n", f, e, ei, eu / med
  }
  END { exit bad }
' <(echo "$out") "$ENGINE"
