#!/usr/bin/env bash
# Fetches third-party runtime assets with `npm pack` and verifies their checksums.
# Nothing fetched here is committed: everything lands in third_party/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party
mkdir -p "$dest"

fetch() { # name version tarball-sha256 file-in-package file-sha256 out
  local name=$1 ver=$2 tsum=$3 inner=$4 fsum=$5 out=$6
  if [ -f "$out" ] && echo "$fsum  $out" | sha256sum -c --status; then
    return 0
  fi
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  (cd "$tmp" && npm pack --silent "$name@$ver" >/dev/null)
  local tgz
  tgz=$(ls "$tmp"/*.tgz)
  echo "$tsum  $tgz" | sha256sum -c --status || { echo "checksum mismatch for $name@$ver tarball" >&2; exit 1; }
  tar -xzf "$tgz" -C "$tmp" "package/$inner"
  echo "$fsum  $tmp/package/$inner" | sha256sum -c --status || { echo "checksum mismatch for $name@$ver $inner" >&2; exit 1; }
  mkdir -p "$(dirname "$out")"
  cp "$tmp/package/$inner" "$out.tmp" && mv "$out.tmp" "$out"
  echo "fetched $name@$ver $inner -> $out"
}

# HiGHS 1.15 compiled to WebAssembly (solver backend, run in-process with wazero).
fetch highs 1.15.3 \
  218533577886c69023739024bb92cfc2831ba45ff1fd1fd981753c04cded9793 \
  build/highs.wasm \
  528be4365bea1d4188988646b244263f50320df55782e14d6af5bce7cd45c840 \
  "$dest/highs/highs.wasm"

# ONNX Runtime 1.24.1, Linux x64 CPU build (profiler/measure, the `onnx` backend). The version
# must match the C API headers of github.com/yalue/onnxruntime_go v1.27.0 (ORT_API_VERSION 24).
# Only linux/x64 is fetched; elsewhere point PLAN_ORT_LIB at a local libonnxruntime.
if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ]; then
  fetch onnxruntime-node 1.24.1 \
    57181cf6e6e711b155c5b942d591fd63ded0b5de5c4922d51fd994e7f6ac2772 \
    bin/napi-v6/linux/x64/libonnxruntime.so.1 \
    53ef1ac028dd1b05554b8da28d9159eb3876f99868193d2aaa6e67f0243c23d4 \
    "$dest/onnxruntime/libonnxruntime.so"
fi
