package dyorcsys

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
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems/dyorcsys/dyorcsim"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
	"github.com/plan-dev/plan/solver"
)

const dir = "../../../../testdata"

// solveOn plans workload (a testdata path) on gpus GPUs of testdata/dyorc/cluster.json.
func solveOn(t *testing.T, workload string, gpus int) *formats.Plan {
	t.Helper()
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, workload), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	c, err := formats.ReadInto[*formats.Cluster](filepath.Join(dir, "dyorc/cluster.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.GPUs[0].Count, c.GPUs[0].PerServer = gpus, gpus
	p, err := (&Planner{sim: dyorcsim.PredictAtRates}).Solve(context.Background(), planner.Inputs{Workload: w, Cluster: c}, planner.Settings{TimeLimit: time.Minute, Deterministic: true})
	if errors.Is(err, solver.ErrBackendUnavailable) && os.Getenv("PLAN_REQUIRE_ALL") != "1" {
		t.Skip("HiGHS backend unavailable")
	}
	if err != nil {
		t.Fatalf("%d GPUs: %v", gpus, err)
	}
	return p
}

// attainments simulates p with every app at load × its capacity (Poisson arrivals, seed 1).
func attainments(t *testing.T, p *formats.Plan, capacity map[string]float64, loads ...float64) []float64 {
	t.Helper()
	s := New(system.Handle{Predict: dyorcsim.PredictAtRates}).(dyorcSystem)
	dep, pol, err := s.Deploy(p)
	if err != nil {
		t.Fatal(err)
	}
	base := make([]float64, len(dep.Apps))
	for i, a := range dep.Apps {
		base[i] = capacity[a.Name]
	}
	spec, err := sim.ParseArrival("poisson")
	if err != nil {
		t.Fatal(err)
	}
	dur := dataplane.Time(600 * time.Second / time.Microsecond)
	cfg := &sim.SweepConfig{Dep: dep, Policies: dataplane.NewRegistry(s.Policies()...), Policy: dataplane.Config{Policy: pol},
		Arrival: spec, BaseRPS: base, Loads: loads, Duration: dur, Seed: 1, Warmup: sim.DefaultWarmup(dep, dur)}
	var out []float64
	for _, l := range loads {
		pt, err := sim.RunPoint(cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pt.Metrics.Total.Attainment)
	}
	return out
}

// TestCapacityMatchesSimulator: a DyOrc plan's capacity grows with the GPUs its
// placement was solved on, and it is what the simulator measures over a longer span than the
// prediction's that the capacity is searched with (dyorc.Capacity): at 0.9 of it the apps
// keep their SLOs (≥ 99% on time), at 1.2 of it they fall below that. Not on 2 GPUs: their
// few, long batches let the attainment sink slowly, and arrivals other than the
// prediction's (which miss above 1.03× the capacity) hold 99.35% at 1.2× and 99.54% at 1.3×
// before 98.4% at 1.4× (TestCapacity checks the capacity grows from 2 GPUs to 4).
func TestCapacityMatchesSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates ten minutes of workflows per point")
	}
	cases := []struct {
		workload string
		gpus     int
	}{
		{"dyorc/small.json", 4}, {"dyorc/small.json", 8}, {"dyorc/small.json", 16},
	}
	prev := map[string]float64{}
	for _, tc := range cases {
		p := solveOn(t, tc.workload, tc.gpus)
		c, err := New(system.Handle{Predict: dyorcsim.PredictAtRates}).(dyorcSystem).Capacity(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		att := attainments(t, p, c, 0.9, 1.2)
		t.Logf("%s on %d GPUs: capacity %v; attainment at 0.9× %.4f, at 1.2× %.4f", tc.workload, tc.gpus, c, att[0], att[1])
		for app, r := range c {
			if prev[tc.workload+app] >= r {
				t.Errorf("%s on %d GPUs: %s capacity %.2f does not grow (%.2f on fewer)", tc.workload, tc.gpus, app, r, prev[tc.workload+app])
			}
			prev[tc.workload+app] = r
		}
		if att[0] < 0.99 || att[1] >= 0.99 || att[1] >= att[0] {
			t.Errorf("%s on %d GPUs: attainment %.4f at 0.9 of the capacity (want ≥ 0.99), %.4f at 1.2 (want below 0.99 and the first)", tc.workload, tc.gpus, att[0], att[1])
		}
	}
}
