package highs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/tetratelabs/wazero"
)

// maxPooledMemory is the largest linear memory an idle instance may keep.
// Wasm memory never shrinks, so an instance that solved a big model is
// dropped rather than pinning its heap for the life of the process.
const maxPooledMemory = 256 << 20

// Engine is a compiled HiGHS module plus a pool of idle instances. It is safe
// for concurrent use; each Instance is used by one goroutine at a time.
type Engine struct {
	rt     wazero.Runtime
	cm     wazero.CompiledModule
	cache  wazero.CompilationCache
	source string // where the wasm came from, for diagnostics

	idle chan *Instance

	versionOnce sync.Once
	version     string
}

// NewEngine verifies wasm against the pinned hash and compiles it. cacheDir
// names a wazero compilation cache directory ("" for none); with a warm cache
// compilation takes ~0.1 s instead of ~3 s.
func NewEngine(ctx context.Context, wasm []byte, cacheDir, source string) (*Engine, error) {
	if err := VerifyWasm(wasm); err != nil {
		return nil, err
	}
	// Cancellation is not wazero's WithCloseOnContextDone: in the optimizing
	// compiler that plants a termination check calling out of compiled code
	// at every loop header, which made HiGHS 8-10x slower (measured on the
	// facility-location benchmark: 38 s vs 4.6 s). The host imports check the
	// context instead (see checkCanceled): HiGHS reads the clock many times a
	// second, also to enforce its own time limit.
	cfg := wazero.NewRuntimeConfig()
	var cache wazero.CompilationCache
	if cacheDir != "" {
		// A cache that cannot be created (read-only home, ...) only costs time.
		if c, err := wazero.NewCompilationCacheWithDir(cacheDir); err == nil {
			cache = c
			cfg = cfg.WithCompilationCache(c)
		}
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	fail := func(err error) (*Engine, error) {
		_ = rt.Close(ctx)
		if cache != nil {
			_ = cache.Close(ctx)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, source, err)
	}
	if err := instantiateHost(ctx, rt); err != nil {
		return fail(err)
	}
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return fail(err)
	}
	for _, name := range requiredExports {
		if _, ok := cm.ExportedFunctions()[name]; !ok {
			return fail(fmt.Errorf("export %q missing", name))
		}
	}
	return &Engine{
		rt: rt, cm: cm, cache: cache, source: source,
		idle: make(chan *Instance, runtime.GOMAXPROCS(0)),
	}, nil
}

// Close releases the engine, its idle instances and the compiled code.
func (e *Engine) Close(ctx context.Context) error {
	for {
		select {
		case in := <-e.idle:
			in.close(ctx)
		default:
			err := e.rt.Close(ctx)
			if e.cache != nil {
				_ = e.cache.Close(ctx)
			}
			return err
		}
	}
}

// Source says where the engine's wasm was loaded from.
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

// Version returns the HiGHS version string compiled into the wasm, e.g.
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
	defaultMu     sync.Mutex
	defaultEngine *Engine
)

// Default returns the process-wide engine, compiling the wasm on first use
// with the on-disk cache under os.UserCacheDir()/plan/wazero. Success is
// cached for the life of the process; failure is not, so that a later call
// can pick up a wasm fetched in the meantime.
func Default() (*Engine, error) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultEngine != nil {
		return defaultEngine, nil
	}
	wasm, source, err := LoadWasm()
	if err != nil {
		return nil, err
	}
	e, err := NewEngine(context.Background(), wasm, DefaultCacheDir(), source)
	if err != nil {
		return nil, err
	}
	defaultEngine = e
	return e, nil
}

// DefaultCacheDir is the compilation cache directory of Default, or "" if the
// user has no cache directory.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "plan", "wazero")
}
