package dataplane

import (
	"testing"
	"unsafe"
)

// TestRequestLayout checks the request record's layout that Request's comment describes: three
// cache lines, with the fields each phase of a request's life reads on as few lines as it
// can (the first for finishing a batch, the second for dispatching and emulating one).
func TestRequestLayout(t *testing.T) {
	const line = 64
	var r Request
	if got := unsafe.Sizeof(r); got != 3*line {
		t.Fatalf("Request is %d bytes, want %d (three cache lines)", got, 3*line)
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
		{"Arrival", unsafe.Offsetof(r.Arrival), unsafe.Sizeof(r.Arrival), 0},
		{"Deadline", unsafe.Offsetof(r.Deadline), unsafe.Sizeof(r.Deadline), 0},
		{"Done", unsafe.Offsetof(r.Done), unsafe.Sizeof(r.Done), 0},
		{"WorkGPU", unsafe.Offsetof(r.WorkGPU), unsafe.Sizeof(r.WorkGPU), 0},
		{"Result", unsafe.Offsetof(r.Result), unsafe.Sizeof(r.Result), 0},
		{"Dispatch", unsafe.Offsetof(r.Dispatch), unsafe.Sizeof(r.Dispatch), 1},
		{"Batches", unsafe.Offsetof(r.Batches), unsafe.Sizeof(r.Batches), 1},
		{"Attrs.Sample", unsafe.Offsetof(r.Attrs) + unsafe.Offsetof(r.Attrs.Sample), unsafe.Sizeof(r.Attrs.Sample), 1},
		{"Attrs.Trace", unsafe.Offsetof(r.Attrs) + unsafe.Offsetof(r.Attrs.Trace), unsafe.Sizeof(r.Attrs.Trace), 1},
	} {
		if first, last := tc.off/line, (tc.off+tc.size-1)/line; first != tc.line || last != tc.line {
			t.Errorf("Request.%s spans bytes [%d, %d): lines %d–%d, want line %d only", tc.field, tc.off, tc.off+tc.size, first, last, tc.line)
		}
	}
}
