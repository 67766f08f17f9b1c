package highs

import "strconv"

// The wasm build is pinned by its sha256 (scripts/fetch-assets.sh verifies the
// same hash). Emscripten minifies import and export names differently for
// every build, so the tables below are only valid for exactly this file; they
// were derived from the companion build/highs.js of the same npm package
// (`_Highs_create=Module["_Highs_create"]=wasmExports["F"]`, and
// `wasmImports={a:___cxa_throw,...}`). A different wasm is refused rather than
// called through a wrong table.
const (
	// WasmSHA256 is the hex sha256 of build/highs.wasm in highs@1.15.3.
	WasmSHA256 = "528be4365bea1d4188988646b244263f50320df55782e14d6af5bce7cd45c840"
	// Package names the npm package the wasm comes from.
	Package = "highs@1.15.3"
)

// importModule is the single module name emscripten uses for all imports.
const importModule = "a"

// Minified import names (wasmImports in highs.js) of the pinned build.
const (
	impCxaThrow          = "a" // ___cxa_throw(ptr, type, destructor)
	impExit              = "b" // _exit(status)
	impEmscriptenGetNow  = "c" // _emscripten_get_now() f64 ms, monotonic
	impFdClose           = "d" // _fd_close(fd) errno
	impSyscallFcntl64    = "e" // ___syscall_fcntl64(fd, cmd, varargs) -errno
	impFdWrite           = "f" // _fd_write(fd, iov, iovcnt, pnum) errno
	impFdRead            = "g" // _fd_read(fd, iov, iovcnt, pnum) errno
	impSyscallIoctl      = "h" // ___syscall_ioctl(fd, op, varargs) -errno
	impSyscallOpenat     = "i" // ___syscall_openat(dirfd, path, flags, varargs) fd or -errno
	impEmscriptenDateNow = "j" // _emscripten_date_now() f64 ms since epoch
	impAbortJS           = "k" // __abort_js()
	impSetitimerJS       = "l" // __setitimer_js(which, timeout_ms f64)
	impTzsetJS           = "m" // __tzset_js(timezone, daylight, std_name, dst_name)
	impEnvironSizesGet   = "n" // _environ_sizes_get(pcount, pbufsize) errno
	impEnvironGet        = "o" // _environ_get(environ, buf) errno
	impClockTimeGet      = "p" // _clock_time_get(clk, precision i64, ptime) errno
	impEmscriptenResize  = "q" // _emscripten_resize_heap(requested) bool
	impProcExit          = "r" // _proc_exit(code)
	impKeepaliveClear    = "s" // __emscripten_runtime_keepalive_clear()
	impFdSeek            = "t" // _fd_seek(fd, offset i64, whence, pnewoffset) errno
)

// Minified export names (wasmExports[...] in highs.js) of the pinned build,
// limited to what this package calls.
const (
	expMemory            = "u"  // wasmMemory
	expWasmCallCtors     = "v"  // __wasm_call_ctors, run once per instance
	expCreate            = "F"  // Highs_create() ptr
	expDestroy           = "G"  // Highs_destroy(h)
	expVersion           = "H"  // Highs_version() const char*
	expRun               = "N"  // Highs_run(h) status
	expReadModel         = "P"  // Highs_readModel(h, filename) status
	expPassLp            = "U"  // Highs_passLp(h, ...)
	expPassMip           = "V"  // Highs_passMip(h, ...)
	expSetBoolOption     = "ia" // Highs_setBoolOptionValue(h, name, v)
	expSetIntOption      = "ja" // Highs_setIntOptionValue(h, name, v)
	expSetDoubleOption   = "ka" // Highs_setDoubleOptionValue(h, name, v f64)
	expSetStringOption   = "la" // Highs_setStringOptionValue(h, name, v)
	expGetIntInfo        = "Aa" // Highs_getIntInfoValue(h, name, *v)
	expGetDoubleInfo     = "Ba" // Highs_getDoubleInfoValue(h, name, *v)
	expGetInt64Info      = "Ca" // Highs_getInt64InfoValue(h, name, *v)
	expGetSolution       = "Ea" // Highs_getSolution(h, colv, cold, rowv, rowd)
	expGetModelStatus    = "Ga" // Highs_getModelStatus(h) status
	expGetObjectiveValue = "Ka" // Highs_getObjectiveValue(h) f64
	expSetSolution       = "Va" // Highs_setSolution(h, colv, rowv, cold, rowd)
	expGetSizeofHighsInt = "Yb" // Highs_getSizeofHighsInt(h) int
	expFree              = "tc" // free(p)
	expMalloc            = "uc" // malloc(n) p
)

// requiredExports lists every export the package resolves at instantiation,
// so a mismatched build fails loudly up front instead of mid-solve.
var requiredExports = []string{
	expWasmCallCtors, expCreate, expDestroy, expVersion, expRun, expReadModel, expPassLp,
	expPassMip, expSetBoolOption, expSetIntOption, expSetDoubleOption,
	expSetStringOption, expGetIntInfo, expGetDoubleInfo, expGetInt64Info,
	expGetSolution, expGetModelStatus, expGetObjectiveValue, expSetSolution,
	expGetSizeofHighsInt, expFree, expMalloc,
}

// exportNames maps the minified exports to their C names (error messages).
var exportNames = map[string]string{
	expWasmCallCtors: "__wasm_call_ctors", expCreate: "Highs_create",
	expDestroy: "Highs_destroy", expVersion: "Highs_version", expRun: "Highs_run",
	expReadModel: "Highs_readModel", expPassLp: "Highs_passLp", expPassMip: "Highs_passMip",
	expSetBoolOption: "Highs_setBoolOptionValue", expSetIntOption: "Highs_setIntOptionValue",
	expSetDoubleOption: "Highs_setDoubleOptionValue", expSetStringOption: "Highs_setStringOptionValue",
	expGetIntInfo: "Highs_getIntInfoValue", expGetDoubleInfo: "Highs_getDoubleInfoValue",
	expGetInt64Info: "Highs_getInt64InfoValue", expGetSolution: "Highs_getSolution",
	expGetModelStatus: "Highs_getModelStatus", expGetObjectiveValue: "Highs_getObjectiveValue",
	expSetSolution: "Highs_setSolution", expGetSizeofHighsInt: "Highs_getSizeofHighsInt",
	expFree: "free", expMalloc: "malloc",
}

// HiGHS C API constants (highs_c_api.h).
const (
	matrixFormatColwise = 1
	objSenseMinimize    = 1
	objSenseMaximize    = -1

	// Highs_run return values (HighsStatus).
	StatusError   = -1
	StatusOK      = 0
	StatusWarning = 1
)

// ModelStatus is HiGHS's HighsModelStatus as returned by Highs_getModelStatus.
type ModelStatus int

// HighsModelStatus values (highs_c_api.h, kHighsModelStatus*).
const (
	ModelNotset                ModelStatus = 0
	ModelLoadError             ModelStatus = 1
	ModelModelError            ModelStatus = 2
	ModelPresolveError         ModelStatus = 3
	ModelSolveError            ModelStatus = 4
	ModelPostsolveError        ModelStatus = 5
	ModelEmpty                 ModelStatus = 6
	ModelOptimal               ModelStatus = 7
	ModelInfeasible            ModelStatus = 8
	ModelUnboundedOrInfeasible ModelStatus = 9
	ModelUnbounded             ModelStatus = 10
	ModelObjectiveBound        ModelStatus = 11
	ModelObjectiveTarget       ModelStatus = 12
	ModelTimeLimit             ModelStatus = 13
	ModelIterationLimit        ModelStatus = 14
	ModelUnknown               ModelStatus = 15
	ModelSolutionLimit         ModelStatus = 16
	ModelInterrupt             ModelStatus = 17
	ModelMemoryLimit           ModelStatus = 18
)

var modelStatusNames = [...]string{
	"not set", "load error", "model error", "presolve error", "solve error",
	"postsolve error", "empty", "optimal", "infeasible",
	"unbounded or infeasible", "unbounded", "objective bound",
	"objective target", "time limit", "iteration limit", "unknown",
	"solution limit", "interrupt", "memory limit",
}

func (s ModelStatus) String() string {
	if s >= 0 && int(s) < len(modelStatusNames) {
		return modelStatusNames[s]
	}
	return "status " + strconv.Itoa(int(s))
}

// Primal solution status values (info "primal_solution_status").
const (
	SolutionNone       = 0
	SolutionInfeasible = 1
	SolutionFeasible   = 2
)
