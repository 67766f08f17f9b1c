package highs

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// WASI/emscripten errno values returned by the host imports.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoAcces   = 2
	errnoInval   = 28
	errnoNoent   = 44
	errnoNotty   = 59
	errnoSpipe   = 70
)

// wasmPageSize is the WebAssembly page size in bytes.
const wasmPageSize = 65536

// clockOrigin anchors the monotonic clocks handed to HiGHS; only differences
// matter to it (time limits, log timestamps).
var clockOrigin = time.Now()

// hostState is the per-instance state the host imports need. It travels in the
// context of every call into a wazero instance (see wazeroMachine.bind)
// because wazero host functions are shared by all instances of the runtime;
// the native engine reaches it through a cgo.Handle.
type hostState struct {
	log  io.Writer // receives everything HiGHS writes to stdout/stderr; may be nil
	tail tailBuffer
	fs   memFS // read-only files for Highs_readModel
	// userPanic holds a panic raised by the log writer (the caller's code,
	// e.g. a Progress callback); Instance.call re-raises it in the caller's
	// goroutine rather than reporting it as a HiGHS failure.
	userPanic any
}

type hostStateKey struct{}

func stateFrom(ctx context.Context) *hostState {
	st, _ := ctx.Value(hostStateKey{}).(*hostState)
	return st
}

// canceledError is panicked by host imports once the call's context is done;
// the instance is then discarded like after an abort.
type canceledError struct{ err error }

func (e *canceledError) Error() string { return "canceled: " + e.err.Error() }
func (e *canceledError) Unwrap() error { return e.err }

// checkCanceled unwinds the running HiGHS call if ctx is done. It runs in
// the imports HiGHS calls often (clocks, output, heap growth), so a solve
// stops within milliseconds of cancellation, at worst a few hundred.
func checkCanceled(ctx context.Context) {
	if err := ctx.Err(); err != nil {
		panic(&canceledError{err: err})
	}
}

// abortError is panicked by the host imports that end the instance (abort,
// uncaught C++ throw, exit). wazero recovers it and returns it wrapped from
// the exported call, where errors.Is(err, ErrAborted) matches it.
type abortError struct{ reason string }

func (e *abortError) Error() string { return "HiGHS aborted: " + e.reason }
func (e *abortError) Unwrap() error { return ErrAborted }

// instantiateHost registers the emscripten import module "a" in rt. Every
// import the pinned build declares must be present or instantiation fails.
func instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	i32, i64, f64 := api.ValueTypeI32, api.ValueTypeI64, api.ValueTypeF64
	b := rt.NewHostModuleBuilder(importModule)
	def := func(name string, fn api.GoModuleFunc, params, results []api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(fn, params, results).Export(name)
	}
	v := func(ts ...api.ValueType) []api.ValueType { return ts }

	def(impCxaThrow, hostCxaThrow, v(i32, i32, i32), nil)
	def(impExit, hostExit, v(i32), nil)
	def(impProcExit, hostExit, v(i32), nil)
	def(impAbortJS, func(context.Context, api.Module, []uint64) {
		panic(&abortError{reason: "abort()"})
	}, nil, nil)
	def(impEmscriptenGetNow, func(ctx context.Context, _ api.Module, s []uint64) {
		checkCanceled(ctx)
		s[0] = api.EncodeF64(float64(time.Since(clockOrigin).Nanoseconds()) / 1e6)
	}, nil, v(f64))
	def(impEmscriptenDateNow, func(ctx context.Context, _ api.Module, s []uint64) {
		checkCanceled(ctx)
		s[0] = api.EncodeF64(float64(time.Now().UnixNano()) / 1e6)
	}, nil, v(f64))
	def(impClockTimeGet, hostClockTimeGet, v(i32, i64, i32), v(i32))
	def(impEmscriptenResize, hostResizeHeap, v(i32), v(i32))
	def(impFdWrite, hostFdWrite, v(i32, i32, i32, i32), v(i32))
	def(impFdRead, hostFdRead, v(i32, i32, i32, i32), v(i32))
	def(impFdClose, func(ctx context.Context, _ api.Module, s []uint64) {
		if fd := uint32(s[0]); fd > 2 {
			s[0] = stateFrom(ctx).fs.close(fd)
			return
		}
		s[0] = errnoSuccess
	}, v(i32), v(i32))
	def(impFdSeek, hostFdSeek, v(i32, i64, i32, i32), v(i32))
	// The syscalls return -errno. fcntl/ioctl on the standard streams succeed
	// so that musl treats stdout as a terminal and line-buffers it: the
	// progress parser then sees each log line as soon as HiGHS prints it.
	def(impSyscallFcntl64, func(ctx context.Context, _ api.Module, s []uint64) {
		if fd := uint32(s[0]); fd > 2 && !stateFrom(ctx).fs.isOpen(fd) {
			s[0] = negErrno(errnoBadf)
			return
		}
		s[0] = 0
	}, v(i32, i32, i32), v(i32))
	def(impSyscallIoctl, func(ctx context.Context, _ api.Module, s []uint64) {
		switch fd := uint32(s[0]); {
		case fd <= 2:
			s[0] = 0
		case stateFrom(ctx).fs.isOpen(fd):
			s[0] = negErrno(errnoNotty)
		default:
			s[0] = negErrno(errnoBadf)
		}
	}, v(i32, i32, i32), v(i32))
	// The only files are those memFS holds for Highs_readModel.
	def(impSyscallOpenat, func(ctx context.Context, m api.Module, s []uint64) {
		path := readCString(m.Memory(), uint32(s[1]), 4096)
		s[0] = stateFrom(ctx).fs.open(path, uint32(s[2]))
	}, v(i32, i32, i32, i32), v(i32))
	def(impSetitimerJS, func(_ context.Context, _ api.Module, s []uint64) {
		s[0] = 0 // alarm() is never relied on; timers are a no-op
	}, v(i32, f64), v(i32))
	def(impTzsetJS, hostTzset, v(i32, i32, i32, i32), nil)
	def(impEnvironSizesGet, func(_ context.Context, m api.Module, s []uint64) {
		// An empty environment: the host's variables are none of HiGHS's business.
		mem := m.Memory()
		ok := mem.WriteUint32Le(uint32(s[0]), 0) && mem.WriteUint32Le(uint32(s[1]), 0)
		s[0] = okErrno(ok)
	}, v(i32, i32), v(i32))
	def(impEnvironGet, func(_ context.Context, _ api.Module, s []uint64) {
		s[0] = errnoSuccess
	}, v(i32, i32), v(i32))
	def(impKeepaliveClear, func(context.Context, api.Module, []uint64) {}, nil, nil)

	_, err := b.Instantiate(ctx)
	return err
}

func negErrno(e uint64) uint64 { return uint64(uint32(-int32(e))) }

func okErrno(ok bool) uint64 {
	if ok {
		return errnoSuccess
	}
	return errnoInval
}

func hostCxaThrow(_ context.Context, m api.Module, s []uint64) {
	// s = (exception ptr, std::type_info*, destructor). The mangled type name
	// (e.g. "St9bad_alloc") is the char* right after the type_info vtable
	// pointer; it makes the error actionable.
	reason := "uncaught C++ exception"
	if namePtr, ok := m.Memory().ReadUint32Le(uint32(s[1]) + 4); ok {
		if name := readCString(m.Memory(), namePtr, 128); name != "" {
			reason += " " + name
		}
	}
	panic(&abortError{reason: reason})
}

func hostExit(_ context.Context, _ api.Module, s []uint64) {
	panic(&abortError{reason: fmt.Sprintf("exit(%d)", int32(s[0]))})
}

func hostClockTimeGet(ctx context.Context, m api.Module, s []uint64) {
	checkCanceled(ctx)
	var ns int64
	switch uint32(s[0]) {
	case 0: // CLOCK_REALTIME
		ns = time.Now().UnixNano()
	case 1, 2, 3: // monotonic and CPU-time clocks
		ns = time.Since(clockOrigin).Nanoseconds()
	default:
		s[0] = errnoInval
		return
	}
	s[0] = okErrno(m.Memory().WriteUint64Le(uint32(s[2]), uint64(ns)))
}

// hostResizeHeap grows linear memory to at least the requested size. Like
// emscripten's JS it over-allocates by 20% (capped at +96 MiB) so that a
// growing heap does not call back for every malloc.
func hostResizeHeap(ctx context.Context, m api.Module, s []uint64) {
	checkCanceled(ctx)
	mem := m.Memory()
	requested := uint64(uint32(s[0]))
	old := uint64(mem.Size())
	maxPages, hasMax := mem.Definition().Max()
	if !hasMax {
		maxPages = 65536
	}
	maxSize := uint64(maxPages) * wasmPageSize
	if requested > maxSize {
		s[0] = 0
		return
	}
	for cut := uint64(1); cut <= 4; cut *= 2 {
		want := min(old+old/(5*cut), requested+96<<20)
		want = min(maxSize, alignUp(max(requested, want), wasmPageSize))
		if want <= old {
			s[0] = 1
			return
		}
		if _, ok := mem.Grow(uint32((want - old) / wasmPageSize)); ok {
			s[0] = 1
			return
		}
	}
	s[0] = 0
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

// iovBuf is the buffer WASI iovec i of the array at iov names in the guest's memory (false:
// the iovec or its buffer lies outside it).
func iovBuf(mem api.Memory, iov, i uint32) ([]byte, bool) {
	ptr, ok1 := mem.ReadUint32Le(iov + 8*i)
	n, ok2 := mem.ReadUint32Le(iov + 8*i + 4)
	buf, ok3 := mem.Read(ptr, n)
	return buf, ok1 && ok2 && ok3
}

// iovTransfer moves data through the iovcnt buffers of the iovec array at iov, in order, as
// fd_read and fd_write do: move takes each buffer and returns the bytes it moved, a short
// move (end of file) ends the transfer, and the total goes to pnum. A buffer outside memory
// is EINVAL.
func iovTransfer(mem api.Memory, iov, iovcnt, pnum uint32, move func(buf []byte) int) uint64 {
	var total uint32
	for i := range iovcnt {
		buf, ok := iovBuf(mem, iov, i)
		if !ok {
			return errnoInval
		}
		k := move(buf)
		total += uint32(k)
		if k < len(buf) {
			break
		}
	}
	return okErrno(mem.WriteUint32Le(pnum, total))
}

func hostFdWrite(ctx context.Context, m api.Module, s []uint64) {
	checkCanceled(ctx)
	fd, iov, iovcnt, pnum := uint32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3])
	if fd != 1 && fd != 2 {
		s[0] = errnoBadf
		return
	}
	st := stateFrom(ctx)
	s[0] = iovTransfer(m.Memory(), iov, iovcnt, pnum, func(buf []byte) int {
		if st != nil {
			st.write(buf)
		}
		return len(buf)
	})
}

func (st *hostState) write(p []byte) {
	st.tail.Write(p)
	if st.log == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			st.userPanic = r
			panic(&abortError{reason: "log writer panicked"})
		}
	}()
	// A failing log writer must not fail the solve.
	_, _ = st.log.Write(p)
}

func hostFdRead(ctx context.Context, m api.Module, s []uint64) {
	fd, iov, iovcnt, pnum := uint32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3])
	mem := m.Memory()
	if fd == 0 {
		s[0] = okErrno(mem.WriteUint32Le(pnum, 0)) // stdin is at EOF
		return
	}
	fs := &stateFrom(ctx).fs
	if !fs.isOpen(fd) {
		s[0] = errnoBadf
		return
	}
	s[0] = iovTransfer(mem, iov, iovcnt, pnum, func(buf []byte) int { return fs.read(fd, buf) })
}

func hostFdSeek(ctx context.Context, m api.Module, s []uint64) {
	fd, off, whence, pnew := uint32(s[0]), int64(s[1]), uint32(s[2]), uint32(s[3])
	if fd <= 2 {
		s[0] = errnoSpipe // the standard streams are ttys
		return
	}
	pos, errno := stateFrom(ctx).fs.seek(fd, off, whence)
	if errno != errnoSuccess {
		s[0] = errno
		return
	}
	s[0] = okErrno(m.Memory().WriteUint64Le(pnew, uint64(pos)))
}

// hostTzset reports UTC: HiGHS only uses local time for its log banner.
func hostTzset(_ context.Context, m api.Module, s []uint64) {
	mem := m.Memory()
	mem.WriteUint32Le(uint32(s[0]), 0)
	mem.WriteUint32Le(uint32(s[1]), 0)
	mem.Write(uint32(s[2]), []byte("UTC\x00"))
	mem.Write(uint32(s[3]), []byte("UTC\x00"))
}

// readCString reads a NUL-terminated string of at most max bytes at ptr.
func readCString(mem memory, ptr uint32, max uint32) string {
	if ptr == 0 {
		return ""
	}
	n := min(max, mem.Size()-min(ptr, mem.Size()))
	buf, ok := mem.Read(ptr, n)
	if !ok {
		return ""
	}
	for i, c := range buf {
		if c == 0 {
			return string(buf[:i])
		}
	}
	return string(buf)
}
