package dyorc

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/sim"
)

// checkQueueIndex reports where the scheduler's queue indexes disagree with its queues: each
// GPU's per-service count (device.qn) and each request's queued tasks with their GPUs
// (reqState.qdevs).
func checkQueueIndex(p *Policy) error {
	held := map[dataplane.ReqID][]qtask{}
	for d := range p.devs {
		dv := &p.devs[d]
		n := make([]int32, len(dv.qn))
		for _, t := range dv.queue {
			n[t.svc]++
			held[t.req] = append(held[t.req], qtask{d, t})
		}
		if !slices.Equal(n, dv.qn) {
			return fmt.Errorf("GPU %d: per-service counts %v, queue holds %v", d, dv.qn, n)
		}
	}
	bySeq := func(a, b qtask) int { return cmp.Compare(a.t.seq, b.t.seq) }
	for r, rs := range p.reqs.all() {
		got := slices.SortedFunc(slices.Values(rs.qdevs), bySeq)
		want := held[r]
		slices.SortFunc(want, bySeq)
		if !slices.Equal(got, want) {
			return fmt.Errorf("request %d: indexed %v, queued %v", r, got, want)
		}
	}
	return nil
}

// TestQueueIndex runs the scale benchmark's overloaded point (128 GPUs at 16× the rates, where
// the scheduler sheds and cancels queued tasks) and checks the queue indexes against the queues
// every few events, for DyOrc and the Ray-like router.
func TestQueueIndex(t *testing.T) {
	w := loadWorkflow(t, "workload.json")
	for _, pol := range []string{"dyorc", "dyorc-ray"} {
		t.Run(pol, func(t *testing.T) {
			const k = 16
			dep := spreadDeployment(t, w, 8*k)
			sp, _ := Registry().Lookup(pol)
			pp, err := sp.New(dataplane.Config{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			p := pp.(*Policy)
			var srcs []sim.Source
			for a := range dep.Apps {
				s, err := sim.ArrivalSpec{Kind: "poisson"}.New(max(dep.Apps[a].RateRPS, 0.5)*k, dep.Apps[a].Name, uint64(a)+1)
				if err != nil {
					t.Fatal(err)
				}
				srcs = append(srcs, s)
			}
			s, err := sim.New(dep, p, srcs, sim.Options{Duration: 20 * dataplane.Second, Seed: 1, Jitter: 0.05})
			if err != nil {
				t.Fatal(err)
			}
			n, bad := 0, error(nil)
			s.Engine.Observe(func(dataplane.Time, *dataplane.Event, []dataplane.Decision) {
				if n++; bad == nil && n%64 == 0 {
					bad = checkQueueIndex(p)
				}
			})
			if _, err := s.Run(); err != nil {
				t.Fatal(err)
			}
			if bad == nil {
				bad = checkQueueIndex(p)
			}
			if bad != nil {
				t.Fatal(bad)
			}
			if p.st.Overloads == 0 && pol == "dyorc" {
				t.Errorf("never overloaded: the run did not exercise purge and cancel")
			}
		})
	}
}
