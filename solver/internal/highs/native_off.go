//go:build !highs_native

package highs

import "fmt"

// NativeBuilt reports whether this binary contains the native engine.
const NativeBuilt = false

func newNativeEngine() (*Engine, error) {
	return nil, fmt.Errorf("%w: the native engine is not built into this binary: run `make native` (needs wasm2c, Debian package wabt) and build with -tags highs_native, or set %s=%s",
		ErrUnavailable, EnvEngine, KindWazero)
}

// NewNativeEngine returns a new native engine with its own instance pool
// (benchmarks use it to measure a cold start); see ForKind.
func NewNativeEngine() (*Engine, error) { return newNativeEngine() }

// NativeGuardPages reports whether the native engine checks memory accesses
// with guard pages; there is no native engine in this binary.
func NativeGuardPages() bool { return false }

func nativeUsable() bool { return false }
