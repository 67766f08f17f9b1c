package dyorc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestSparseCutMatchesAll: the sparse layers' best-first visit of the busy holders
// (evalBusy), cut where the running batch's end shows no later holder can matter, chooses the
// same GPUs with the same finishes and states as the sparse layers evaluating every holder
// (allHolders) and as the DP over every GPU (dpFlat), on random GPU states with many running
// batches ending at spread times (ties at 1 ms); the kept order (byEnd) is checked at every
// sync (Policy.check), and the cut must have been taken.
func TestSparseCutMatchesAll(t *testing.T) {
	w := loadWorkflow(t, "workload.json")
	ns := len(w.Services)
	cases := []struct {
		gpus, per int
		literal   bool
		seed      uint64
	}{
		{16, 8, false, 11}, {33, 8, false, 12}, {64, 4, true, 13}, {128, 8, false, 14}, {130, 8, true, 15},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("gpus=%d/per=%d/literal=%v", tc.gpus, tc.per, tc.literal), func(t *testing.T) {
			r := rand.New(rand.NewPCG(tc.seed, 29))
			dep, err := NewDeployment(w, Cluster{GPUs: tc.gpus, PerServer: tc.per, MemBytes: 80e9, Type: "A800"}, make([][]int, tc.gpus), DefaultNet)
			if err != nil {
				t.Fatal(err)
			}
			var cuts, layers int64
			for iter := 0; iter < 40; iter++ {
				now := dataplane.Time(1e6)
				p := randomPolicy(t, dep, tc.literal, r, now)
				// More running batches than randomStates gives, ending over 0–200 ms.
				for d := range p.devs {
					if r.IntN(3) == 0 && p.down[d] == 0 {
						p.devs[d].running, p.devs[d].runEnd = true, now+dataplane.Time(r.IntN(200))*1000
						p.touch(d)
					}
				}
				G := tc.gpus
				for call := 0; call < 6; call++ {
					c := randomCall(r, ns, G, now)
					svcs, its, src := c.svcs, c.its, c.src
					p.check, p.sparseAll = true, true
					c0 := p.idle.cuts
					devs, hs, states := c.dp(p, now)
					cuts += p.idle.cuts - c0
					layers += int64(len(svcs))
					p.allHolders = true
					aDevs, aHs, aStates := c.dp(p, now)
					p.check, p.sparseAll, p.allHolders, p.flat = false, false, false, true
					fDevs, fHs, fStates := c.dp(p, now)
					p.flat = false
					if !reflect.DeepEqual(devs, aDevs) || !reflect.DeepEqual(hs, aHs) || states != aStates ||
						!reflect.DeepEqual(devs, fDevs) || !reflect.DeepEqual(hs, fHs) || states != fStates {
						t.Fatalf("iter %d, chain %v items %v from GPU %d: cut %v %v %d, every holder %v %v %d, flat %v %v %d",
							iter, svcs, its, src, devs, hs, states, aDevs, aHs, aStates, fDevs, fHs, fStates)
					}
					// The next call sees one GPU changed: a task queued, or its batch's end moved.
					d := r.IntN(G)
					if r.IntN(2) == 0 {
						p.devs[d].enqueue(&task{svc: svcs[0], items: its[0], ready: now + dataplane.Time(r.IntN(50))*1000, seq: int64(1000 + call)})
					} else {
						p.devs[d].running, p.devs[d].runEnd = true, now+dataplane.Time(r.IntN(200))*1000
					}
					p.touch(d)
				}
			}
			if cuts == 0 {
				t.Errorf("no layer of %d cut short: the test does not reach the cut", layers)
			}
			t.Logf("%d of %d layers cut short", cuts, layers)
		})
	}
}

// TestBestServersIn: over the servers of a sparse layer's candidates (every other server
// holding no GPU), bestServersIn picks the servers bestServers picks over all of them, ties
// of finishes (to the lowest GPU) and NaN finishes included.
func TestBestServersIn(t *testing.T) {
	for _, nsrv := range []int{1, 2, 16, 64} {
		r := rand.New(rand.NewPCG(uint64(nsrv), 9))
		for iter := 0; iter < 2000; iter++ {
			sm := make([]srvBest, nsrv)
			var srvs uint64
			for s := range sm {
				sm[s] = srvBest{v1: math.Inf(1), v2: math.Inf(1), a1: -1, a2: -1}
				if r.IntN(3) > 0 {
					continue
				}
				srvs |= 1 << s
				for g := 0; g < 1+r.IntN(3); g++ {
					v := float64(r.IntN(5))
					if r.IntN(20) == 0 {
						v = math.NaN()
					}
					sm[s].add(v, s*8+r.IntN(8))
				}
			}
			a1, a2 := bestServers(sm)
			if b1, b2 := bestServersIn(sm, srvs); a1 != b1 || a2 != b2 {
				t.Fatalf("%d servers, iter %d: %d, %d; want %d, %d (%+v)", nsrv, iter, b1, b2, a1, a2, sm)
			}
		}
	}
}
