// Package highs runs the HiGHS 1.15 solver, compiled to WebAssembly by
// emscripten (npm package highs@1.15.3), in-process with the pure-Go runtime
// wazero.
//
// The package has three layers:
//
//   - abi.go pins the build: the sha256 of the accepted highs.wasm and the
//     table mapping the minified import/export names of that build to the
//     emscripten/HiGHS C API names they stand for.
//   - host.go implements the ~20 emscripten/WASI host imports in Go (memory
//     growth, stdout capture, clocks, abort/exit turned into Go errors, a
//     tiny in-memory file system for Highs_readModel). The imports HiGHS
//     calls often also check the call's context, which is how a running
//     solve is canceled.
//   - Engine (compiled module, one per process) and Instance (one wasm
//     instance, used by one solve at a time) wrap the HiGHS C API.
//
// A C++ exception or abort inside HiGHS cannot be caught in this build (there
// are no invoke_* trampolines), so it terminates the instance: the call returns
// an error wrapping ErrAborted and the instance must be discarded.
package highs
