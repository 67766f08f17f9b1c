package pard

import (
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestSampleAccepted: every pipeline policy accepts every deployment Sample builds. Sample used to build two-sink graphs that every policy refuses, and the
// conformance harness then passed with nothing run.
func TestSampleAccepted(t *testing.T) {
	dags := 0
	for seed := uint64(1); seed <= 200; seed++ {
		dep := Sample(rand.New(rand.NewPCG(seed, 0)))
		if err := dep.Validate(); err != nil {
			t.Fatalf("seed %d: invalid deployment: %v", seed, err)
		}
		for _, st := range dep.Stages {
			if len(st.Next) > 1 {
				dags++
			}
			// The planned rate must be one the starting workers sustain: the harness's
			// loads below 1 (its bounded-table run at 0.5) would else overload the naive
			// baseline, whose queues then grow for ever.
			active := len(st.Pool)
			if st.Active > 0 {
				active = st.Active
			}
			if c := float64(active*st.Batch) / (float64(st.Lat(st.Batch)) / 1e6); dep.Apps[0].RateRPS > c*(1+1e-9) {
				t.Fatalf("seed %d: planned rate %.1f/s above module %s's capacity %.1f/s", seed, dep.Apps[0].RateRPS, st.Name, c)
			}
		}
		for _, name := range PipelinePolicies() {
			pol, err := NewPolicy(dataplane.Config{Policy: name, Params: map[string]string{"samples": "10"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dataplane.NewEngine(dep, pol, &dataplane.Recorder{}); err != nil {
				t.Fatalf("seed %d: policy %s refuses the sample: %v", seed, name, err)
			}
		}
	}
	if dags == 0 {
		t.Fatal("no sample has a fan-out: the DAG shape is not exercised")
	}
}
