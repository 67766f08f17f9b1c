package cascade_test

import (
	"errors"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/sim"
)

// oneModel is the example plan cut down to bert-base on the given GPUs (one replica each),
// one gear.
func oneModel(t *testing.T, gpus ...int) *dataplane.Deployment {
	t.Helper()
	plan := examplePlan(t)
	cp := *cascadesec.PlanOf(plan)
	cp.Placement = nil
	var share []float64
	for _, g := range gpus {
		cp.Placement = append(cp.Placement, cascadesec.Replica{Model: "bert-base", GPUs: []int{g}})
		share = append(share, 1/float64(len(gpus)))
	}
	cp.Gears = []cascadesec.Gear{{QLo: 0, QHi: 14000, Models: []string{"bert-base"}, Thr: []float64{},
		Share: map[string][]float64{"bert-base": share}, Trigger: map[string]int{"bert-base": 1}}}
	cascadesec.SetPlan(plan, &cp)
	dep, err := dpc.FromPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// TestWorkerFailure fails one worker (a model replica) mid-run, for a while or for good,
// under every policy of the data plane. The run must drain: every request finishes exactly
// once, the policy forgets the failed replica's lost batch and load instead of waiting for
// them, routes its requests to the live replicas of the same model (FailReroute: no request
// is dropped while one is live), drops them as worker-failed, and only during the failure,
// when none is, and runs nothing on the down worker; a returning replica serves again.
func TestWorkerFailure(t *testing.T) {
	full, err := dpc.FromPlan(examplePlan(t))
	if err != nil {
		t.Fatal(err)
	}
	two, single := oneModel(t, 0, 1), oneModel(t, 0)
	const at, until = 1500 * dataplane.Millisecond, 3500 * dataplane.Millisecond
	tests := []struct {
		name   string
		dep    *dataplane.Deployment
		policy string
		params map[string]string
		worker dataplane.WorkerID
		until  dataplane.Time
		// drops: requests must be dropped as worker-failed (no live replica); back: the
		// worker must run a batch after it is back.
		drops, back bool
	}{
		{"cascadeserve/first model/recovers", full, dpc.PolicyGears, nil, 4, until, false, true},
		{"cascadeserve/first model/permanent", full, dpc.PolicyGears, nil, 4, 0, false, false},
		{"cascadeserve/later model/recovers", full, dpc.PolicyGears, nil, 2, until, false, true},
		{"cascadeserve/lazy loading/recovers", full, dpc.PolicyGears, map[string]string{"preload": "false"}, 4, until, false, true},
		{"cascade-noswitch/permanent", full, dpc.PolicyNoSwitch, nil, 3, 0, false, false},
		{"cascadeserve/two replicas/permanent", two, dpc.PolicyGears, nil, 0, 0, false, false},
		{"cascadeserve/only replica/recovers", single, dpc.PolicyGears, nil, 0, until, true, true},
		{"cascadeserve/only replica/permanent", single, dpc.PolicyGears, nil, 0, 0, true, false},
		{"cocktail+/active replica/recovers", two, dpc.PolicyCocktail, map[string]string{"packing": "5000"}, 0, until, false, false},
		{"cocktail+/active replica/permanent", two, dpc.PolicyCocktail, map[string]string{"packing": "5000"}, 0, 0, false, false},
		{"cocktail+/only replica/permanent", single, dpc.PolicyCocktail, map[string]string{"packing": "5000"}, 0, 0, true, false},
	}
	rates := []float64{400, 400, 400, 400, 400, 400}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := dpc.Registry().New(tc.dep, dataplane.Config{Policy: tc.policy, Params: tc.params}, dpc.PolicyGears)
			if err != nil {
				t.Fatal(err)
			}
			end := tc.until
			if end == 0 {
				end = 1 << 62
			}
			finished := map[dataplane.ReqID]int{}
			var failed int
			s, err := sim.New(tc.dep, pol, []sim.Source{steps(rates)}, sim.Options{Duration: 6 * dataplane.Second, Seed: 1,
				Horizon:  600 * dataplane.Second,
				Failures: []sim.Failure{{Worker: tc.worker, At: at, Until: tc.until}},
				OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
					finished[r.ID]++
					if r.Outcome != dataplane.Dropped {
						return
					}
					if r.Reason() != dataplane.DropWorkerFailed {
						t.Errorf("request %d dropped (%s): only a failure drops", r.ID, r.Reason())
					}
					failed++
					if r.Done < at || r.Done >= end {
						t.Errorf("request %d dropped as worker-failed at %d µs, outside the failure", r.ID, r.Done)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Run(); err != nil {
				if errors.Is(err, sim.ErrHorizon) {
					t.Fatalf("the run never drained: %v", err)
				}
				t.Fatal(err)
			}
			reqs := s.Engine.Requests()
			if len(reqs) != 2400 {
				t.Fatalf("%d requests, want 2400", len(reqs))
			}
			for i := range reqs {
				r := &reqs[i]
				if r.Outcome == dataplane.Pending || finished[r.ID] != 1 {
					t.Fatalf("request %d: outcome %v, finished %d times", r.ID, r.Outcome, finished[r.ID])
				}
			}
			if (failed > 0) != tc.drops {
				t.Errorf("%d requests dropped as worker-failed; want drops %v", failed, tc.drops)
			}
			var before, after bool
			for _, b := range s.Engine.Batches() {
				if b.Lost {
					continue
				}
				for i, h := range b.Hops {
					if h.Worker != tc.worker || h.Start < 0 {
						continue
					}
					if h.End > at && h.Start < end {
						t.Errorf("batch %d hop %d ran on the failed worker at [%d, %d)", b.ID, i, h.Start, h.End)
					}
					before = before || h.Start < at
					after = after || h.Start >= end
				}
			}
			if !before {
				t.Error("the worker ran nothing before it failed: the failure hit nothing")
			}
			if after != tc.back {
				t.Errorf("the worker ran after it was back: %v, want %v", after, tc.back)
			}
			t.Logf("%d requests, %d dropped as worker-failed", len(reqs), failed)
		})
	}
}
