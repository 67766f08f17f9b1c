package ppipe

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// servedPlan is the bundled two-model golden plan, which records its prediction: each
// model's throughput_rps is what that prediction serves within the SLO.
func servedPlan(t *testing.T) *formats.Plan {
	t.Helper()
	pl, err := formats.ReadInto[*formats.Plan]("../../testdata/golden/ppipe-2models.json", intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestStateServed: the rule sets each model's throughput to its sustained rate, capped by its
// pipelines' capacity; a model with no sustained rate is reported; a plan without a complete
// prediction is left as it is.
func TestStateServed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sustained []float64 // per model; NaN: leave the prediction's
		noPred    bool
		ratesOnly bool
		stopped   bool      // the headroom search stopped early (prediction.headroom_search)
		want      []float64 // per model; NaN: the pipelines' capacity
		unserved  []string
	}{
		{name: "as recorded", sustained: []float64{math.NaN(), math.NaN()}, want: []float64{53.3361, 83.8206}},
		{name: "capped by capacity", sustained: []float64{1e6, 10}, want: []float64{math.NaN(), 10}},
		{name: "serves nothing", sustained: []float64{0, math.NaN()}, want: []float64{0, 83.8206}, unserved: []string{"m0"}},
		{name: "no prediction", noPred: true, want: []float64{math.NaN(), math.NaN()}},
		{name: "rates only", ratesOnly: true, want: []float64{math.NaN(), math.NaN()}},
		// A search stopped early states the rate it established (a lower bound); where it
		// established none, what the model serves is not known, not nothing.
		{name: "stopped, established", stopped: true, sustained: []float64{10, math.NaN()}, want: []float64{10, 83.8206}},
		{name: "stopped, none established", stopped: true, sustained: []float64{0, math.NaN()}, want: []float64{math.NaN(), 83.8206}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := servedPlan(t)
			if tc.noPred || tc.ratesOnly || tc.stopped { // as the solver writes it: capacity
				pp := ppipesec.PlanOf(pl)
				for i := range pp.Models {
					pp.Models[i].ThroughputRPS = capacity(pp.Models[i])
				}
				ppipesec.SetPlan(pl, pp)
			}
			switch {
			case tc.noPred:
				pl.Prediction = nil
			case tc.ratesOnly:
				for i := range pl.Prediction.Apps {
					pl.Prediction.Apps[i].SustainedRPS, pl.Prediction.Apps[i].Meets = 0, true
				}
			default:
				if tc.stopped {
					pl.Prediction.HeadroomSearch = &formats.HeadroomSearch{StoppedEarly: true, Reason: formats.SearchStoppedDeadline, LoadsTried: []float64{0.25, 1}}
				}
				for i, s := range tc.sustained {
					if !math.IsNaN(s) {
						pl.Prediction.Apps[i].SustainedRPS = s
					}
				}
			}
			var names []string
			for _, u := range StateServed(pl) {
				names = append(names, u.Model)
				if u.CapacityRPS <= 0 || u.RateRPS <= 0 {
					t.Errorf("%s: no capacity or rate in %+v", u.Model, u)
				}
			}
			if !slices.Equal(names, tc.unserved) {
				t.Errorf("unserved %v, want %v", names, tc.unserved)
			}
			for i, m := range ppipesec.PlanOf(pl).Models {
				want := tc.want[i]
				if math.IsNaN(want) {
					want = capacity(m)
				}
				if math.Abs(m.ThroughputRPS-want) > 1e-9*want {
					t.Errorf("%s: throughput_rps %g, want %g", m.Model, m.ThroughputRPS, want)
				}
			}
			if v := Verify(pl); len(v) > 0 {
				t.Errorf("the stated plan fails Verify: %v", v)
			}
		})
	}
}

// TestVerifyServed: a plan that records its prediction and states more (or less) than it
// serves within its SLO breaks the "served" rule, unless what it states is its capacity (the
// rule before: it passes, and StatesCapacity names the model); one that states its capacity
// without a prediction is consistent and stale in nothing.
func TestVerifyServed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(pl *formats.Plan)
		rule   string   // "" = consistent
		stale  []string // the models StatesCapacity lists
	}{
		{name: "as written", change: func(*formats.Plan) {}},
		{name: "states its capacity", stale: []string{"m1"}, change: func(pl *formats.Plan) {
			pp := ppipesec.PlanOf(pl)
			pp.Models[1].ThroughputRPS = capacity(pp.Models[1])
			ppipesec.SetPlan(pl, pp)
		}},
		{name: "states more than it serves, short of its capacity", rule: "served", change: func(pl *formats.Plan) {
			pp := ppipesec.PlanOf(pl)
			m := &pp.Models[1]
			m.ThroughputRPS = (m.ThroughputRPS + capacity(*m)) / 2
			ppipesec.SetPlan(pl, pp)
		}},
		{name: "states less", rule: "served", change: func(pl *formats.Plan) {
			pp := ppipesec.PlanOf(pl)
			pp.Models[0].ThroughputRPS /= 2
			ppipesec.SetPlan(pl, pp)
		}},
		{name: "capacity without a prediction", change: func(pl *formats.Plan) {
			pl.Prediction = nil
			pp := ppipesec.PlanOf(pl)
			for i := range pp.Models {
				pp.Models[i].ThroughputRPS = capacity(pp.Models[i])
			}
			ppipesec.SetPlan(pl, pp)
		}},
		{name: "served without a prediction", rule: "throughput-sum", change: func(pl *formats.Plan) { pl.Prediction = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := servedPlan(t)
			tc.change(pl)
			vs := Verify(pl)
			got := slices.ContainsFunc(vs, func(v Violation) bool { return v.Rule == tc.rule })
			if tc.rule == "" && len(vs) > 0 || tc.rule != "" && !got {
				t.Errorf("want rule %q, got %v", tc.rule, vs)
			}
			var stale []string
			for _, s := range StatesCapacity(pl) {
				stale = append(stale, s.Model)
				if !(s.ServedRPS < s.StatedRPS) {
					t.Errorf("%s: served %g not below stated %g", s.Model, s.ServedRPS, s.StatedRPS)
				}
			}
			if !slices.Equal(stale, tc.stale) {
				t.Errorf("StatesCapacity: %v, want %v", stale, tc.stale)
			}
		})
	}
}

// TestReserveFor: the session's deadline leaves the caller's reserve for the largest plan
// estimated so far, never more than maxReserve of the time limit, and never moves later.
func TestReserveFor(t *testing.T) {
	began := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		weights []float64
		objs    []float64
		want    time.Duration // deadline − began
	}{
		{name: "one model", weights: []float64{1}, objs: []float64{100}, want: 60*time.Second - 100*time.Millisecond},
		{name: "max-min: z·Σw", weights: []float64{1, 2}, objs: []float64{100}, want: 60*time.Second - 300*time.Millisecond},
		{name: "larger estimate stands", weights: []float64{1}, objs: []float64{200, 100, math.Inf(1)}, want: 60*time.Second - 200*time.Millisecond},
		{name: "at most maxReserve", weights: []float64{1}, objs: []float64{1e9}, want: 24 * time.Second},
		{name: "no estimate", weights: []float64{1}, objs: []float64{math.Inf(-1), math.NaN(), 0}, want: 60 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &problem{opts: Options{TimeLimit: 60 * time.Second, Reserve: func(rps float64) time.Duration {
				return time.Duration(rps) * time.Millisecond
			}}}
			for _, w := range tc.weights {
				p.models = append(p.models, &modelData{weight: w})
			}
			s := newSession(t.Context(), p, began)
			for _, o := range tc.objs {
				s.reserveFor(o)
			}
			if got := s.deadline.Sub(began); got != tc.want {
				t.Errorf("deadline %s after the start, want %s", got, tc.want)
			}
		})
	}
}

// TestOverrun: a HiGHS call's allowed overrun is 1% of the limit within [20 ms, 300 ms].
func TestOverrun(t *testing.T) {
	for limit, want := range map[time.Duration]time.Duration{
		time.Second: 20 * time.Millisecond, 5 * time.Second: 50 * time.Millisecond,
		60 * time.Second: 300 * time.Millisecond, time.Hour: 300 * time.Millisecond,
	} {
		if got := overrun(limit); got != want {
			t.Errorf("overrun(%s) = %s, want %s", limit, got, want)
		}
	}
}
