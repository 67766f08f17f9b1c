package pardsys

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
	"github.com/plan-dev/plan/solver"
)

const dir = "../../../../testdata"

// solveFill plans the autopilot fixture's workload with --fill on gpus of its cluster.
func solveFill(t *testing.T, gpus int) *formats.Plan {
	t.Helper()
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "autopilot/pard-workload.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	prof, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, "pard/profile.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := formats.ReadInto[*formats.Cluster](filepath.Join(dir, "autopilot/pard-cluster.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.GPUs[0].Count = gpus
	pl := &Planner{}
	pl.f.Fill = true
	p, err := pl.Solve(context.Background(), planner.Inputs{Workload: w, Profiles: []*formats.Profile{prof}, Cluster: c}, planner.Settings{TimeLimit: time.Minute, Deterministic: true})
	if errors.Is(err, solver.ErrBackendUnavailable) && os.Getenv("PLAN_REQUIRE_ALL") != "1" {
		t.Skip("HiGHS backend unavailable")
	}
	if err != nil {
		t.Fatalf("%d GPUs: %v", gpus, err)
	}
	return p
}

// TestCapacityMatchesSimulator: a PARD plan solved with --fill has a capacity
// (workers·b/d of each pipeline's slowest module) that grows with the GPUs the planner is
// given, and the simulator, running the plan's own dropping policy on Poisson arrivals,
// agrees with it: at 0.9 of the capacity ≥ 99% of requests meet the SLO, at 1.2 of it
// below 95% (the overload PARD drops).
func TestCapacityMatchesSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a minute of traffic per point")
	}
	prev := map[string]float64{}
	for _, gpus := range []int{8, 16, 32} {
		p := solveFill(t, gpus)
		s := pardSystem{}
		c, err := s.Capacity(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		dep, pol, err := s.Deploy(p)
		if err != nil {
			t.Fatal(err)
		}
		base := make([]float64, len(dep.Apps))
		for i, a := range dep.Apps {
			base[i] = c[a.Name]
			if prev[a.Name] >= c[a.Name] {
				t.Errorf("%d GPUs: %s capacity %.1f does not grow (%.1f on fewer)", gpus, a.Name, c[a.Name], prev[a.Name])
			}
			prev[a.Name] = c[a.Name]
		}
		spec, err := sim.ParseArrival("poisson")
		if err != nil {
			t.Fatal(err)
		}
		dur := dataplane.Time(60 * time.Second / time.Microsecond)
		cfg := &sim.SweepConfig{Dep: dep, Policies: dataplane.NewRegistry(s.Policies()...), Policy: dataplane.Config{Policy: pol},
			Arrival: spec, BaseRPS: base, Duration: dur, Seed: 1, Warmup: sim.DefaultWarmup(dep, dur)}
		var att []float64
		for _, l := range []float64{0.9, 1.2} {
			pt, err := sim.RunPoint(cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			att = append(att, pt.Metrics.Total.Attainment)
		}
		t.Logf("%d GPUs: capacity %v; attainment %.4f at 0.9×, %.4f at 1.2×", gpus, c, att[0], att[1])
		if att[0] < 0.99 || att[1] >= 0.95 {
			t.Errorf("%d GPUs: attainment %.4f at 0.9 of the capacity (want ≥ 0.99), %.4f at 1.2 (want < 0.95)", gpus, att[0], att[1])
		}
	}
}
