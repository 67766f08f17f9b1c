package cascade_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/planner"
	pc "github.com/plan-dev/plan/planner/cascade"
	"github.com/plan-dev/plan/sim"
)

func examplePlan(t testing.TB) *formats.Plan {
	t.Helper()
	dir := "../../testdata/cascade"
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "workload.yaml"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	p, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, "profile.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := formats.ReadInto[*formats.Cluster](filepath.Join(dir, "cluster.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := pc.Solve(context.Background(), planner.Inputs{Workload: w, Profiles: []*formats.Profile{p}, Cluster: c}, pc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// steps returns evenly spaced arrivals at the given per-second rates.
func steps(rates []float64) *sim.Times {
	var ts []dataplane.Time
	for s, q := range rates {
		n := int(q)
		for i := 0; i < n; i++ {
			ts = append(ts, dataplane.Time(s)*dataplane.Second+dataplane.Time(float64(i)/q*float64(dataplane.Second)))
		}
	}
	return &sim.Times{T: ts}
}

// run simulates dep under policy name and checks that every request finishes exactly once.
func run(t *testing.T, dep *dataplane.Deployment, name string, params map[string]string, src sim.Source, dur dataplane.Time) (*sim.Sim, *sim.Metrics, *dpc.Policy) {
	t.Helper()
	pol, err := dpc.Registry().New(dep, dataplane.Config{Policy: name, Params: params}, dpc.PolicyGears)
	if err != nil {
		t.Fatal(err)
	}
	finished := map[dataplane.ReqID]int{}
	s, err := sim.New(dep, pol, []sim.Source{src}, sim.Options{Duration: dur, Seed: 1,
		OnFinish: func(_ dataplane.Time, r *dataplane.Request) { finished[r.ID]++ }})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Engine.Requests()
	for i := range reqs {
		r := &reqs[i]
		if r.Outcome == dataplane.Pending || finished[r.ID] != 1 {
			t.Fatalf("request %d: outcome %v, finished %d times", r.ID, r.Outcome, finished[r.ID])
		}
		if r.Outcome == dataplane.Dropped && r.Reason() != dataplane.DropAdmission && r.Reason() != dataplane.DropDeadline {
			// CascadeServe drops only what it cannot serve on time (shed.go).
			t.Fatalf("request %d dropped as %s: CascadeServe drops only for admission or deadline", r.ID, r.Reason())
		}
	}
	return s, m, pol.(*dpc.Policy)
}

func TestGearSwitchingInSim(t *testing.T) {
	plan := examplePlan(t)
	dep, err := dpc.FromPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	rates := []float64{100, 100, 1800, 1800, 1800, 200, 200, 100}
	tests := []struct {
		name     string
		policy   string
		params   map[string]string
		switches bool
	}{
		{"gears", dpc.PolicyGears, nil, true},
		{"no-switch", dpc.PolicyNoSwitch, nil, false},
		{"lazy loading", dpc.PolicyGears, map[string]string{"preload": "false"}, true},
		{"alpha 2", dpc.PolicyGears, map[string]string{"alpha": "2", "poll_ms": "50"}, true},
		{"window", dpc.PolicyGears, map[string]string{"window_ms": "1000"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, m, pol := run(t, dep, tc.policy, tc.params, steps(rates), 8*dataplane.Second)
			t.Logf("%d requests, attainment %.3f, p99 %.1f ms, %d switches", m.Total.Requests, m.Total.Attainment, float64(m.Total.Latency.P99Us)/1000, pol.Switches)
			if (pol.Switches > 0) != tc.switches {
				t.Fatalf("%d gear switches, want switching %v", pol.Switches, tc.switches)
			}
			if m.Total.Requests != 6100 {
				t.Fatalf("%d requests, want 6100", m.Total.Requests)
			}
		})
	}
}

// TestConformance runs the policies on random sampled deployments under Poisson load:
// every request finishes exactly once (the internal/registry/conformance invariants).
func TestConformance(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		dep := dpc.Sample(rand.New(rand.NewPCG(seed, 7)))
		for _, name := range []string{dpc.PolicyGears, dpc.PolicyNoSwitch} {
			spec, _ := sim.ParseArrival("poisson")
			src, err := spec.New(dep.Apps[0].RateRPS*0.5, "a", seed)
			if err != nil {
				t.Fatal(err)
			}
			run(t, dep, name, nil, src, 2*dataplane.Second)
		}
	}
}

func TestSwitchRule(t *testing.T) {
	qhi := []float64{100, 200, 300}
	tests := []struct {
		cur  int
		qps  float64
		q0   int
		want int
	}{
		{0, 50, 0, 0}, {0, 150, 0, 1}, {0, 900, 0, 2}, {0, 100, 0, 1},
		{2, 50, 0, 0},     // down: no backlog
		{2, 50, 10, 2},    // down blocked: 50 < 8·10
		{2, 150, 10, 1},   // 150 ≥ 8·10: the backlog is small enough
		{1, 250, 1000, 2}, // up is immediate
	}
	for _, tc := range tests {
		if got := dpc.Switch(qhi, tc.cur, tc.qps, 8, tc.q0); got != tc.want {
			t.Errorf("dpc.Switch(cur %d, qps %g, q0 %d) = %d, want %d", tc.cur, tc.qps, tc.q0, got, tc.want)
		}
	}
}

func TestBadParams(t *testing.T) {
	if _, err := dpc.NewPolicy(dataplane.Config{Params: map[string]string{"alfa": "2"}}); err == nil {
		t.Fatal("unknown parameter accepted")
	}
	if _, err := dpc.NewPolicy(dataplane.Config{Params: map[string]string{"qps_scale": "0"}}); err == nil {
		t.Fatal("qps_scale 0 accepted")
	}
}

// BenchmarkGearDecision times one poll's decision: gear lookup plus the α rule (target
// ≤ 1 µs: it runs on every poll, CascadeServe §4.6).
func BenchmarkGearDecision(b *testing.B) {
	qhi := make([]float64, 64)
	for i := range qhi {
		qhi[i] = float64(i+1) * 7600 / 64
	}
	cur := 10
	for i := 0; b.Loop(); i++ {
		cur = dpc.Switch(qhi, cur, float64(i%8000), 8, i%50)
	}
	_ = cur
}
