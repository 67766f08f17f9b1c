package highs

import "errors"

// Sentinel errors; package solver re-exports them under its own names.
var (
	// ErrUnavailable: the wasm could not be found, read, verified or compiled.
	ErrUnavailable = errors.New("HiGHS backend unavailable: highs.wasm not found or unusable (run `make assets` or set PLAN_HIGHS_WASM to the path of highs.wasm from " + Package + ")")
	// ErrAborted: HiGHS aborted (C++ exception, abort, exit, wasm trap or
	// out of memory). The instance it happened in is discarded.
	ErrAborted = errors.New("HiGHS aborted")
	// ErrCanceled: the context was canceled or its deadline passed mid-call.
	ErrCanceled = errors.New("solve canceled")
)
