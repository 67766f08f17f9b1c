package dataplane

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// TestTimeHeapOrder: pops come out sorted by (At, Seq) for random pushes interleaved with pops.
func TestTimeHeapOrder(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		var h TimeHeap[int]
		var ref []Timed[int]
		var seq uint64
		popRef := func() Timed[int] {
			sort.Slice(ref, func(i, j int) bool {
				if ref[i].At != ref[j].At {
					return ref[i].At < ref[j].At
				}
				return ref[i].Seq < ref[j].Seq
			})
			x := ref[0]
			ref = ref[1:]
			return x
		}
		for i := 0; i < 500; i++ {
			if len(h) > 0 && rng.IntN(3) == 0 {
				got, want := h.Pop(), popRef()
				if got != want {
					t.Fatalf("seed %d: pop %+v, want %+v", seed, got, want)
				}
				continue
			}
			seq++
			x := Timed[int]{At: Time(rng.IntN(50)), Seq: seq, Val: i}
			h.Push(x)
			ref = append(ref, x)
		}
		for len(h) > 0 {
			if got, want := h.Pop(), popRef(); got != want {
				t.Fatalf("seed %d: drain pop %+v, want %+v", seed, got, want)
			}
		}
	}
}
