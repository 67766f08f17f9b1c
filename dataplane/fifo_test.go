package dataplane

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFifoOrder checks fifo (the front in the header, the rest in a ring) against a plain
// sorted slice: inserts go after every entry not greater than them, pops take the least,
// removeBatch drops a batch's entries wherever they are, and all lists them in order.
func TestFifoOrder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		seed       uint64
		ops        int
		resSpan    int64 // reservations drawn from [0, resSpan): small spans give ties
		batches    int32
		popPercent int
	}{
		{"short queues", 1, 4000, 1000, 50, 55},
		{"ties on res", 2, 4000, 4, 50, 45},
		{"long queues (ring growth)", 3, 20000, 100000, 400, 35},
		{"growing then draining", 4, 6000, 50, 20, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 0))
			var q fifo
			var ref []entry
			var seq int64
			for i := 0; i < tc.ops; i++ {
				switch p := rng.IntN(100); {
				case p < tc.popPercent:
					x, ok := q.front()
					if ok != (len(ref) > 0) || ok && x != ref[0] {
						t.Fatalf("op %d: front %v %v, want %v", i, x, ok, ref)
					}
					if ok {
						q.pop()
						ref = ref[1:]
					}
				case p < tc.popPercent+3:
					b := BatchID(rng.Int32N(tc.batches))
					q.removeBatch(b)
					ref = slices.DeleteFunc(ref, func(x entry) bool { return x.b == b })
				default:
					seq++
					e := entry{b: BatchID(rng.Int32N(tc.batches)), hop: rng.Int32N(3), res: Time(rng.Int64N(tc.resSpan)), seq: seq}
					if tc.name == "growing then draining" && i > tc.ops/2 {
						continue
					}
					q.insert(e)
					j := len(ref)
					for j > 0 && e.less(ref[j-1]) {
						j--
					}
					ref = slices.Insert(ref, j, e)
				}
				if q.len() != len(ref) {
					t.Fatalf("op %d: len %d, want %d", i, q.len(), len(ref))
				}
			}
			if got := q.all(); !slices.Equal(got, ref) {
				t.Fatalf("all: %v, want %v", got, ref)
			}
		})
	}
}
