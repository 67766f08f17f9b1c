package highs

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// wazeroBackend runs highs.wasm with wazero's optimizing compiler.
type wazeroBackend struct {
	rt    wazero.Runtime
	cm    wazero.CompiledModule
	cache wazero.CompilationCache
}

// NewEngine verifies wasm against the pinned hash and compiles it into a
// wazero engine. cacheDir names a wazero compilation cache directory ("" for
// none); with a warm cache compilation takes ~0.1 s instead of ~3 s.
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
	return newEngine(KindWazero, &wazeroBackend{rt: rt, cm: cm, cache: cache}, source), nil
}

func (b *wazeroBackend) close(ctx context.Context) error {
	err := b.rt.Close(ctx)
	if b.cache != nil {
		_ = b.cache.Close(ctx)
	}
	return err
}

func (b *wazeroBackend) instantiate(ctx context.Context, st *hostState) (machine, error) {
	m := &wazeroMachine{st: st, fn: make(map[string]api.Function, len(requiredExports))}
	// WithName("") keeps instances anonymous so any number can coexist;
	// emscripten has no _start: the constructors are run explicitly.
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions()
	mod, err := b.rt.InstantiateModule(m.bind(ctx), b.cm, cfg)
	if err != nil {
		return nil, err
	}
	m.mod = mod
	m.mem = mod.ExportedMemory(expMemory)
	if m.mem == nil {
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("%w: memory export %q missing", ErrUnavailable, expMemory)
	}
	for _, name := range requiredExports {
		m.fn[name] = mod.ExportedFunction(name)
	}
	return m, nil
}

// wazeroMachine is one wazero module instance.
type wazeroMachine struct {
	mod api.Module
	mem api.Memory
	fn  map[string]api.Function
	st  *hostState
}

// bind attaches the instance's host state to ctx for the host imports,
// which wazero shares between all instances of the runtime.
func (m *wazeroMachine) bind(ctx context.Context) context.Context {
	return context.WithValue(ctx, hostStateKey{}, m.st)
}

func (m *wazeroMachine) call(ctx context.Context, name string, args []uint64) ([]uint64, error) {
	return m.fn[name].Call(m.bind(ctx), args...)
}

func (m *wazeroMachine) memory() memory { return m.mem }

func (m *wazeroMachine) close(ctx context.Context) { _ = m.mod.Close(ctx) }
