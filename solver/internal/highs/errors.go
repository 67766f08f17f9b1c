package highs

import "errors"

// wasmHint tells how to get the wasm; errors about a missing or unusable
// highs.wasm end with it.
const wasmHint = "run `make assets` or set " + EnvWasm + " to the path of highs.wasm from " + Package

// Sentinel errors; package solver re-exports them under its own names.
var (
	// ErrUnavailable: the wasm could not be found, read, verified or
	// compiled, or the engine asked for ($PLAN_SOLVER_ENGINE) is not built in.
	// The errors wrapping it say how to fix that.
	ErrUnavailable = errors.New("HiGHS backend unavailable")
	// ErrAborted: HiGHS aborted (C++ exception, abort, exit, wasm trap or
	// out of memory). The instance it happened in is discarded.
	ErrAborted = errors.New("HiGHS aborted")
	// ErrCanceled: the context was canceled or its deadline passed mid-call.
	ErrCanceled = errors.New("solve canceled")
)
