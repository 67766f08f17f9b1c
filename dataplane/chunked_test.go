package dataplane

import (
	"testing"
	"unsafe"
)

// TestChunked: the chunked table holds what was pushed in order across chunk boundaries,
// forgets exactly the front it is told to, reuses retired chunks for the back
// and copies what it holds, oldest first.
func TestChunked(t *testing.T) {
	tests := []struct {
		name        string
		push, drops []int // push counts and front drops, alternating: push[0], drops[0], push[1], ...
	}{
		{"one chunk", []int{10}, []int{3}},
		{"across a boundary", []int{pieceLen + 5}, []int{pieceLen - 1}},
		{"across blocks", []int{blockPieces*pieceLen + 9}, []int{3*pieceLen + 1}},
		{"drop to empty then grow", []int{pieceLen * 2, 7}, []int{pieceLen * 2, 0}},
		{"many rounds", []int{3000, 3000, 3000, 3000}, []int{2000, 2500, 3500, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c chunked[int64]
			base, next := int64(0), int64(0)
			for i, p := range tc.push {
				for range p {
					c.push(next)
					next++
				}
				c.dropFront(tc.drops[i])
				base += int64(tc.drops[i])
				if c.len() != int(next-base) {
					t.Fatalf("round %d: len %d, want %d", i, c.len(), next-base)
				}
				for k := 0; k < c.len(); k++ {
					if got := *c.at(k); got != base+int64(k) {
						t.Fatalf("round %d: at(%d) = %d, want %d", i, k, got, base+int64(k))
					}
				}
				s := c.snapshot()
				if len(s) != c.len() || (len(s) > 0 && (s[0] != base || s[len(s)-1] != next-1)) {
					t.Fatalf("round %d: snapshot of %d from %v, want %d from %d", i, len(s), s[:min(1, len(s))], c.len(), base)
				}
			}
		})
	}
	t.Run("retired chunks are reused", func(t *testing.T) {
		var c chunked[int64]
		for i := range int64(pieceLen * 3) {
			c.push(i)
		}
		first := c.chunks[0]
		c.dropFront(pieceLen)
		if len(c.spare) != 1 || c.spare[0] != first {
			t.Fatalf("spare chunks %d, want the retired one", len(c.spare))
		}
		for i := range int64(pieceLen) {
			c.push(i)
		}
		if len(c.spare) != 0 || c.chunks[len(c.chunks)-1] != first {
			t.Fatalf("the retired chunk was not reused for the back")
		}
	})
}

// TestChunkedOffsets: the records of a batch whose IDs are about pieceLen or 2·pieceLen
// apart (its requests routed over as many stage-1 replicas) spread over the 128-byte offsets
// of a 4 KB page, so over the first-level cache's sets (chunked), where chunks laid end to
// end put them all on one; and consecutive IDs stay adjacent.
func TestChunkedOffsets(t *testing.T) {
	var c chunked[Request]
	const n = 4 * blockPieces * pieceLen
	for range n {
		c.push(Request{})
	}
	const batch = 128
	for _, stride := range []int{240, 248, 252, 254, 255, 256, 257, 258, 260, 264, 272, 509, 510, 511, 512, 513} {
		least := 32
		for first := 0; first+(batch-1)*stride < n; first += 389 {
			offs := map[uintptr]bool{}
			for i := first; i < first+batch*stride; i += stride {
				offs[uintptr(unsafe.Pointer(c.at(i)))%4096/128] = true
			}
			least = min(least, len(offs))
		}
		if least < 16 {
			t.Errorf("%d IDs %d apart: on %d of the 32 offsets in a page, want 16 or more", batch, stride, least)
		}
	}
	for i := 1; i < n; i++ {
		if d := uintptr(unsafe.Pointer(c.at(i))) - uintptr(unsafe.Pointer(c.at(i-1))); i%pieceLen != 0 && d != unsafe.Sizeof(Request{}) {
			t.Fatalf("IDs %d and %d are %d bytes apart, want adjacent", i-1, i, d)
		}
	}
}

// TestChunkedAhead: ahead names the slot a later push fills, within the back's chunk and in
// the chunk push takes next (a carved one or a spare), so the arrival prefetch never
// skips a chunk's last slots once the table has a block.
func TestChunkedAhead(t *testing.T) {
	for _, drop := range []int{0, 2 * pieceLen} {
		var c chunked[int64]
		want := map[int64]*int64{} // element pushed n-th → the slot ahead named for it
		for i := range 4 * pieceLen {
			if i == 3*pieceLen {
				c.dropFront(drop) // later chunks come from the spares
			}
			for k := 1; k <= 8; k++ {
				p := c.ahead(k)
				if p == nil && i > 0 {
					t.Fatalf("drop %d: ahead(%d) at %d pushed is nil", drop, k, i)
				}
				if p != nil {
					want[int64(i+k-1)] = p
				}
			}
			c.push(int64(i))
		}
		for i := range c.len() {
			n := *c.at(i)
			if p, ok := want[n]; n > 0 && (!ok || p != c.at(i)) {
				t.Fatalf("drop %d: ahead named %p for element %d, push filled %p", drop, p, n, c.at(i))
			}
		}
	}
}
