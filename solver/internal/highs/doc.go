// Package highs runs the HiGHS 1.15 solver, compiled to WebAssembly by
// emscripten (npm package highs@1.15.3), in-process with one of two engines:
//
//   - KindNative: the wasm translated to C by wasm2c (Debian package wabt)
//     at build time, compiled once by `make native` into
//     third_party/highs/native/libhighs_w2c.a and linked with cgo under the
//     build tag highs_native (native.go, native_glue.c). The C is derived
//     from a third-party binary, so it is generated (w2cgen), never
//     committed.
//   - KindWazero: the wasm run by the pure-Go runtime wazero (wazero.go),
//     the fallback that needs no C toolchain.
//
// Default picks native where it was built, else wazero; $PLAN_SOLVER_ENGINE
// overrides. The layers:
//
//   - abi.go pins the build: the sha256 of the accepted highs.wasm and the
//     table mapping the minified import/export names of that build to the
//     emscripten/HiGHS C API names they stand for. The native library
//     records the sha256 of the wasm it came from and is refused if that
//     differs.
//   - The ~20 emscripten/WASI host imports (memory growth, stdout capture,
//     clocks, abort/exit turned into Go errors, a tiny in-memory file system
//     for Highs_readModel) are implemented twice with the same behaviour:
//     in Go for wazero (host.go) and in C for the native engine
//     (native_glue.c, calling back into Go for the log and the files). The
//     imports HiGHS calls often also check for cancellation, which is how a
//     running solve is canceled.
//   - Engine (a backend plus a pool of idle instances) and Instance (one
//     module instance, used by one solve at a time) wrap the HiGHS C API
//     over either backend.
//
// A C++ exception or abort inside HiGHS cannot be caught in this build (there
// are no invoke_* trampolines), so it terminates the instance: the call returns
// an error wrapping ErrAborted and the instance must be discarded. In the
// native engine wasm traps (out-of-bounds access, which is bounds-checked
// rather than caught with signals that belong to the Go runtime, and a
// per-thread stack guard against runaway recursion) end the call the same
// way. (`make native NATIVE_MEMCHECK=guard` trades the bounds checks for
// guard pages: faster, but an out-of-bounds access then kills the process.)
package highs
