//go:build highs_native

package highs

/*
#cgo CFLAGS: -I${SRCDIR}/../../../third_party/highs/native -O2
#cgo LDFLAGS: ${SRCDIR}/../../../third_party/highs/native/libhighs_w2c.a -lm -lpthread
#include "native_glue.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// NativeBuilt reports whether this binary contains the native engine.
const NativeBuilt = true

// nativeFn maps the minified export names of abi.go to the glue's numbers.
var nativeFn = map[string]C.int{
	expWasmCallCtors: C.HW_CTORS, expCreate: C.HW_CREATE, expDestroy: C.HW_DESTROY,
	expVersion: C.HW_VERSION, expRun: C.HW_RUN, expReadModel: C.HW_READ_MODEL,
	expPassLp: C.HW_PASS_LP, expPassMip: C.HW_PASS_MIP, expSetBoolOption: C.HW_SET_BOOL,
	expSetIntOption: C.HW_SET_INT, expSetDoubleOption: C.HW_SET_DOUBLE,
	expSetStringOption: C.HW_SET_STRING, expGetIntInfo: C.HW_GET_INT_INFO,
	expGetDoubleInfo: C.HW_GET_DOUBLE_INFO, expGetInt64Info: C.HW_GET_INT64_INFO,
	expGetSolution: C.HW_GET_SOLUTION, expGetModelStatus: C.HW_GET_MODEL_STATUS,
	expGetObjectiveValue: C.HW_GET_OBJECTIVE, expSetSolution: C.HW_SET_SOLUTION,
	expGetSizeofHighsInt: C.HW_SIZEOF_HIGHSINT, expFree: C.HW_FREE, expMalloc: C.HW_MALLOC,
}

// maxArgs is the most arguments an export in nativeFn takes (Highs_passMip).
const maxArgs = 16

var nativeInit = sync.OnceValue(func() string {
	return C.GoString(C.highs_w2c_init())
})

// newNativeEngine checks that the linked C was generated from the pinned
// wasm; instances need no compilation step.
func newNativeEngine() (*Engine, error) {
	if sha := nativeInit(); sha != WasmSHA256 {
		return nil, fmt.Errorf("%w: the native engine was generated from a wasm with sha256 %s, want %s (%s): rerun `make native`",
			ErrUnavailable, sha, WasmSHA256, Package)
	}
	for _, name := range requiredExports {
		if _, ok := nativeFn[name]; !ok {
			return nil, fmt.Errorf("%w: native engine lacks export %q", ErrUnavailable, name)
		}
	}
	if C.highs_w2c_usable() == 0 {
		return nil, fmt.Errorf("%w: %s: set %s=%s, or build the native engine with bounds checks (make native NATIVE_MEMCHECK=bounds)",
			ErrUnavailable, C.GoString(C.highs_w2c_strerror(C.HW_TRAP_RESERVE)), EnvEngine, KindWazero)
	}
	check := "bounds checks"
	if NativeGuardPages() {
		check = "guard pages"
	}
	return newEngine(KindNative, nativeBackend{}, "native (wasm2c of "+Package+" sha256 "+WasmSHA256[:12]+", "+check+")"), nil
}

// NativeGuardPages reports whether the native engine checks memory accesses
// with guard pages (make native NATIVE_MEMCHECK=guard) rather than bounds
// checks.
func NativeGuardPages() bool { return C.highs_w2c_guarded() != 0 }

// nativeUsable reports whether native instances can be made here: always
// with bounds checks; with guard pages where 8 GiB of address space can be
// reserved per instance.
func nativeUsable() bool { return C.highs_w2c_usable() != 0 }

// NewNativeEngine returns a new native engine with its own instance pool
// (benchmarks use it to measure a cold start); see ForKind.
func NewNativeEngine() (*Engine, error) { return newNativeEngine() }

type nativeBackend struct{}

func (nativeBackend) close(context.Context) error { return nil }

func (nativeBackend) instantiate(_ context.Context, st *hostState) (machine, error) {
	h := cgo.NewHandle(st)
	var trap C.int
	in := C.highs_w2c_new(C.uintptr_t(h), &trap)
	if in == nil {
		h.Delete()
		return nil, fmt.Errorf("instantiating the native module: %s", C.GoString(C.highs_w2c_strerror(trap)))
	}
	return &nativeMachine{in: in, h: h, st: st}, nil
}

// nativeMachine is one instance of the C module. Its linear memory is C
// memory that moves when it grows (realloc), so every access reads the
// current data pointer.
type nativeMachine struct {
	in *C.highs_w2c_inst
	h  cgo.Handle
	st *hostState
}

func (m *nativeMachine) call(ctx context.Context, name string, args []uint64) ([]uint64, error) {
	fn, ok := nativeFn[name]
	if !ok || len(args) > maxArgs {
		return nil, fmt.Errorf("native engine: no export %q with %d arguments", name, len(args))
	}
	// The imports HiGHS calls often (clocks, output, heap growth) check the
	// flag this sets; see checkCanceled for the wazero twin.
	if done := ctx.Done(); done != nil {
		stopped := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			C.highs_w2c_cancel(m.in)
			close(stopped)
		})
		defer func() {
			if !stop() {
				<-stopped // let a late cancel land before clearing it
			}
			C.highs_w2c_uncancel(m.in)
		}()
	}
	var buf [2 * maxArgs]C.uint64_t // arguments, then results
	for i, a := range args {
		buf[i] = C.uint64_t(a)
	}
	trap := C.highs_w2c_call(m.in, fn, &buf[0], &buf[maxArgs])
	switch trap {
	case 0:
		return []uint64{uint64(buf[maxArgs])}, nil
	case C.HW_TRAP_ABORT:
		return nil, &abortError{reason: C.GoString(&m.in.reason[0])}
	case C.HW_TRAP_CANCELED:
		return nil, &canceledError{err: context.Cause(ctx)}
	case C.HW_TRAP_CALLBACK:
		return nil, &abortError{reason: "log writer panicked"}
	default:
		return nil, fmt.Errorf("wasm trap: %s", C.GoString(C.highs_w2c_strerror(trap)))
	}
}

func (m *nativeMachine) memory() memory { return nativeMemory{m.in} }

func (m *nativeMachine) close(context.Context) {
	if m.in != nil {
		C.highs_w2c_delete(m.in)
		m.in = nil
		m.h.Delete()
	}
}

// nativeMemory implements memory over the C module's linear memory.
type nativeMemory struct{ in *C.highs_w2c_inst }

func (n nativeMemory) bytes() []byte {
	m := C.highs_w2c_memory(n.in)
	if m.data == nil {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(m.data)), int(m.size))
}

func (n nativeMemory) Size() uint32 { return uint32(C.highs_w2c_memory(n.in).size) }

func (n nativeMemory) Read(off, count uint32) ([]byte, bool) {
	b := n.bytes()
	if uint64(off)+uint64(count) > uint64(len(b)) {
		return nil, false
	}
	return b[off : off+count : off+count], true
}

func (n nativeMemory) Write(off uint32, v []byte) bool {
	b, ok := n.Read(off, uint32(len(v)))
	if ok {
		copy(b, v)
	}
	return ok
}

func (n nativeMemory) ReadUint64Le(off uint32) (uint64, bool) {
	b, ok := n.Read(off, 8)
	if !ok {
		return 0, false
	}
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56, true
}

func (n nativeMemory) WriteUint64Le(off uint32, v uint64) bool {
	b, ok := n.Read(off, 8)
	if !ok {
		return false
	}
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return true
}

// The callbacks below are the host imports that need Go state. They must
// not panic: a panic cannot unwind through the C frames of the running
// module. The write callback reports one instead, and the glue traps.

func stateOf(h C.uintptr_t) *hostState { return cgo.Handle(h).Value().(*hostState) }

//export highsW2CWrite
func highsW2CWrite(h C.uintptr_t, p *C.char, n C.uint32_t) (rc C.int) {
	defer func() {
		if recover() != nil {
			rc = 1 // hostState.write recorded a user panic in userPanic
		}
	}()
	stateOf(h).write(unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n)))
	return 0
}

//export highsW2COpen
func highsW2COpen(h C.uintptr_t, path *C.char, flags C.uint32_t) C.uint32_t {
	return C.uint32_t(stateOf(h).fs.open(C.GoString(path), uint32(flags)))
}

//export highsW2CIsOpen
func highsW2CIsOpen(h C.uintptr_t, fd C.uint32_t) C.int {
	if stateOf(h).fs.isOpen(uint32(fd)) {
		return 1
	}
	return 0
}

//export highsW2CRead
func highsW2CRead(h C.uintptr_t, fd C.uint32_t, p *C.char, n C.uint32_t) C.uint32_t {
	return C.uint32_t(stateOf(h).fs.read(uint32(fd), unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))))
}

//export highsW2CSeek
func highsW2CSeek(h C.uintptr_t, fd C.uint32_t, off C.int64_t, whence C.uint32_t, pos *C.int64_t) C.uint32_t {
	p, errno := stateOf(h).fs.seek(uint32(fd), int64(off), uint32(whence))
	*pos = C.int64_t(p)
	return C.uint32_t(errno)
}

//export highsW2CClose
func highsW2CClose(h C.uintptr_t, fd C.uint32_t) C.uint32_t {
	return C.uint32_t(stateOf(h).fs.close(uint32(fd)))
}
