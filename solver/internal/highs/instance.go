package highs

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// scratchSize is a per-instance buffer for option/info names and the scalar
// results of info queries, so that those calls need no malloc.
const (
	scratchSize   = 512
	scratchOutOff = scratchSize - 16 // 8-byte aligned slot for an output value
)

// Instance is one instantiated HiGHS module holding at most one Highs object.
// It is not safe for concurrent use. After any call fails the instance is
// broken: every later call fails and Engine.Release discards it.
type Instance struct {
	m       machine
	mem     memory
	state   hostState
	scratch uint32
	h       uint64 // Highs object pointer; 0 if none
	broken  bool
}

func (e *Engine) newInstance(ctx context.Context) (*Instance, error) {
	in := &Instance{}
	m, err := e.b.instantiate(ctx, &in.state)
	if err != nil {
		return nil, in.classify(ctx, "instantiate", err)
	}
	in.m, in.mem = m, m.memory()
	if _, err := in.call(ctx, expWasmCallCtors); err != nil {
		in.close(ctx)
		return nil, err
	}
	// The Go side writes HighsInt arrays as int32; a 64-bit HighsInt build
	// would silently misread them.
	if r, err := in.call(ctx, expGetSizeofHighsInt, 0); err != nil || r[0] != 4 {
		in.close(ctx)
		if err == nil {
			err = fmt.Errorf("%w: sizeof(HighsInt) = %d, want 4", ErrUnavailable, r[0])
		}
		return nil, err
	}
	if in.scratch, err = in.malloc(ctx, scratchSize); err != nil {
		in.close(ctx)
		return nil, err
	}
	return in, nil
}

func (in *Instance) close(ctx context.Context) {
	in.broken = true
	if in.m != nil {
		in.m.close(ctx)
		in.m = nil
	}
}

// SetLog directs what HiGHS prints (its log) to w; nil discards it. The last
// few KiB are kept regardless, for error messages.
func (in *Instance) SetLog(w io.Writer) { in.state.log = w }

// call invokes an export and converts failures into the package's errors.
func (in *Instance) call(ctx context.Context, name string, args ...uint64) ([]uint64, error) {
	if in.broken {
		return nil, fmt.Errorf("%w: instance unusable after an earlier failure", ErrAborted)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCanceled, err)
	}
	res, err := in.m.call(ctx, name, args)
	if p := in.state.userPanic; p != nil {
		in.broken = true
		panic(p)
	}
	if err != nil {
		in.broken = true
		return nil, in.classify(ctx, name, err)
	}
	return res, nil
}

// classify maps a failed wasm call to ErrCanceled (context done, see
// checkCanceled) or ErrAborted (abort, C++ throw, exit or trap), adding
// the tail of the HiGHS log.
func (in *Instance) classify(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%w: %w", ErrCanceled, ctxErr)
	}
	var ae *abortError
	msg := err.Error()
	if errors.As(err, &ae) {
		msg = ae.reason
	}
	if t := in.state.tail.Lines(5); t != "" {
		msg += "; HiGHS log tail:\n" + t
	}
	return fmt.Errorf("%w in %s: %s", ErrAborted, exportName(what), msg)
}

// exportName maps a minified export to its C name for error messages.
func exportName(minified string) string {
	if name, ok := exportNames[minified]; ok {
		return name
	}
	return "export " + minified
}

func (in *Instance) malloc(ctx context.Context, n int) (uint32, error) {
	r, err := in.call(ctx, expMalloc, uint64(max(n, 8)))
	if err != nil {
		return 0, err
	}
	if r[0] == 0 {
		in.broken = true // HiGHS would abort on its next allocation anyway
		return 0, fmt.Errorf("%w: out of wasm memory allocating %d bytes", ErrAborted, n)
	}
	return uint32(r[0]), nil
}

func (in *Instance) free(ctx context.Context, p uint32) {
	if p != 0 && !in.broken {
		_, _ = in.call(ctx, expFree, uint64(p))
	}
}

// Create replaces any current Highs object with a fresh one.
func (in *Instance) Create(ctx context.Context) error {
	if err := in.Reset(ctx); err != nil {
		return err
	}
	in.state.tail.Reset()
	r, err := in.call(ctx, expCreate)
	if err != nil {
		return err
	}
	if r[0] == 0 {
		return fmt.Errorf("%w: Highs_create returned NULL", ErrAborted)
	}
	in.h = r[0]
	return nil
}

// Reset destroys the current Highs object, if any, and detaches the log.
func (in *Instance) Reset(ctx context.Context) error {
	in.state.log = nil
	if in.h == 0 {
		return nil
	}
	h := in.h
	in.h = 0
	_, err := in.call(ctx, expDestroy, h)
	return err
}

// Version returns Highs_version(), e.g. "1.15.0".
func (in *Instance) Version(ctx context.Context) (string, error) {
	r, err := in.call(ctx, expVersion)
	if err != nil {
		return "", err
	}
	return readCString(in.mem, uint32(r[0]), 64), nil
}

// putName writes a NUL-terminated name into the scratch buffer.
func (in *Instance) putName(name string) (uint32, error) {
	if len(name)+1 > scratchOutOff {
		return 0, fmt.Errorf("highs: name %q too long", name)
	}
	if !in.mem.Write(in.scratch, append([]byte(name), 0)) {
		return 0, fmt.Errorf("%w: scratch buffer out of range", ErrAborted)
	}
	return in.scratch, nil
}
