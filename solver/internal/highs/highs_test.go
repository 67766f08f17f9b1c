package highs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// engineOf returns the engine of a kind, skipping (or failing under
// PLAN_REQUIRE_ALL=1) when it is absent: highs.wasm not fetched, or the
// native engine not built.
func engineOf(t *testing.T, kind string) *Engine {
	t.Helper()
	e, err := ForKind(kind)
	if err != nil {
		if os.Getenv("PLAN_REQUIRE_ALL") == "1" || !errors.Is(err, ErrUnavailable) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return e
}

// engine returns the wazero engine.
func engine(t *testing.T) *Engine { return engineOf(t, KindWazero) }

// eachEngine runs f as one subtest per engine kind.
func eachEngine(t *testing.T, f func(t *testing.T, e *Engine)) {
	for _, kind := range []string{KindWazero, KindNative} {
		t.Run(kind, func(t *testing.T) { f(t, engineOf(t, kind)) })
	}
}

func TestDefaultKind(t *testing.T) {
	t.Setenv(EnvEngine, "")
	want := KindWazero
	if NativeBuilt {
		want = KindNative
	}
	if k, err := DefaultKind(); k != want || err != nil {
		t.Errorf("DefaultKind() = %q, %v; want %q", k, err, want)
	}
	t.Setenv(EnvEngine, KindWazero)
	if k, err := DefaultKind(); k != KindWazero || err != nil {
		t.Errorf("%s=wazero: DefaultKind() = %q, %v", EnvEngine, k, err)
	}
	t.Setenv(EnvEngine, "fast")
	if _, err := DefaultKind(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), EnvEngine) {
		t.Errorf("%s=fast: %v", EnvEngine, err)
	}
	t.Setenv(EnvEngine, KindNative)
	_, err := Default()
	if NativeBuilt {
		if err != nil && os.Getenv("PLAN_REQUIRE_ALL") == "1" {
			t.Errorf("%s=native: %v", EnvEngine, err)
		}
	} else if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "make native") {
		t.Errorf("%s=native without the native engine: %v, want an error saying how to build it", EnvEngine, err)
	}
}

func TestLoadWasmErrors(t *testing.T) {
	t.Setenv(EnvWasm, filepath.Join(t.TempDir(), "missing.wasm"))
	_, _, err := LoadWasm()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), EnvWasm) ||
		!strings.Contains(err.Error(), "make assets") {
		t.Errorf("missing file: %v", err)
	}

	bad := filepath.Join(t.TempDir(), "highs.wasm")
	if err := os.WriteFile(bad, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvWasm, bad)
	_, _, err = LoadWasm()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("wrong hash: %v", err)
	}
	if _, err := NewEngine(context.Background(), []byte("nope"), "", "test"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("NewEngine(garbage) = %v", err)
	}
}

func TestLoadWasmFromEnv(t *testing.T) {
	e := engine(t)
	if !strings.HasSuffix(e.Source(), "highs.wasm") {
		if !strings.Contains(e.Source(), "embedded") {
			t.Errorf("source %q", e.Source())
		}
		return
	}
	t.Setenv(EnvWasm, e.Source())
	if _, src, err := LoadWasm(); err != nil || src != e.Source() {
		t.Errorf("LoadWasm via %s = %q, %v", EnvWasm, src, err)
	}
}

func TestVersion(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		if v := e.Version(context.Background()); !strings.HasPrefix(v, "1.15.") {
			t.Errorf("Version() = %q", v)
		}
	})
}

// TestAbortDiscardsInstance makes HiGHS throw a C++ exception (its LP reader
// throws std::invalid_argument on a double inequality) and checks that the
// error is reported, the instance is retired and the engine keeps working.
func TestAbortDiscardsInstance(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		ctx := context.Background()
		in, err := e.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Create(ctx); err != nil {
			t.Fatal(err)
		}
		err = in.ReadModel(ctx, "bad.lp", []byte("Minimize\n obj: x\nSubject To\n r: 1 <= x <= 2\nEnd\n"))
		if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "invalid_argument") ||
			!strings.Contains(err.Error(), "Highs_readModel") {
			t.Fatalf("ReadModel error = %v, want an abort naming std::invalid_argument", err)
		}
		if _, err := in.Version(ctx); !errors.Is(err, ErrAborted) {
			t.Errorf("call on a broken instance = %v, want ErrAborted", err)
		}
		e.Release(ctx, in)
		in2, err := e.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Release(ctx, in2)
		if in2 == in {
			t.Fatal("broken instance was handed out again")
		}
		if v, err := in2.Version(ctx); err != nil || v == "" {
			t.Fatalf("fresh instance: %q, %v", v, err)
		}
	})
}

// nilSink keeps TestOutOfBoundsAccessTraps's nil dereference from being optimised away.
var nilSink int

// TestOutOfBoundsAccessTraps has HiGHS write past the end of its linear memory
// (Highs_getIntInfo after a run, with a result pointer 16 bytes below 4 GiB). Every engine
// must report the trap as ErrAborted, retire the instance and keep serving: on
// a guard-page native build the access is a hardware fault that the glue's
// SIGSEGV handler turns into the trap. After it, the Go runtime must still
// own every other fault: a nil dereference in Go is a recoverable panic.
func TestOutOfBoundsAccessTraps(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		t.Log(e.Source())
		ctx := context.Background()
		for round := 0; round < 2; round++ { // the second fault: the mask was restored
			in, err := e.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := in.Create(ctx); err != nil {
				t.Fatal(err)
			}
			// Info is written only once valid, after a run.
			if err := in.ReadModel(ctx, "one.lp", []byte("Minimize\n obj: x\nSubject To\n c: x >= 1\nEnd\n")); err != nil {
				t.Fatal(err)
			}
			if _, err := in.Run(ctx); err != nil {
				t.Fatal(err)
			}
			p, err := in.putName("simplex_iteration_count")
			if err != nil {
				t.Fatal(err)
			}
			_, err = in.call(ctx, expGetIntInfo, in.h, uint64(p), 0xFFFFFFF0)
			msg := strings.ToLower(err.Error())
			if !errors.Is(err, ErrAborted) || !strings.Contains(msg, "out of bounds") && !strings.Contains(msg, "out-of-bounds") {
				t.Fatalf("round %d: write past the memory = %v, want ErrAborted naming an out-of-bounds access", round, err)
			}
			e.Release(ctx, in)
		}
		in, err := e.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Release(ctx, in)
		if v, err := in.Version(ctx); err != nil || v == "" {
			t.Fatalf("fresh instance after the traps: %q, %v", v, err)
		}
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			var ptr *int
			nilSink = *ptr
			return false
		}()
		if !panicked {
			t.Fatal("a nil dereference did not panic")
		}
	})
}

func TestInstanceReuse(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		ctx := context.Background()
		in, err := e.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Create(ctx); err != nil {
			t.Fatal(err)
		}
		e.Release(ctx, in)
		in2, err := e.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Release(ctx, in2)
		if in2 != in || in2.h != 0 {
			t.Errorf("healthy instance not reused with its Highs object destroyed (same=%v h=%d)", in2 == in, in2.h)
		}
	})
}

// TestReadModelSandboxed checks that HiGHS cannot reach host files: only
// memFS entries exist (its LP reader reports a missing file by throwing).
func TestReadModelSandboxed(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		ctx := context.Background()
		host := filepath.Join(t.TempDir(), "host.lp")
		if err := os.WriteFile(host, []byte("Minimize\n obj: x\nEnd\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := e.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Release(ctx, in)
		if err := in.Create(ctx); err != nil {
			t.Fatal(err)
		}
		p, _ := in.putName(host)
		r, err := in.call(ctx, expReadModel, in.h, uint64(p))
		if err == nil && int32(r[0]) != StatusError {
			t.Errorf("HiGHS read host file %s", host)
		}
	})
}

func TestTailBuffer(t *testing.T) {
	var tb tailBuffer
	for i := 0; i < 2000; i++ {
		tb.Write([]byte("line " + strings.Repeat("x", i%7) + "\n"))
	}
	if len(tb.buf) > tailCap {
		t.Errorf("tail holds %d bytes", len(tb.buf))
	}
	if got := strings.Count(tb.Lines(3), "\n"); got != 2 {
		t.Errorf("Lines(3) has %d newlines", got)
	}
	tb.Write([]byte(strings.Repeat("y", 3*tailCap)))
	if len(tb.buf) != tailCap || tb.buf[0] != 'y' {
		t.Errorf("oversized write: len %d", len(tb.buf))
	}
}
