package highs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// maxPooledMemory is the largest linear memory an idle instance may keep.
// Wasm memory never shrinks, so an instance that solved a big model is
// dropped rather than pinning its heap for the life of the process.
const maxPooledMemory = 256 << 20

// Engine kinds. Both run the same pinned HiGHS build, so they give the same
// results; they differ in speed and in what the binary needs.
const (
	// KindNative runs C translated from highs.wasm by wasm2c at build time
	// and compiled with cgo (build tag highs_native, `make native`).
	KindNative = "native"
	// KindWazero runs highs.wasm with the pure-Go runtime wazero.
	KindWazero = "wazero"
)

// EnvEngine names the environment variable that picks the engine: "native",
// "wazero", or unset/"auto" for native where it was built, else wazero.
const EnvEngine = "PLAN_SOLVER_ENGINE"

// backend creates instances of one engine kind.
type backend interface {
	// instantiate creates an instance whose host imports use st.
	instantiate(ctx context.Context, st *hostState) (machine, error)
	close(ctx context.Context) error
}

// machine is one instance of the module as a backend runs it: exports called
// by their minified names with wasm-typed arguments (f64 as raw bits), plus
// its linear memory.
type machine interface {
	call(ctx context.Context, name string, args []uint64) ([]uint64, error)
	memory() memory
	close(ctx context.Context)
}

// memory is the view of linear memory this package needs; wazero's
// api.Memory has exactly these methods. Slices returned by Read alias the
// memory and are valid until it grows.
type memory interface {
	Size() uint32
	Read(offset, byteCount uint32) ([]byte, bool)
	Write(offset uint32, v []byte) bool
	ReadUint64Le(offset uint32) (uint64, bool)
	WriteUint64Le(offset uint32, v uint64) bool
}

// Engine is a HiGHS backend (compiled module) plus a pool of idle instances.
// It is safe for concurrent use; each Instance is used by one goroutine at a
// time.
type Engine struct {
	kind   string
	b      backend
	source string // where the code came from, for diagnostics

	idle chan *Instance

	versionOnce sync.Once
	version     string
}

func newEngine(kind string, b backend, source string) *Engine {
	return &Engine{kind: kind, b: b, source: source, idle: make(chan *Instance, runtime.GOMAXPROCS(0))}
}

// Close releases the engine, its idle instances and the compiled code.
func (e *Engine) Close(ctx context.Context) error {
	for {
		select {
		case in := <-e.idle:
			in.close(ctx)
		default:
			return e.b.close(ctx)
		}
	}
}

// Kind is KindNative or KindWazero.
func (e *Engine) Kind() string { return e.kind }

// Source says where the engine's code was loaded from.
func (e *Engine) Source() string { return e.source }

// Acquire returns an idle instance or instantiates a new one (~3 ms). The
// caller owns it until Release.
func (e *Engine) Acquire(ctx context.Context) (*Instance, error) {
	select {
	case in := <-e.idle:
		return in, nil
	default:
		return e.newInstance(ctx)
	}
}

// Release hands an instance back. Broken (aborted, canceled) instances and
// instances with a large heap are closed; the rest are kept for reuse.
func (e *Engine) Release(ctx context.Context, in *Instance) {
	if in == nil {
		return
	}
	if in.broken || in.mem.Size() > maxPooledMemory {
		in.close(ctx)
		return
	}
	if err := in.Reset(ctx); err != nil {
		in.close(ctx)
		return
	}
	select {
	case e.idle <- in:
	default:
		in.close(ctx)
	}
}

// Version returns the HiGHS version string compiled into the module, e.g.
// "1.15.0", or "" if no instance could be created.
func (e *Engine) Version(ctx context.Context) string {
	e.versionOnce.Do(func() {
		in, err := e.Acquire(ctx)
		if err != nil {
			return
		}
		e.version, _ = in.Version(ctx)
		e.Release(ctx, in)
	})
	return e.version
}

var (
	defaultMu sync.Mutex
	engines   = map[string]*Engine{}
)

// Default returns the process-wide engine that $PLAN_SOLVER_ENGINE selects:
// the native one where this binary was built with it (NativeBuilt), else
// wazero. An explicit "native" in a binary without it is an error wrapping
// ErrUnavailable rather than a silent fallback.
func Default() (*Engine, error) {
	kind, err := DefaultKind()
	if err != nil {
		return nil, err
	}
	return ForKind(kind)
}

// DefaultKind is the engine kind Default returns.
func DefaultKind() (string, error) {
	switch v := os.Getenv(EnvEngine); v {
	case "", "auto":
		// A guard-page native build needs 8 GiB of address space per
		// instance; under a smaller ulimit -v, auto picks wazero instead.
		if NativeBuilt && nativeUsable() {
			return KindNative, nil
		}
		return KindWazero, nil
	case KindNative, KindWazero:
		return v, nil
	default:
		return "", fmt.Errorf("%w: %s=%q: want %q, %q or unset", ErrUnavailable, EnvEngine, v, KindNative, KindWazero)
	}
}

// ForKind returns the process-wide engine of a kind, creating it on first
// use: for wazero it compiles the wasm with the on-disk cache under
// os.UserCacheDir()/plan/wazero. Success is cached for the life of the
// process; failure is not, so that a later call can pick up a wasm fetched
// in the meantime.
func ForKind(kind string) (*Engine, error) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if e := engines[kind]; e != nil {
		return e, nil
	}
	var e *Engine
	var err error
	switch kind {
	case KindNative:
		e, err = newNativeEngine()
	case KindWazero:
		var wasm []byte
		var source string
		if wasm, source, err = LoadWasm(); err == nil {
			e, err = NewEngine(context.Background(), wasm, DefaultCacheDir(), source)
		}
	default:
		err = fmt.Errorf("%w: unknown engine kind %q", ErrUnavailable, kind)
	}
	if err != nil {
		return nil, err
	}
	engines[kind] = e
	return e, nil
}

// DefaultCacheDir is the wazero compilation cache directory of Default, or
// "" if the user has no cache directory.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "plan", "wazero")
}
