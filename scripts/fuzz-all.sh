#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time (default 5s each).
#
# Packages run two at a time, each with one fuzzing worker (-parallel 1): the fuzzing itself
# keeps both cores busy either way, but each target's instrumented build, link and start-up
# (single-threaded, and most of a short run's time) then overlaps another package's fuzzing.
# A package's test binary is built once, instrumented for fuzzing (`go test -c -fuzz=.`), and
# each of its targets runs from it in turn, in the package's directory as `go test -fuzz` runs
# it (its corpus under testdata/fuzz, a failing input written there, the generated corpus in
# Go's cache): one link per package instead of one per target. Each package's output is
# printed whole when it ends.
#
# Go's fuzzing coordinator sometimes fails a run with a bare "context deadline exceeded" when
# a worker is still busy at the deadline (no crasher is found or written). Such a run is retried
# (up to twice); any run that found a failing input fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-5s}
jobs=${FUZZ_JOBS:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# fuzz_pkg PKG NAME...: every target of one package, in turn; exit 1 on a failure.
fuzz_pkg() {
  local pkg=$1 status=0 log bin cache
  shift
  log=$(mktemp)
  bin=$(mktemp -u).test
  cache="$(go env GOCACHE)/fuzz/$(go list "$pkg")"
  echo "== fuzz $pkg: build"
  if ! go test -c -fuzz=. -o "$bin" "$pkg" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    return 1
  fi
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
  rm -f "$log" "$bin"
  return "$status"
}
export -f fuzz_pkg
export fuzztime

# One line per package: "PKG NAME NAME ...".
grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | sort |
  awk -F: '{ pkg = $1; sub(/\/[^\/]*$/, "", pkg); name = $3; sub(/^func /, "", name); sub(/\(.*/, "", name); t[pkg] = t[pkg] " " name }
           END { for (p in t) print p t[p] }' | sort >"$dir/targets"
[ -s "$dir/targets" ] || { echo "fuzz-all: no fuzz targets found" >&2; exit 1; }
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
exit $status
