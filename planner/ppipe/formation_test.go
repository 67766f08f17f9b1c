package ppipe

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner/ppipe/corpus"
)

// regressionInputs decodes a corpus regression case and its options (its flags over
// DefaultOptions, deterministic).
func regressionInputs(t *testing.T, c corpus.Case) (Inputs, Options) {
	t.Helper()
	prof, err := formats.DecodeInto[*formats.Profile](c.Name+"/profile.json", c.Profile, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := formats.DecodeInto[*formats.Cluster](c.Name+"/cluster.json", c.Cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	wl, err := formats.DecodeInto[*formats.Workload](c.Name+"/workload.json", c.Workload, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Strategy, o.Deterministic, o.TimeLimit = c.Strategy, true, 30*time.Second
	for _, f := range c.Flags {
		var err error
		switch f.Name {
		case "max-partitions":
			o.MaxPartitions, err = strconv.Atoi(f.Value)
		case "alpha":
			o.Alpha, err = strconv.ParseFloat(f.Value, 64)
		case "batch-allowance":
			o.BatchAllowance, err = strconv.ParseBool(f.Value)
		case "arrival-rate":
			o.ArrivalRate, err = strconv.ParseFloat(f.Value, 64)
		case "fill-surplus":
			o.FillSurplus, err = strconv.ParseBool(f.Value)
		default:
			t.Fatalf("%s: flag --%s: not known to this test", c.Name, f.Name)
		}
		if err != nil {
			t.Fatalf("%s: --%s=%s: %v", c.Name, f.Name, f.Value, err)
		}
	}
	return Inputs{Profiles: []*formats.Profile{prof}, Cluster: cl, Workload: wl}, o
}

// TestBatchesFillWithinTheSLO: no written pipeline batches more than its own arrivals fill
// within the SLO: its latency without β (C + Y over its stages) plus (b−1)/x, the time the
// batch's first request waits for the rest at the model's planned rate x, is at most T. On
// the corpus's regression case the solve once planned batch 4 at C = 19.2 ms and 208 req/s
// (14.4 ms to fill) for a 33.3 ms SLO, with β from an estimate of 20,000 req/s.
func TestBatchesFillWithinTheSLO(t *testing.T) {
	for _, c := range corpus.Regressions() {
		t.Run(c.Name, func(t *testing.T) {
			in, o := regressionInputs(t, c)
			pl, err := Solve(context.Background(), in, o)
			if err != nil {
				t.Fatal(err)
			}
			if vs := Verify(pl); len(vs) > 0 {
				t.Fatalf("the plan fails Verify: %v", vs)
			}
			for _, m := range ppipesec.PlanOf(pl).Models {
				x := capacity(m)
				T := m.SLO.Microseconds()
				for pi, p := range m.Pipelines {
					lat := p.LatencyUs - p.BatchFormationUs
					fill := 1e6 * float64(p.Batch-1) / x
					if lat+fill > T*(1+relTol) {
						t.Errorf("model %s pipeline %d: batch %d: C+Y %.0f µs + filling %.0f µs at %.1f req/s > SLO %.0f µs (β %.0f µs)",
							m.Model, pi, p.Batch, lat, fill, x, T, p.BatchFormationUs)
					}
				}
			}
		})
	}
}
