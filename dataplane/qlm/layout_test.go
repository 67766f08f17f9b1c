package qlm

import (
	"testing"
	"unsafe"
)

// TestInstanceLayout checks what Attach's array of instance records relies on: each record
// is an odd number of 64-byte lines (records keep their lines at the same offsets, and the
// k-th lines of consecutive records fall in different L1 sets), and the fields an event and
// a step read lie in the three lines after the engine's.
func TestInstanceLayout(t *testing.T) {
	var in instance
	size := unsafe.Sizeof(in)
	if size%64 != 0 || (size/64)%2 != 1 {
		t.Errorf("instance is %d bytes: want an odd number of 64-byte lines", size)
	}
	hot := []struct {
		name string
		off  uintptr
	}{
		{"model", unsafe.Offsetof(in.model)},
		{"w", unsafe.Offsetof(in.w)},
		{"outstanding", unsafe.Offsetof(in.outstanding)},
		{"floor", unsafe.Offsetof(in.floor)},
		{"llms", unsafe.Offsetof(in.llms)},
		{"allDecodes", unsafe.Offsetof(in.allDecodes)},
		{"iterEnd", unsafe.Offsetof(in.iterEnd)},
		{"paceNominal", unsafe.Offsetof(in.paceNominal)},
		{"gpu", unsafe.Offsetof(in.gpu)},
	}
	first := (unsafe.Sizeof(in.Engine) + 63) / 64
	for _, f := range hot {
		if l := f.off / 64; l < first || l > first+2 {
			t.Errorf("%s at byte %d (line %d): want lines %d to %d", f.name, f.off, l, first, first+2)
		}
	}
}
