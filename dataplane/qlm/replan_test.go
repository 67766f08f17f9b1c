package qlm

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/sim"
)

// TestReplanGap: Setup.ReplanMs (the plan's replan_ms) bounds how often QLM re-plans under an
// overload that predicts a violation at every arrival: at most one re-plan per gap, and a
// shorter gap re-plans more often.
func TestReplanGap(t *testing.T) {
	base := Sample(rand.New(rand.NewPCG(1, 0xc0f0)))
	const dur = 3 * dataplane.Second
	replans := func(ms float64) int64 {
		dep := withSetup(t, base, func(s *Setup) { s.ReplanMs = ms })
		p, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM, Params: paperAdmission}, PolicyQLM)
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := sim.ParseArrival("bursty:3")
		srcs := make([]sim.Source, len(dep.Apps))
		for a := range dep.Apps {
			srcs[a], _ = spec.New(dep.Apps[a].RateRPS*8, dep.Apps[a].Name, uint64(a))
		}
		s, err := sim.New(dep, p, srcs, sim.Options{Duration: dur, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		return p.(*Policy).Stats().Replans
	}
	counts := map[float64]int64{}
	for _, tc := range []struct{ ms float64 }{{100}, {0 /* the default, 500 ms */}, {2000}} {
		gap := tc.ms
		if gap == 0 {
			gap = 500
		}
		n := replans(tc.ms)
		counts[tc.ms] = n
		// The run goes on past its arrivals until every request has finished; bound by the
		// arrivals' window plus the drain, which Stats cannot see, generously: 4× the window.
		limit := 1 + int64(4*float64(dur)/1e3/gap)
		if n == 0 || n > limit {
			t.Errorf("replan_ms %v: %d re-plans; want 1..%d", tc.ms, n, limit)
		}
	}
	t.Logf("re-plans by replan_ms 100/500/2000: %d/%d/%d", counts[100], counts[0], counts[2000])
	if !(counts[100] > counts[0] && counts[0] > counts[2000]) {
		t.Errorf("re-plans by replan_ms 100/500/2000: %d/%d/%d; want strictly fewer as the gap grows", counts[100], counts[0], counts[2000])
	}
}

// TestFromPlanReplanMs: the plan's replan_ms reaches the policy's set-up.
func TestFromPlanReplanMs(t *testing.T) {
	b, err := os.ReadFile("../../testdata/openai/qlm-plan.json")
	if err != nil {
		t.Fatal(err)
	}
	pl0, err := formats.DecodeInto[*formats.Plan]("plan.json", b, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	pl := *pl0
	for _, ms := range []float64{0, 250, 1500} {
		qlmsec.PlanOf(&pl).ReplanMs = ms
		dep, err := FromPlan(&pl)
		if err != nil {
			t.Fatal(err)
		}
		var st Setup
		if err := json.Unmarshal([]byte(dep.Apps[0].Params[paramSetup]), &st); err != nil {
			t.Fatal(err)
		}
		want := dataplane.Time(ms * 1e3)
		if ms == 0 {
			want = dataplane.Second / 2
		}
		if got := st.replanGap(); got != want {
			t.Errorf("replan_ms %v: gap %d µs, want %d", ms, got, want)
		}
	}
}
