package pard

import (
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/fixture/policytest"
	"github.com/plan-dev/plan/sim"
)

// cancelDeployment is a two-module chain (batch 2, 10 and 15 ms at batch 1, one worker
// each) or, with dag, a fan-out from the entry into two branches that merge at the sink.
func cancelDeployment(t *testing.T, slo dataplane.Time, dag bool) *dataplane.Deployment {
	t.Helper()
	lat := func(base dataplane.Time) []dataplane.Time { return []dataplane.Time{0, base, base * 3 / 2} }
	mods := []ModuleSpec{
		{Name: "a", Batch: 2, LatUs: lat(10000), Workers: 1},
		{Name: "b", Batch: 2, LatUs: lat(15000), Workers: 1, After: []string{"a"}},
	}
	if dag {
		mods = append(mods, ModuleSpec{Name: "c", Batch: 2, LatUs: lat(12000), Workers: 1, After: []string{"a"}},
			ModuleSpec{Name: "d", Batch: 2, LatUs: lat(5000), Workers: 1, After: []string{"b", "c"}})
	}
	dep, err := NewPipelineDeployment([]PipelineSpec{{Name: "app", SLO: slo, RateRPS: 100, Modules: mods}}, DefaultHop)
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// TestCancel withdraws requests under every pipeline policy: r0 while
// its batch runs at the first module, r1 from the forming batch, r4 from the worker's
// priority queue. The policy must never dispatch a withdrawn request (the engine rejects a
// finished one; the driver fails on any), every request finishes exactly once, those
// withdrawn as cancelled, and no queue or forming batch keeps them.
func TestCancel(t *testing.T) {
	for _, name := range PipelinePolicies() {
		t.Run(name, func(t *testing.T) {
			pol, err := NewPolicy(dataplane.Config{Policy: name, Params: map[string]string{"samples": "100"}})
			if err != nil {
				t.Fatal(err)
			}
			d, err := policytest.New(cancelDeployment(t, dataplane.Second, false), pol)
			if err != nil {
				t.Fatal(err)
			}
			var ids []dataplane.ReqID
			for i := 0; i < 6; i++ {
				id, err := d.Arrive(dataplane.Time(1+i), 0)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			p := PipelineOf(pol)
			w := &p.workers[p.mods[0].workers[0]]
			if d.Dispatched[ids[0]] != 1 || len(w.forming) != 2 || w.q.Len() != 3 {
				t.Fatalf("set-up: dispatched %v, forming %v, %d queued; want r0 running, r1 r2 forming, r3-r5 queued",
					d.Dispatched, w.forming, w.q.Len())
			}
			for _, id := range []dataplane.ReqID{ids[1], ids[4], ids[0]} {
				if ok, err := d.Cancel(100, id); err != nil || !ok {
					t.Fatalf("cancel r%d: %v, %v", id, ok, err)
				}
			}
			for _, id := range []dataplane.ReqID{ids[1], ids[4]} {
				if got := d.Outcome[id]; got != "dropped/cancelled" {
					t.Errorf("r%d finished as %q, want dropped/cancelled", id, got)
				}
				if w.q.Remove(id) {
					t.Errorf("r%d is still in the worker's queue", id)
				}
				for _, f := range w.forming {
					if f == id {
						t.Errorf("r%d is still in the forming batch %v", id, w.forming)
					}
				}
			}
			if err := d.Drain(60 * dataplane.Second); err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				if d.Finished[id] != 1 {
					t.Errorf("r%d finished %d times", id, d.Finished[id])
				}
				switch want := "completed/"; {
				case i == 0 || i == 1 || i == 4:
					if got := d.Outcome[id]; got != "dropped/cancelled" {
						t.Errorf("r%d: %s, want dropped/cancelled", id, got)
					}
				case d.Outcome[id] != want:
					t.Errorf("r%d: %s, want %s", id, d.Outcome[id], want)
				}
			}
			if d.Dispatched[ids[1]] != 0 || d.Dispatched[ids[4]] != 0 {
				t.Errorf("a request cancelled while queued was dispatched: %v", d.Dispatched)
			}
		})
	}
}

// TestForget pushes requests through every pipeline policy, over capacity so requests are
// dropped (each drop sets a flag), on a chain and on a DAG (join counts, decided drops),
// with the engine compacting every 64 events: with Forget the policy's per-request flags
// span only the requests in flight and its maps hold nothing of retired ones, and its
// decisions are those of the same run without compaction.
func TestForget(t *testing.T) {
	const n = 3000
	for _, dag := range []bool{false, true} {
		for _, name := range PipelinePolicies() {
			t.Run(name+map[bool]string{false: "/chain", true: "/dag"}[dag], func(t *testing.T) {
				var hashes [2]uint64
				var sizes [2]int
				for i, forget := range []bool{false, true} {
					pol, err := NewPolicy(dataplane.Config{Policy: name, Params: map[string]string{"samples": "100"}})
					if err != nil {
						t.Fatal(err)
					}
					d, err := policytest.New(cancelDeployment(t, 80*dataplane.Millisecond, dag), pol)
					if err != nil {
						t.Fatal(err)
					}
					d.Forget = forget
					for k := 0; k < n; k++ {
						// ~190 requests/s in uneven gaps against ~100/s of capacity.
						at := dataplane.Time(k)*5200 + dataplane.Time(k*7919%3000)
						if _, err := d.Arrive(at, 0); err != nil {
							t.Fatal(err)
						}
						if forget && d.Engine.Events()%64 == 0 {
							d.Compact()
						}
					}
					if err := d.Drain(n * 40 * dataplane.Millisecond); err != nil {
						t.Fatal(err)
					}
					if forget {
						d.Compact()
					}
					p := PipelineOf(pol)
					hashes[i], sizes[i] = d.Hash(), p.flags.Size()
					if forget && len(p.doomed)+len(p.deferred)+len(p.join) > 0 {
						t.Errorf("after the last compaction: %d doomed, %d deferred, %d join entries", len(p.doomed), len(p.deferred), len(p.join))
					}
				}
				if hashes[0] != hashes[1] {
					t.Errorf("decisions differ with Forget: %x vs %x", hashes[0], hashes[1])
				}
				if name == "none" {
					return // the naive baseline never drops: it marks nothing, only its decisions compare
				}
				if sizes[0] < n/4 {
					t.Fatalf("without Forget the flags hold %d entries: the run drops too few requests to test Forget", sizes[0])
				}
				if sizes[1] > 64 {
					t.Errorf("with Forget the flags hold %d entries after %d requests (without: %d), want ≤ 64", sizes[1], n, sizes[0])
				}
			})
		}
	}
}

// TestStateBoundedInSim runs every pipeline policy in the simulator over capacity, with
// cancels, the engine compacting (and calling Forget) every 4,096 events: at the end the
// X
// hold nothing of finished ones, and the decisions match the run without compaction
// (state depends on what is in flight, not on how many requests passed).
func TestStateBoundedInSim(t *testing.T) {
	dep := cancelDeployment(t, 80*dataplane.Millisecond, true)
	for _, name := range PipelinePolicies() {
		t.Run(name, func(t *testing.T) {
			var hashes [2]uint64
			for i, compact := range []int64{0, 1 << 12} {
				pol, err := NewPolicy(dataplane.Config{Policy: name, Params: map[string]string{"samples": "100"}})
				if err != nil {
					t.Fatal(err)
				}
				src, err := sim.ArrivalSpec{Kind: "poisson"}.New(250, "app", 3)
				if err != nil {
					t.Fatal(err)
				}
				h := fnv.New64a()
				s, err := sim.New(dep, pol, []sim.Source{src}, sim.Options{Duration: 40 * dataplane.Second, Seed: 3, Jitter: 0.05,
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
				total := int(s.Engine.NextRequestID())
				hashes[i] = h.Sum64()
				p := PipelineOf(pol)
				t.Logf("compact %d: %d requests, flags span %d", compact, total, p.flags.Size())
				if compact == 0 || name == "clipper++-enqueue" {
					// clipper++-enqueue never drops at the entry module (nothing has elapsed
					// there), so over capacity its queue, all in flight, grows with the run.
					continue
				}
				if bound := total / 5; p.flags.Size() > bound {
					t.Errorf("%d requests: the flags span %d (bound %d)", total, p.flags.Size(), bound)
				}
				if n := len(p.doomed) + len(p.deferred) + len(p.join); n > 100 {
					t.Errorf("%d doomed, deferred or join entries left", n)
				}
			}
			if hashes[0] != hashes[1] {
				t.Errorf("decisions differ with compaction")
			}
		})
	}
}
