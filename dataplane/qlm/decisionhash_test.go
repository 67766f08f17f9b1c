package qlm

import (
	"fmt"
	"os"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/fixture/policytest"
	"github.com/plan-dev/plan/sim"
)

// TestSimScaleDecisionHash runs BenchmarkSimScale's points (the 128-instance ones with
// PLAN_SCALE_HASH_FULL=1), with and without engine compaction (which calls Forget), and
// checks the decision-stream hash against the recorded one: compaction (Forget) and anything
// that does not mean to change the schedule must not change a single decision.
func TestSimScaleDecisionHash(t *testing.T) {
	// Recorded with the current engine model (chunked prefill, mixed steps, the
	// output delay): the schedule changed by design; before it, at e3a0a60. QLM at 8 and 32
	// instances re-recorded when placement counted the group's own model swap.
	// Re-recorded when an idle instance's outputs came to wait for its output-only step
	// (dataplane/llm/outputstep.go): every completion on an instance going idle is a decode
	// step later.
	want := map[string]string{
		"qlm/instances=8/compact=false":             "c4d0103d3bb5f8d7",
		"qlm/instances=8/compact=true":              "c4d0103d3bb5f8d7",
		"qlm/instances=32/compact=false":            "62aa23530cd6d098",
		"qlm/instances=32/compact=true":             "62aa23530cd6d098",
		"qlm/instances=128/compact=false":           "052b3f85effe869a",
		"qlm/instances=128/compact=true":            "052b3f85effe869a",
		"qlm-vllm-fcfs/instances=8/compact=false":   "84c186b4edbbc41b",
		"qlm-vllm-fcfs/instances=8/compact=true":    "84c186b4edbbc41b",
		"qlm-vllm-fcfs/instances=32/compact=false":  "fda4c2aaca8884c7",
		"qlm-vllm-fcfs/instances=32/compact=true":   "fda4c2aaca8884c7",
		"qlm-vllm-fcfs/instances=128/compact=false": "b62d1946731bc2ba",
		"qlm-vllm-fcfs/instances=128/compact=true":  "b62d1946731bc2ba",
	}
	full := os.Getenv("PLAN_SCALE_HASH_FULL") != ""
	for _, pol := range []string{PolicyQLM, PolicyFCFS} {
		for _, k := range []int{1, 4, 16} {
			for _, compact := range []bool{false, true} {
				dep := scaledDeployment(t, k)
				name := fmt.Sprintf("%s/instances=%d/compact=%v", pol, len(dep.Topo.Workers), compact)
				if k > 4 && !full {
					continue
				}
				t.Run(name, func(t *testing.T) {
					p, err := Registry().New(dep, dataplane.Config{Policy: pol, Params: paperAdmission}, PolicyQLM)
					if err != nil {
						t.Fatal(err)
					}
					spec, _ := sim.ParseArrival("poisson")
					var srcs []sim.Source
					for a := range dep.Apps {
						s, err := spec.New(dep.Apps[a].RateRPS, dep.Apps[a].Name, uint64(a)+1)
						if err != nil {
							t.Fatal(err)
						}
						srcs = append(srcs, s)
					}
					o := sim.Options{Duration: 10 * dataplane.Second, Seed: 1}
					if compact {
						o.CompactEvery = 2000
					}
					s, err := sim.New(dep, p, srcs, o)
					if err != nil {
						t.Fatal(err)
					}
					h := &policytest.DecisionHasher{NumbersFirst: true, Skip: firstToken}
					s.Engine.Observe(h.Observe)
					if _, err := s.Run(); err != nil {
						t.Fatal(err)
					}
					got := h.Sum()
					t.Logf("%s: hash %s events %d", name, got, s.Engine.Events())
					if w := want[name]; w != got {
						t.Errorf("%s: decision hash %s, want %s", name, got, w)
					}
				})
			}
		}
	}
}

// firstToken leaves first-token records out of the decision hash: they say when a token
// reached its client, not what the scheduler decided.
func firstToken(x *dataplane.Decision) bool { return x.Kind == dataplane.DFirstToken }
