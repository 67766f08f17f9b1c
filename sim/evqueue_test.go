package sim

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/plan-dev/plan/dataplane"
)

// TestEvqueueOrder checks the event queue against dataplane.TimeHeap, the binary heap on
// (time, sequence) it replaced, on random interleavings of pushes and pops with many equal
// times (ties must pop in push order) and times spread over many buckets, with and without
// events pushed before the last popped one (which the simulator never does).
func TestEvqueueOrder(t *testing.T) {
	for _, c := range []struct {
		name   string
		spread int
		past   bool
	}{{"ties", 40, false}, {"spread", 1 << 20, false}, {"past", 1 << 12, true}} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var q evqueue
			var ref dataplane.TimeHeap[dataplane.Event]
			var seq uint64
			var now dataplane.Time
			pasts := 0
			for step := 0; step < 20000; step++ {
				if q.Len() != len(ref) {
					t.Fatalf("step %d: len %d, want %d", step, q.Len(), len(ref))
				}
				if len(ref) > 0 && (rng.IntN(100) < 48 || len(ref) > 2000) {
					at, ev := q.Pop()
					want := ref.Pop()
					if at != want.At || ev != want.Val {
						t.Fatalf("step %d: pop (%d, %+v), want (%d, %+v)", step, at, ev, want.At, want.Val)
					}
					now = at
					continue
				}
				at := now + dataplane.Time(rng.IntN(c.spread))
				if c.past && rng.IntN(20) == 0 {
					at = now - dataplane.Time(rng.IntN(c.spread))
					pasts++
				}
				if rng.IntN(4) == 0 {
					at = now // a burst at the current instant
				}
				ev := dataplane.Event{Kind: dataplane.EvTimer, Key: int64(step)}
				seq++
				ref.Push(dataplane.Timed[dataplane.Event]{At: at, Seq: seq, Val: ev})
				q.Push(at, ev)
			}
			for len(ref) > 0 {
				at, ev := q.Pop()
				want := ref.Pop()
				if at != want.At || ev != want.Val {
					t.Fatalf("drain: pop (%d, %+v), want (%d, %+v)", at, ev, want.At, want.Val)
				}
			}
			if q.Len() != 0 {
				t.Fatalf("len %d after draining", q.Len())
			}
			if c.past && pasts == 0 {
				t.Fatal("no event was pushed into the past")
			}
		})
	}
}

// TestEvslotLine checks that a slab slot is one 64-byte cache line, so a pop reads one line.
func TestEvslotLine(t *testing.T) {
	if got := unsafe.Sizeof(evslot{}); got != 64 {
		t.Errorf("evslot is %d bytes, want 64", got)
	}
}
