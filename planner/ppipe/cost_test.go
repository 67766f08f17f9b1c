package ppipe

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
)

// costInputs is a generated instance with a rate per model and (optionally) available counts.
func costInputs(gpus []gpuSpec, models int, seed uint64, rate float64, avail []int) Inputs {
	c := genCluster(gpus, make([]int, len(gpus)), 30)
	for i := range avail {
		a := avail[i]
		c.GPUs[i].Available = &a
	}
	w := &formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindWorkload}}
	p := genProfile(seed, models, 10, gpus, 0)
	for _, m := range p.Models {
		ppipesec.SetModels(w, append(ppipesec.ModelsOf(w), ppipesec.ModelWorkload{Name: m.Name, Weight: 1, RateRPS: rate}))
	}
	return Inputs{Profiles: []*formats.Profile{p}, Cluster: c, Workload: w}
}

// TestSolveCost: the cost plan serves every model's rate within each type's available count,
// passes the verifier and the fleet check, and costs no more than the least-cost whole-GPU
// start it is searched from; too few GPUs available is infeasible naming the rate they serve.
func TestSolveCost(t *testing.T) {
	t.Parallel()
	in := costInputs([]gpuSpec{specL4, specT4}, 1, 7, 400, []int{40, 40})
	opts := Options{Alpha: DefaultAlpha, MaxPartitions: 2, TimeLimit: 60 * time.Second, Gap: 1e-4, Objective: planner.ObjectiveCost, Deterministic: true}
	pl, err := Solve(context.Background(), in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if vs := Verify(pl); len(vs) > 0 {
		t.Fatalf("verify: %v", vs)
	}
	if vs := fleet.Verify(pl); len(vs) > 0 {
		t.Fatalf("fleet: %v", vs)
	}
	for _, m := range ppipesec.PlanOf(pl).Models {
		if m.ThroughputRPS < 400-1e-6 {
			t.Errorf("model %s: throughput %g below its rate 400", m.Model, m.ThroughputRPS)
		}
	}
	// The whole-GPU start: its cost bounds the plan's from above.
	sin := in
	sin.Cluster = sized(in.Cluster, func(formats.GPUPool) int { return 40 })
	p, err := prepare(sin, opts.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	price := []float64{defaultPrice("L4"), defaultPrice("T4")}
	s := testSession(p)
	spaces, err := s.spaces(spaceConfig{P: 2, cost: price})
	if err != nil {
		t.Fatal(err)
	}
	a := costStart(p, spaces, price)
	if a == nil {
		t.Fatal("no whole-GPU start")
	}
	if c := p.cost(p.pipes(spaces, a, 1), price); pl.Fleet.CostPerHour > c+1e-9 {
		t.Errorf("cost %g above the whole-GPU start's %g", pl.Fleet.CostPerHour, c)
	}

	short := costInputs([]gpuSpec{specL4, specT4}, 1, 7, 400, []int{1, 1})
	_, err = Solve(context.Background(), short, opts)
	if !errors.Is(err, planner.ErrInfeasible) || !strings.Contains(err.Error(), "serve at most") {
		t.Fatalf("err = %v, want infeasible naming the rate the available GPUs serve", err)
	}
}

// BenchmarkSolveCost checks that --objective cost is fast enough to use: a 3-GPU-type (L4, T4,
// P4), 3-model instance (P ≤ 3, no available limits) within 60 s to a 1% gap. It reports the
// gap reached, the cost, and the cheapest single-type fleet's cost for the saving.
func BenchmarkSolveCost(b *testing.B) {
	gpus := []gpuSpec{specL4, specT4, specP4}
	in := costInputs(gpus, 3, 2, 300, nil)
	opts := withDiagnostics(Options{Alpha: DefaultAlpha, MaxPartitions: 3, TimeLimit: 60 * time.Second, Gap: 0.01, Objective: planner.ObjectiveCost})
	var pl *formats.Plan
	for b.Loop() {
		var err error
		if pl, err = Solve(context.Background(), in, opts); err != nil {
			b.Fatal(err)
		}
	}
	single := math.Inf(1)
	for i := range gpus {
		one := in
		c := *in.Cluster
		c.GPUs = []formats.GPUPool{in.Cluster.GPUs[i]}
		one.Cluster = &c
		if p1, err := Solve(context.Background(), one, opts); err == nil {
			single = math.Min(single, p1.Fleet.CostPerHour)
		}
	}
	b.ReportMetric(formats.Num(pl.Provenance.Gap)*100, "gap%")
	b.ReportMetric(pl.Fleet.CostPerHour, "$/h")
	b.ReportMetric(single, "single_$/h")
	b.Logf("status %s cost %.2f (%s) bound %.2f gap %.2f%%; cheapest single type %.2f: saving %.1f%%", pl.Provenance.Status,
		pl.Fleet.CostPerHour, fleet.Describe(pl.Fleet), formats.Num(pl.Provenance.Bound), formats.Num(pl.Provenance.Gap)*100, single, 100*(1-pl.Fleet.CostPerHour/single))
}

// defaultPrice is the default list price of a GPU type (0 if it has none).
func defaultPrice(gpu string) float64 {
	p, _ := formats.DefaultPrice(gpu)
	return p
}
