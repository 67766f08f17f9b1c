package dataplane

import "testing"

// TestChunked: the chunked table holds what was pushed in order across chunk boundaries,
// forgets exactly the front it is told to, reuses retired chunks for the back
// and copies what it holds, oldest first.
func TestChunked(t *testing.T) {
	tests := []struct {
		name        string
		push, drops []int // push counts and front drops, alternating: push[0], drops[0], push[1], ...
	}{
		{"one chunk", []int{10}, []int{3}},
		{"across a boundary", []int{chunkLen + 5}, []int{chunkLen - 1}},
		{"drop to empty then grow", []int{chunkLen * 2, 7}, []int{chunkLen * 2, 0}},
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
		for i := range int64(chunkLen * 3) {
			c.push(i)
		}
		first := &c.chunks[0][0]
		c.dropFront(chunkLen)
		if len(c.spare) != 1 || &c.spare[0][0] != first {
			t.Fatalf("spare chunks %d, want the retired one", len(c.spare))
		}
		for i := range int64(chunkLen) {
			c.push(i)
		}
		if len(c.spare) != 0 || &c.chunks[len(c.chunks)-1][0] != first {
			t.Fatalf("the retired chunk was not reused for the back")
		}
	})
}
