package dyorc

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestReqTable checks the request table against a map under random sets and deletes, in
// windows that move forward (as the engine numbers requests) and with IDs out of order.
func TestReqTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int // IDs are drawn from [next-window, next+ahead)
		ahead  int
		ops    int
	}{
		{"in order", 1, 1, 20000},
		{"moving window", 3000, 1, 20000},
		{"out of order", 3000, 2500, 20000},
		{"wide", 9000, 9000, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var tab reqTable
			ref := map[dataplane.ReqID]*reqState{}
			next := 5000
			for op := 0; op < tc.ops; op++ {
				id := dataplane.ReqID(max(next-tc.window+rng.IntN(tc.window+tc.ahead), 0))
				if id >= dataplane.ReqID(next) {
					next = int(id) + 1
				}
				if ref[id] == nil && rng.IntN(2) == 0 {
					rs := &reqState{app: int(id)}
					tab.set(id, rs)
					ref[id] = rs
				} else {
					tab.del(id)
					delete(ref, id)
				}
				if got := tab.get(id); got != ref[id] {
					t.Fatalf("op %d: get(%d) = %p, want %p", op, id, got, ref[id])
				}
				if tab.len() != len(ref) {
					t.Fatalf("op %d: len %d, want %d", op, tab.len(), len(ref))
				}
			}
			got := maps.Collect(tab.all())
			if !maps.Equal(got, ref) {
				t.Fatalf("all() yields %d requests, want %d", len(got), len(ref))
			}
			prev := dataplane.ReqID(-1)
			for id := range tab.all() {
				if id <= prev {
					t.Fatalf("all() yields %d after %d", id, prev)
				}
				prev = id
			}
			if tab.get(-1) != nil || tab.get(dataplane.ReqID(next+1<<20)) != nil {
				t.Fatal("get outside the window is not nil")
			}
		})
	}
}
