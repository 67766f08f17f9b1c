package pard_test

import (
	"fmt"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/sim"
)

const ms = dataplane.Millisecond

// failureSpec is a three-module pipeline: m0 with two workers (a failure there leaves a live
// sibling), m1 with one (a failure there leaves the module with none), m2 with one. With
// dag, m1 and m2 are the branches of a fan-out from m0 that m3 merges.
func failureSpec(dag bool) pard.PipelineSpec {
	lat := func(base dataplane.Time) []dataplane.Time {
		l := make([]dataplane.Time, 5)
		for b := 1; b <= 4; b++ {
			l[b] = base + dataplane.Time(b-1)*base/4
		}
		return l
	}
	mods := []pard.ModuleSpec{
		{Name: "m0", GPU: "T4", Batch: 4, LatUs: lat(8 * ms), Workers: 2},
		{Name: "m1", After: []string{"m0"}, GPU: "T4", Batch: 4, LatUs: lat(5 * ms), Workers: 1},
		{Name: "m2", After: []string{"m1"}, GPU: "T4", Batch: 4, LatUs: lat(4 * ms), Workers: 1},
	}
	if dag {
		mods[2].After = []string{"m0"}
		mods = append(mods, pard.ModuleSpec{Name: "m3", After: []string{"m1", "m2"}, GPU: "T4", Batch: 4, LatUs: lat(3 * ms), Workers: 1})
	}
	return pard.PipelineSpec{Name: "app", SLO: 200 * ms, RateRPS: 400, Modules: mods}
}

// TestWorkerFailure: every pipeline policy takes a worker failure (FailDrop). The run
// drains, even when the failure is permanent and the module has no other worker; requests
// are dropped as worker-failed only while the worker is down; nothing runs on it meanwhile;
// a recovered worker serves again. Before the policies handled EvWorkerDown they waited for
// ever on the lost batch (the worker stayed "busy") or kept queueing at the failed worker.
func TestWorkerFailure(t *testing.T) {
	const at = 400 * ms
	for _, tc := range []struct {
		name   string
		dag    bool
		stage  int // the failed worker is the first of this stage's pool
		until  dataplane.Time
		params map[string]string
	}{
		{name: "sibling-recovers", stage: 0, until: 900 * ms},
		{name: "sibling-permanent", stage: 0},
		{name: "alone-recovers", stage: 1, until: 900 * ms},
		{name: "alone-permanent", stage: 1},
		{name: "dag-branch-recovers", dag: true, stage: 1, until: 900 * ms},
		{name: "dag-branch-permanent", dag: true, stage: 2},
		{name: "dag-branch-cancel", dag: true, stage: 1, until: 900 * ms, params: map[string]string{"sibling_cancel": "1"}},
		{name: "autoscale-permanent", stage: 0, params: map[string]string{"autoscale": "1", "cold_start_s": "0.2"}},
	} {
		for _, pol := range []string{"pard", "pard-back", "nexus", "clipper++", "none", "pard-oc", "pard-fcfs"} {
			t.Run(fmt.Sprintf("%s/%s", tc.name, pol), func(t *testing.T) {
				dep, err := pard.NewPipelineDeployment([]pard.PipelineSpec{failureSpec(tc.dag)}, pard.DefaultHop)
				if err != nil {
					t.Fatal(err)
				}
				p, err := pard.NewPolicy(dataplane.Config{Policy: pol, Params: tc.params})
				if err != nil {
					t.Fatal(err)
				}
				if !dataplane.HandlesFailures(p) {
					t.Fatalf("%s does not take worker failures", pol)
				}
				spec, _ := sim.ParseArrival("poisson")
				src, err := spec.New(dep.Apps[0].RateRPS, dep.Apps[0].Name, 7)
				if err != nil {
					t.Fatal(err)
				}
				w := dep.Stages[tc.stage].Pool[0]
				down := func(x dataplane.Time) bool { return x >= at && (tc.until == 0 || x < tc.until) }
				finished := map[dataplane.ReqID]int{}
				failed := 0
				s, err := sim.New(dep, p, []sim.Source{src}, sim.Options{Duration: 1500 * ms, Seed: 3, Jitter: 0.05,
					Horizon:  60 * dataplane.Second,
					Failures: []sim.Failure{{Worker: w, At: at, Until: tc.until}},
					OnFinish: func(now dataplane.Time, r *dataplane.Request) {
						finished[r.ID]++
						if r.Reason() == dataplane.DropWorkerFailed {
							failed++
							// On a DAG branch the drop decided in the outage is issued at the
							// merge, once the sibling branch got there (maybe after recovery).
							if !down(r.Done) && !(tc.dag && r.Done >= at) {
								t.Errorf("request %d dropped as worker-failed at %d µs, outside the failure", r.ID, r.Done)
							}
						}
					}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Run(); err != nil {
					t.Fatalf("run: %v", err)
				}
				reqs := s.Engine.Requests()
				if len(reqs) == 0 {
					t.Fatal("no requests")
				}
				for i := range reqs {
					r := &reqs[i]
					if r.Outcome == dataplane.Pending {
						t.Fatalf("request %d (arrived %d µs) never finished", r.ID, r.Arrival)
					}
					if finished[r.ID] != 1 {
						t.Fatalf("request %d finished %d times", r.ID, finished[r.ID])
					}
				}
				if failed == 0 && tc.stage == 1 && !tc.dag {
					t.Error("no request dropped as worker-failed: the failure hit nothing")
				}
				ranAfter, ranElsewhere := false, false
				for _, b := range s.Engine.Batches() {
					for i, h := range b.Hops {
						if b.Lost || h.Start < 0 {
							continue
						}
						if h.Worker == w && h.End > at && (tc.until == 0 || h.Start < tc.until) {
							t.Errorf("batch %d hop %d ran on the failed worker at [%d, %d)", b.ID, i, h.Start, h.End)
						}
						ranAfter = ranAfter || h.Worker == w && tc.until > 0 && h.Start >= tc.until
						ranElsewhere = ranElsewhere || h.Stage == dataplane.StageID(tc.stage) && h.Worker != w && down(h.Start)
					}
				}
				if tc.until > 0 && !ranAfter {
					t.Error("the worker ran nothing after it came back")
				}
				if len(dep.Stages[tc.stage].Pool) > 1 && !ranElsewhere {
					t.Error("the module's live worker served nothing during the failure")
				}
			})
		}
	}
}
