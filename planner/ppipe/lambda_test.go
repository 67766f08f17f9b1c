package ppipe

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"

	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestBatchAllowanceEstimate: λ̂ of the batch-formation allowance β = ρ·(b−1)/λ̂ is each
// model's throughput in the NP plan without β (the artifact's first pass), for every model:
// the first one too, which an estimate taken with its own β already on (infinite past batch
// 1 while λ̂ is unknown) would hold to batch 1 and so underestimate.
func TestBatchAllowanceEstimate(t *testing.T) {
	in := batchingInputs(t)
	base := DefaultOptions()
	base.Deterministic, base.TimeLimit, base.Alpha = true, 30*time.Second, 0.4
	np := base
	np.Strategy = StrategyNP
	npPlan, err := Solve(context.Background(), in, np)
	if err != nil {
		t.Fatal(err)
	}
	lambda := map[string]float64{}
	for _, m := range ppipesec.PlanOf(npPlan).Models {
		lambda[m.Model] = m.ThroughputRPS
	}
	for _, strategy := range []string{StrategyNP, StrategyPPipe} {
		o := base
		o.Strategy, o.BatchAllowance, o.MaxPartitions = strategy, true, 1
		pl, err := Solve(context.Background(), in, o)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, m := range ppipesec.PlanOf(pl).Models {
			for _, p := range m.Pipelines {
				if p.Batch < 2 {
					continue
				}
				want := BatchFormationRho * float64(p.Batch-1) / lambda[m.Model] * 1e6
				if math.Abs(p.BatchFormationUs-want) > 1e-6*want {
					t.Errorf("%s: model %s batch %d: β %g µs, want ρ·(b−1)/λ̂ = %g with λ̂ = %g req/s (NP without β)", strategy, m.Model, p.Batch, p.BatchFormationUs, want, lambda[m.Model])
				}
				checked++
			}
		}
		if checked == 0 {
			t.Errorf("%s: no pipeline batches more than 1: the test checks nothing", strategy)
		}
	}
}

// batchingInputs is testdata/batching: one model whose V100 plans batch 2–4.
func batchingInputs(t *testing.T) Inputs {
	t.Helper()
	dir := filepath.Join("testdata", "batching")
	prof, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, "profile.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := formats.ReadInto[*formats.Cluster](filepath.Join(dir, "cluster.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wl, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "workload.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return Inputs{Profiles: []*formats.Profile{prof}, Cluster: cl, Workload: wl}
}
