#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time (default 5s each).
#
#   scripts/fuzz-all.sh build DIR         build each fuzzed package's instrumented test binary
#                                         into DIR (`go test -c -fuzz=.`), nothing run
#   scripts/fuzz-all.sh run DIR [TIME]    build any binary DIR lacks, then run every target
#                                         for TIME from DIR's binaries
#   scripts/fuzz-all.sh [TIME]            both, in a temporary directory
#
# With FUZZ_AFTER=FILE, run waits (up to an hour) for FILE to exist before it fuzzes. `make
# test` starts build and run as one job at idle priority (scripts/ci-background.sh) right
# after the assets: the build uses the CPU time the phases in front leave, and the fuzzing
# starts when the agreement phase does, whose wall-clock runs leave most of both cores idle.
#
# Building: fuzzing instruments every package a test binary links, the same way whichever
# package is fuzzed, so the package that links the most (the command package) is built first,
# alone, with go's own parallelism; the rest, two at a time, then find its instrumented
# dependencies in the build cache instead of compiling them twice side by side (two go
# commands do not share work in progress). One binary per package, one link per package.
#
# Running: packages run two at a time, each target with one fuzzing worker (-parallel 1), each
# in the package's directory as `go test -fuzz` runs it (its corpus under testdata/fuzz, a
# failing input written there, the generated corpus in Go's cache).
#
# Go's fuzzing coordinator sometimes fails a run with a bare "context deadline exceeded" when
# a worker is still busy at the deadline (no crasher is found or written). Such a run is retried
# (up to twice); any run that found a failing input fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${FUZZ_JOBS:-2}
case "${1:-}" in
build) mode=build bindir=${2:?usage: scripts/fuzz-all.sh build DIR} fuzztime=0s ;;
run) mode=run bindir=${2:?usage: scripts/fuzz-all.sh run DIR [TIME]} fuzztime=${3:-5s} ;;
*) mode=both bindir="" fuzztime=${1:-5s} ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -z "$bindir" ]; then
  bindir=$dir/bin
fi
mkdir -p "$bindir"
bindir=$(cd "$bindir" && pwd)

# bin_of PKG: the instrumented test binary of one package ("./a/b" -> DIR/a_b.test).
bin_of() {
  local p=${1#./}
  echo "$bindir/${p//\//_}.test"
}

# build_pkg PKG: its instrumented test binary, unless already built; exit 1 on a build error.
build_pkg() {
  local pkg=$1 bin log
  bin=$(bin_of "$pkg")
  [ -x "$bin" ] && return 0
  log=$(mktemp)
  # -ldflags=-w: no DWARF (no debugger runs it; go test without -c leaves it out itself),
  # which halves the link (the command package's test binary 8.9 -> 5.0 CPU-s).
  if ! go test -c -fuzz=. -ldflags=-w -o "$bin.tmp" "$pkg" >"$log" 2>&1; then
    echo "== fuzz $pkg: build failed"
    cat "$log"
    rm -f "$log" "$bin.tmp"
    return 1
  fi
  mv "$bin.tmp" "$bin"
  rm -f "$log"
}

# fuzz_pkg PKG NAME...: every target of one package, in turn; exit 1 on a failure.
fuzz_pkg() {
  local pkg=$1 status=0 log bin cache
  shift
  build_pkg "$pkg" || return 1
  bin=$(bin_of "$pkg")
  log=$(mktemp)
  cache="$(go env GOCACHE)/fuzz/$(go list "$pkg")"
  for name in "$@"; do
    for attempt in 1 2 3; do
      echo "== fuzz $pkg $name ($fuzztime)"
      if (cd "$pkg" && "$bin" -test.run '^$' -test.fuzz "^${name}\$" -test.fuzztime "$fuzztime" \
        -test.fuzzminimizetime 3s -test.parallel 1 -test.fuzzcachedir "$cache") >"$log" 2>&1; then
        cat "$log"
        break
      fi
      cat "$log"
      if [ "$attempt" -lt 3 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
        echo "== fuzz $pkg $name: coordinator deadline flake, retrying"
        continue
      fi
      status=1
      break
    done
  done
  rm -f "$log"
  return "$status"
}
export -f bin_of build_pkg fuzz_pkg
export fuzztime bindir

# One line per package: "PKG NAME NAME ...".
grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | sort |
  awk -F: '{ pkg = $1; sub(/\/[^\/]*$/, "", pkg); name = $3; sub(/^func /, "", name); sub(/\(.*/, "", name); t[pkg] = t[pkg] " " name }
           END { for (p in t) print p t[p] }' | sort >"$dir/targets"
[ -s "$dir/targets" ] || { echo "fuzz-all: no fuzz targets found" >&2; exit 1; }

# FUZZ_MAX_DEPS=N: only the packages whose test binary links at most N packages (go list -deps
# -test). Fuzzing instruments every package a binary links, so each large binary costs an
# instrumented build of most of the module and its dependencies (the NATS server, gRPC) on
# top of the plain and -race builds: on a 2-core machine the 25 packages' instrumented builds
# took 551 CPU-s, more than the -race build. `make test` fuzzes the small ones (the format
# decoders, the engine, the profilers' parsers, the exports' readers); test-full, all.
if [ -n "${FUZZ_MAX_DEPS:-}" ]; then
  : >"$dir/kept"
  while read -r line; do
    n=$(go list -deps -test "${line%% *}" | sort -u | wc -l)
    if [ "$n" -le "$FUZZ_MAX_DEPS" ]; then
      echo "$line" >>"$dir/kept"
    else
      echo "fuzz-all: ${line%% *} links $n packages (> FUZZ_MAX_DEPS=$FUZZ_MAX_DEPS): fuzzed by make test-full, its seeds by the unit tests"
    fi
  done <"$dir/targets"
  mv "$dir/kept" "$dir/targets"
  [ -s "$dir/targets" ] || { echo "fuzz-all: no package within FUZZ_MAX_DEPS=$FUZZ_MAX_DEPS" >&2; exit 1; }
fi

# Every binary first (those already in DIR are kept): the package with the most dependencies
# (go list's Deps, test imports aside) alone, then the rest.
start=$(date +%s)
# shellcheck disable=SC2046
first=$(go list -f '{{len .Deps}} {{.Dir}}' $(cut -d' ' -f1 "$dir/targets") | sort -rn | head -1 | cut -d' ' -f2)
build_pkg "./${first#"$PWD"/}"
cut -d' ' -f1 "$dir/targets" | xargs -P "$jobs" -I{} bash -c 'build_pkg "$1"' _ {}
echo "fuzz-all: built $(wc -l <"$dir/targets") instrumented test binaries in $(($(date +%s) - start)) s"
[ "$mode" = build ] && exit 0

if [ -n "${FUZZ_AFTER:-}" ]; then
  waited=0
  while [ ! -e "$FUZZ_AFTER" ]; do
    if [ "$waited" -ge 3600 ]; then
      echo "fuzz-all: $FUZZ_AFTER did not appear within an hour" >&2
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  echo "fuzz-all: fuzzing from $(date +%T), after $FUZZ_AFTER appeared"
fi
start=$(date +%s)
i=0
while read -r line; do
  echo "$line" >"$dir/job.$i"
  i=$((i + 1))
done <"$dir/targets"
# Each job writes its output to its own file; xargs fails (123) when any job failed.
status=0
ls "$dir"/job.* | xargs -P "$jobs" -I{} bash -c 'read -r -a a <"$1"; fuzz_pkg "${a[@]}" >"$1.out" 2>&1' _ {} || status=1
for f in "$dir"/job.*.out; do
  cat "$f"
done
echo "fuzz-all: $(wc -l <"$dir/targets") packages fuzzed for $fuzztime a target in $(($(date +%s) - start)) s"
exit $status
