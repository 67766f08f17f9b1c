package ppipe

import (
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/fixture/policytest"
	"github.com/plan-dev/plan/sim"
)

// twoStage is one application served by one two-stage pipeline (batch 2; 10 ms and 5 ms at
// batch 1, half as much again at 2; one worker per stage on its own server) with the SLO.
func twoStage(slo dataplane.Time) *dataplane.Deployment {
	d := &dataplane.Deployment{Kind: Kind}
	for s := 0; s < 2; s++ {
		d.Topo.Servers = append(d.Topo.Servers, dataplane.Server{Name: fmt.Sprintf("srv%d", s), UpMbps: 10000, DownMbps: 10000})
		d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: "L4", Server: dataplane.ServerID(s)})
		d.Topo.Workers = append(d.Topo.Workers, dataplane.Worker{Name: fmt.Sprintf("w%d", s), GPU: s,
			Server: dataplane.ServerID(s), Type: "L4", VGPU: 1, Stage: dataplane.StageID(s)})
	}
	for k, lat := range []dataplane.Time{10000, 5000} {
		st := dataplane.Stage{Name: fmt.Sprintf("s%d", k), Pipeline: 0, Index: k, Batch: 2,
			LatUs: []dataplane.Time{0, lat, lat * 3 / 2}, Pool: []dataplane.WorkerID{dataplane.WorkerID(k)}}
		if k == 0 {
			st.Next = []dataplane.StageID{1}
			st.OutBytes = 1000
		}
		d.Stages = append(d.Stages, st)
	}
	d.Apps = []dataplane.App{{Name: "m", Weight: 1, Entry: []dataplane.StageID{0},
		Pipelines: [][]dataplane.StageID{{0, 1}}, SLO: slo, RateRPS: 100}}
	return d
}

// ppipeState is the per-request state a policy of this package keeps (entries held).
func ppipeState(p dataplane.Policy) int {
	switch p := p.(type) {
	case *PPipe:
		return p.seen.Size()
	case *Reactive:
		return p.examined.Size()
	}
	panic(fmt.Sprintf("unknown policy %T", p))
}

// TestCancel withdraws requests of every PPipe policy: one waiting in a
// queue for its batch to fill, one a dispatched batch holds. The queued one must leave the
// queue (the engine rejects a dispatch of a finished request, and the driver fails on any
// dispatch of a withdrawn one), every request finishes exactly once, the withdrawn queued
// one as cancelled, and the policy keeps nothing for it.
func TestCancel(t *testing.T) {
	for _, name := range []string{"ppipe", "ppipe-paper", "reactive"} {
		t.Run(name, func(t *testing.T) {
			pol, err := NewPolicy(dataplane.Config{Policy: name})
			if err != nil {
				t.Fatal(err)
			}
			d, err := policytest.New(twoStage(200*dataplane.Millisecond), pol)
			if err != nil {
				t.Fatal(err)
			}
			// r0, r1 fill a batch at once; r2 waits for a partner.
			var ids []dataplane.ReqID
			for i := 0; i < 3; i++ {
				id, err := d.Arrive(dataplane.Time(i), 0)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if d.Dispatched[ids[0]] != 1 || d.Dispatched[ids[2]] != 0 {
				t.Fatalf("set-up: dispatched %v, want r0 in flight and r2 queued", d.Dispatched)
			}
			// Withdraw the queued r2 and the in-flight r0.
			for _, id := range []dataplane.ReqID{ids[2], ids[0]} {
				if ok, err := d.Cancel(100, id); err != nil || !ok {
					t.Fatalf("cancel r%d: %v, %v", id, ok, err)
				}
			}
			if got := d.Outcome[ids[2]]; got != "dropped/cancelled" {
				t.Fatalf("queued r2 finished as %q, want dropped/cancelled", got)
			}
			// r3 must not be batched with the withdrawn r2; r4 partners it.
			for i := 3; i < 5; i++ {
				id, err := d.Arrive(200+dataplane.Time(i), 0)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if err := d.Drain(10 * dataplane.Second); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if d.Finished[id] != 1 {
					t.Errorf("r%d finished %d times (%s)", id, d.Finished[id], d.Outcome[id])
				}
			}
			if d.Dispatched[ids[2]] != 0 {
				t.Errorf("cancelled queued r2 was dispatched")
			}
			for _, id := range ids[3:] {
				if d.Outcome[id] != "completed/" {
					t.Errorf("r%d: %s, want completed", id, d.Outcome[id])
				}
			}
		})
	}
}

// TestForget pushes requests through every PPipe policy with the engine compacting every 64
// events: with Forget the policy's per-request table holds only the requests in flight,
// and its decisions are those of the same run without compaction.
func TestForget(t *testing.T) {
	const n = 4000
	// ppipe-paper runs without the admission refinement, so it marks nothing: only its
	// decisions are compared.
	for _, tc := range []struct {
		name  string
		marks bool
	}{{"ppipe", true}, {"ppipe-paper", false}, {"reactive", true}} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			var hashes [2]uint64
			var sizes [2]int
			for i, forget := range []bool{false, true} {
				pol, err := NewPolicy(dataplane.Config{Policy: name})
				if err != nil {
					t.Fatal(err)
				}
				// Tight SLO: some requests wait at the head (admission marks, timers) and
				// some are dropped.
				d, err := policytest.New(twoStage(40*dataplane.Millisecond), pol)
				if err != nil {
					t.Fatal(err)
				}
				d.Forget = forget
				for k := 0; k < n; k++ {
					// ~190 requests/s against a capacity of 200/s, in uneven gaps.
					at := dataplane.Time(k)*5200 + dataplane.Time(k*7919%3000)
					if _, err := d.Arrive(at, 0); err != nil {
						t.Fatal(err)
					}
					if forget && d.Engine.Events()%64 == 0 {
						d.Compact()
					}
				}
				if err := d.Drain(n * 10 * dataplane.Millisecond); err != nil {
					t.Fatal(err)
				}
				hashes[i], sizes[i] = d.Hash(), ppipeState(pol)
			}
			if hashes[0] != hashes[1] {
				t.Errorf("decisions differ with Forget: %x vs %x", hashes[0], hashes[1])
			}
			if !tc.marks {
				return
			}
			if sizes[0] < n/4 {
				t.Fatalf("without Forget the table holds %d entries: the run marks too few requests to test Forget", sizes[0])
			}
			if sizes[1] > 64 {
				t.Errorf("with Forget the table holds %d entries after %d requests (without: %d), want ≤ 64", sizes[1], n, sizes[0])
			}
		})
	}
}

// TestStateBoundedInSim runs every PPipe policy in the simulator near capacity with cancels,
// the engine compacting (and calling Forget) every 4,096 events: at the end the policy's
// per-request table spans under a fifth of the run's requests, and the decisions match the
// run without compaction.
func TestStateBoundedInSim(t *testing.T) {
	dep := twoStage(40 * dataplane.Millisecond)
	for _, tc := range []struct {
		name  string
		marks bool
	}{{"ppipe", true}, {"ppipe-paper", false}, {"reactive", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var hashes [2]uint64
			for i, compact := range []int64{0, 1 << 12} {
				pol, err := NewPolicy(dataplane.Config{Policy: tc.name})
				if err != nil {
					t.Fatal(err)
				}
				src, err := sim.ArrivalSpec{Kind: "poisson"}.New(190, "m", 3)
				if err != nil {
					t.Fatal(err)
				}
				h := fnv.New64a()
				s, err := sim.New(dep, pol, []sim.Source{src}, sim.Options{Duration: 50 * dataplane.Second, Seed: 3, Jitter: 0.05,
					CompactEvery: compact, CancelFraction: 0.1,
					Observe: func(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
						fmt.Fprintln(h, now, ev.Kind, ev.Req, ds)
					}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Run(); err != nil {
					t.Fatal(err)
				}
				hashes[i] = h.Sum64()
				total := int(s.Engine.NextRequestID())
				size := ppipeState(pol)
				t.Logf("compact %d: %d requests, table spans %d", compact, total, size)
				if compact > 0 && size > total/5 {
					t.Errorf("%d requests: the table spans %d (bound %d)", total, size, total/5)
				}
				if compact == 0 && tc.marks && size < total/2 {
					t.Errorf("without compaction the table spans %d of %d requests: too few marked to test Forget", size, total)
				}
			}
			if hashes[0] != hashes[1] {
				t.Errorf("decisions differ with compaction")
			}
		})
	}
}
