package dataplane

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestRequestLayout checks the request record's layout that Request's comment describes: two
// cache lines and no pointers, with the fields each phase of a request's life reads on as few
// lines as it can (the first for finishing a batch, the second for dispatching and emulating
// one).
func TestRequestLayout(t *testing.T) {
	const line = 64
	var r Request
	if got := unsafe.Sizeof(r); got != 2*line {
		t.Fatalf("Request is %d bytes, want %d (two cache lines)", got, 2*line)
	}
	if p := pointerField(reflect.TypeOf(r), "Request"); p != "" {
		t.Errorf("Request holds a pointer at %s: the GC would scan the request table", p)
	}
	var c chunked[Request]
	c.push(Request{})
	if a := uintptr(unsafe.Pointer(c.at(0))); a%line != 0 {
		t.Errorf("the request table's chunk starts at %#x, not on a cache line", a)
	}
	for _, tc := range []struct {
		field     string
		off, size uintptr
		line      uintptr
	}{
		{"ID", unsafe.Offsetof(r.ID), unsafe.Sizeof(r.ID), 0},
		{"App", unsafe.Offsetof(r.App), unsafe.Sizeof(r.App), 0},
		{"Outcome", unsafe.Offsetof(r.Outcome), unsafe.Sizeof(r.Outcome), 0},
		{"CancelRequested", unsafe.Offsetof(r.CancelRequested), unsafe.Sizeof(r.CancelRequested), 0},
		{"held", unsafe.Offsetof(r.held), unsafe.Sizeof(r.held), 0},
		{"nBatch", unsafe.Offsetof(r.nBatch), unsafe.Sizeof(r.nBatch), 0},
		{"Arrival", unsafe.Offsetof(r.Arrival), unsafe.Sizeof(r.Arrival), 0},
		{"Deadline", unsafe.Offsetof(r.Deadline), unsafe.Sizeof(r.Deadline), 0},
		{"Done", unsafe.Offsetof(r.Done), unsafe.Sizeof(r.Done), 0},
		{"WorkGPU", unsafe.Offsetof(r.WorkGPU), unsafe.Sizeof(r.WorkGPU), 0},
		{"Result", unsafe.Offsetof(r.Result), unsafe.Sizeof(r.Result), 0},
		{"Dispatch", unsafe.Offsetof(r.Dispatch), unsafe.Sizeof(r.Dispatch), 1},
		{"batch0", unsafe.Offsetof(r.batch0), unsafe.Sizeof(r.batch0), 1},
		{"Attrs.Sample", unsafe.Offsetof(r.Attrs) + unsafe.Offsetof(r.Attrs.Sample), unsafe.Sizeof(r.Attrs.Sample), 1},
		{"Attrs.Trace", unsafe.Offsetof(r.Attrs) + unsafe.Offsetof(r.Attrs.Trace), unsafe.Sizeof(r.Attrs.Trace), 1},
	} {
		if first, last := tc.off/line, (tc.off+tc.size-1)/line; first != tc.line || last != tc.line {
			t.Errorf("Request.%s spans bytes [%d, %d): lines %d–%d, want line %d only", tc.field, tc.off, tc.off+tc.size, first, last, tc.line)
		}
	}
}

// pointerField names the first field of t (at path) that is or holds a pointer, "" if none.
func pointerField(t reflect.Type, path string) string {
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Slice, reflect.Map, reflect.Chan,
		reflect.Func, reflect.Interface, reflect.String:
		return path
	case reflect.Array:
		return pointerField(t.Elem(), path+"[]")
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if p := pointerField(t.Field(i).Type, path+"."+t.Field(i).Name); p != "" {
				return p
			}
		}
	}
	return ""
}

// TestPointerField checks the pointer finder the layout test relies on.
func TestPointerField(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{struct{ A, B int64 }{}, ""},
		{struct {
			A int64
			B [2]struct{ C string }
		}{}, "x.B[].C"},
		{struct{ P *int }{}, "x.P"},
		{struct{ S []int32 }{}, "x.S"},
		{Attrs{}, ""},
		{Result{}, ""},
	} {
		if got := pointerField(reflect.TypeOf(tc.v), "x"); got != tc.want {
			t.Errorf("pointerField(%T) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestWorkerLayout checks the worker and link records' layouts that workerState's and
// linkState's comments describe: two lines and one, with what tryWorker, batchDone and
// tryLink read on the first, and tables of them starting on a line at the scales where
// that matters (tables past 32 KB, out of the first-level cache: Go places a smaller table
// that holds pointers 8 bytes behind a header).
func TestWorkerLayout(t *testing.T) {
	const line = 64
	var w workerState
	var l linkState
	for _, tc := range []struct {
		name       string
		size, want uintptr
	}{
		{"workerState", unsafe.Sizeof(w), 2 * line},
		{"linkState", unsafe.Sizeof(l), line},
	} {
		if tc.size != tc.want {
			t.Errorf("%s is %d bytes, want %d", tc.name, tc.size, tc.want)
		}
	}
	q := unsafe.Offsetof(w.q)
	lq := unsafe.Offsetof(l.q)
	for _, tc := range []struct {
		field     string
		off, size uintptr
	}{
		{"workerState.busy", unsafe.Offsetof(w.busy), unsafe.Sizeof(w.busy)},
		{"workerState.loading", unsafe.Offsetof(w.loading), unsafe.Sizeof(w.loading)},
		{"workerState.down", unsafe.Offsetof(w.down), unsafe.Sizeof(w.down)},
		{"workerState.curB", unsafe.Offsetof(w.curB), unsafe.Sizeof(w.curB)},
		{"workerState.curHop", unsafe.Offsetof(w.curHop), unsafe.Sizeof(w.curHop)},
		{"workerState.curStart", unsafe.Offsetof(w.curStart), unsafe.Sizeof(w.curStart)},
		{"workerState.busyTime", unsafe.Offsetof(w.busyTime), unsafe.Sizeof(w.busyTime)},
		{"workerState.q.first", q + unsafe.Offsetof(w.q.first), unsafe.Sizeof(w.q.first)},
		{"workerState.q.n", q + unsafe.Offsetof(w.q.n), unsafe.Sizeof(w.q.n)},
		{"workerState.q.head", q + unsafe.Offsetof(w.q.head), unsafe.Sizeof(w.q.head)},
		{"linkState.busy", unsafe.Offsetof(l.busy), unsafe.Sizeof(l.busy)},
		{"linkState.q.first", lq + unsafe.Offsetof(l.q.first), unsafe.Sizeof(l.q.first)},
		{"linkState.q.n", lq + unsafe.Offsetof(l.q.n), unsafe.Sizeof(l.q.n)},
	} {
		if last := tc.off + tc.size - 1; last >= line {
			t.Errorf("%s spans bytes [%d, %d): past the first line", tc.field, tc.off, tc.off+tc.size)
		}
	}
	for _, n := range []int{600, 1600, 6400} {
		if a := uintptr(unsafe.Pointer(&make([]workerState, n)[0])); a%line != 0 {
			t.Errorf("a table of %d workers starts at %#x, not on a cache line", n, a)
		}
		if a := uintptr(unsafe.Pointer(&make([]linkState, n)[0])); a%line != 0 {
			t.Errorf("a table of %d links starts at %#x, not on a cache line", n, a)
		}
	}
}

// TestBatchLayout checks that a batch record is 80 bytes and that the 16 bytes from Lost on
// (Lost, running, share0: Batch) are 16-aligned, so they never straddle two lines.
func TestBatchLayout(t *testing.T) {
	var b Batch
	if s := unsafe.Sizeof(b); s != 80 {
		t.Errorf("Batch is %d bytes, want 80", s)
	}
	lo := unsafe.Offsetof(b.Lost)
	for _, tc := range []struct {
		field     string
		off, size uintptr
	}{
		{"running", unsafe.Offsetof(b.running), unsafe.Sizeof(b.running)},
		{"share0", unsafe.Offsetof(b.share0), unsafe.Sizeof(b.share0)},
	} {
		if tc.off < lo || tc.off+tc.size > lo+16 {
			t.Errorf("Batch.%s at [%d, %d): not within the 16 bytes from Lost (%d)", tc.field, tc.off, tc.off+tc.size, lo)
		}
	}
	if lo%16 != 0 {
		t.Errorf("Batch.Lost at %d: not 16-aligned", lo)
	}
}
