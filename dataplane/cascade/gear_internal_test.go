package cascade

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/plan-dev/plan/dataplane"
)

// TestGearRing drives the per-request gear records (setNextGear and setGear, Forget,
// gearOfReq) through random runs against a map: arrivals with gaps (their skipped IDs get
// gear 0), retirements of a random prefix, runs that retire every record (the next arrival
// rebases), and windows that wrap the ring and outgrow it.
func TestGearRing(t *testing.T) {
	cases := []struct {
		name string
		// gap: the most IDs skipped between arrivals; keep: the most records kept by a
		// retirement.
		gap, keep int
		steps     int
	}{
		{"dense, short window", 1, 50, 20000},
		{"gaps, long window", 5, 3000, 20000},
		{"retire everything", 3, 0, 5000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.gap)))
			p := &Policy{cur: 7}
			want := map[dataplane.ReqID]int{}
			var next, base dataplane.ReqID
			grew := 0
			for step := range tc.steps {
				if rng.IntN(3) > 0 {
					id := next + dataplane.ReqID(rng.IntN(tc.gap))
					for x := next; x < id; x++ {
						if len(want) > 0 {
							want[x] = 0
						}
					}
					if len(want) == 0 {
						base = id
					}
					g := rng.IntN(6)
					want[id] = g
					n := len(p.gearOf)
					if rng.IntN(2) == 0 || !p.setNextGear(id, g) { // as Handle records
						p.setGear(id, g)
					}
					if len(p.gearOf) > n && n > 0 {
						grew++
					}
					next = id + 1
				} else if len(want) > 0 {
					end := next - 1 - dataplane.ReqID(rng.IntN(tc.keep+1))
					p.Forget(end)
					for x := base; x <= end; x++ {
						delete(want, x)
					}
					base = max(base, end+1)
				}
				if p.nGear != len(want) {
					t.Fatalf("step %d: %d records, want %d", step, p.nGear, len(want))
				}
				for id := base - 3; id < next+3; id++ {
					w, ok := want[id]
					if !ok {
						w = p.cur
					}
					if got := p.gearOfReq(id); got != w {
						t.Fatalf("step %d: request %d: gear %d, want %d", step, id, got, w)
					}
				}
			}
			if tc.keep > 64 && grew == 0 {
				t.Error("the ring never grew")
			}
		})
	}
}

// TestQueueRecordSize keeps a replica's queue record at one cache line (queue.go).
func TestQueueRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(wqueue{}); n != 64 {
		t.Errorf("wqueue is %d bytes, want 64", n)
	}
}

// TestReplicaGPUs checks that a replica's GPU list reads back as given, held in its queue
// record up to inlineGPUs GPUs and in wideGPUs beyond, and that setting one replica's list
// leaves the other's alone.
func TestReplicaGPUs(t *testing.T) {
	cases := []struct {
		name string
		gpus []int
		wide bool
	}{
		{"one GPU", []int{7}, false},
		{"two GPUs", []int{0, 3}, false},
		{"as many as the record holds", []int{1, 2, 3, 4, 5}, false},
		{"one more", []int{9, 8, 7, 6, 5, 4}, true},
		{"many", []int{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 1 << 20}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &Policy{queues: make([]wqueue, 2), wideGPUs: make([][]int32, 2)}
			p.setGPUs(1, []int{42})
			p.setGPUs(0, tc.gpus)
			got := p.gpusOf(0)
			if len(got) != len(tc.gpus) {
				t.Fatalf("%d GPUs, want %d", len(got), len(tc.gpus))
			}
			for i, g := range tc.gpus {
				if int(got[i]) != g {
					t.Errorf("GPU %d: %d, want %d", i, got[i], g)
				}
			}
			if (p.wideGPUs[0] != nil) != tc.wide {
				t.Errorf("held outside the record: %v, want %v", p.wideGPUs[0] != nil, tc.wide)
			}
			if o := p.gpusOf(1); len(o) != 1 || o[0] != 42 {
				t.Errorf("the other replica's GPUs: %v, want [42]", o)
			}
		})
	}
}
