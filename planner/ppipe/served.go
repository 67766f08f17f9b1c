package ppipe

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// The rule a written plan states its throughput by. The MILP's throughput (PPipe A.2, Eq. 28:
// x_l = min_d x_ld, summed over a model's pipelines) is a capacity: what the pools carry
// when every slice is busy all the time. The runtime (PPipe §5.4's reservation dispatcher)
// serves less within the SLO: at a pool's capacity its reservations queue past the slack
// T − T' the margin α left, and the dispatcher drops what no longer fits a planned batch.
// So a plan states as each model's throughput_rps what its own prediction says it serves
// within the SLO (the application's sustained_rps, at most the pipelines' capacity), while
// provenance.objective stays the formulation's objective (what the paper's Gurobi plans
// report, for comparison) and each pipeline's throughput_rps its capacity. plan solve
// applies it before it writes (StateServed) and Verify holds a plan to it, so plan check
// and the writer judge a plan by the same rule.

// ServedRPS is what model m of a plan serves within its SLO by the plan's recorded
// prediction: the application's sustained_rps, at most the pipelines' capacity. ok is false
// when the plan records no complete prediction for the model (a plan straight from the
// solver, or a prediction without the headroom search), and then the rule does not apply.
// A search stopped early (formats.HeadroomSearch) states the rate it established, a lower
// bound.
func ServedRPS(pl *formats.Plan, m ppipesec.PPipeModelPlan) (served float64, ok bool) {
	pr := pl.Prediction
	if pr == nil {
		return 0, false
	}
	for _, a := range pr.Apps {
		if a.Name != m.Model {
			continue
		}
		if a.SustainedRPS == 0 && (a.Meets || pr.HeadroomSearch != nil) {
			// A rates-only prediction (no headroom search ran), or a search stopped early
			// before it established any load: what the model serves is not known.
			return 0, false
		}
		return math.Min(capacity(m), a.SustainedRPS), true
	}
	return 0, false
}

// capacity is the sum of a model's pipeline throughputs (the formulation's).
func capacity(m ppipesec.PPipeModelPlan) float64 {
	s := 0.0
	for _, p := range m.Pipelines {
		s += p.ThroughputRPS
	}
	return s
}

// Unchecked lists the models of pl whose prediction misses their target at the planned rate
// (target_rps) while the headroom search, stopped early, established no load they hold:
// what they serve within the SLO is unknown (ServedRPS is not ok), yet the planned rate is
// known to be too high, so the plan can state nothing true for them.
func Unchecked(pl *formats.Plan) []string {
	pp, pr := ppipesec.PlanOf(pl), pl.Prediction
	if pp == nil || pr == nil || pr.HeadroomSearch == nil || !pr.HeadroomSearch.StoppedEarly {
		return nil
	}
	var out []string
	for _, m := range pp.Models {
		if _, ok := ServedRPS(pl, m); ok {
			continue
		}
		for _, a := range pr.Apps {
			if a.Name == m.Model && !a.Meets {
				out = append(out, fmt.Sprintf("model %s: %.2f%% on time at its planned %.4g req/s (target %.4g%%)", m.Model, 100*a.Attainment, a.RateRPS, 100*a.Target))
			}
		}
	}
	return out
}

// Unserved is a model the plan's prediction says serves nothing within its SLO, at any load
// tried.
type Unserved struct {
	Model       string
	CapacityRPS float64 // the pipelines' capacity (what the formulation gave the model)
	RateRPS     float64 // the rate simulated at load 1
	Attainment  float64 // the share served within the SLO there
	Dropped     int64
	Requests    int64
	P50Ms       float64
}

func (u Unserved) String() string {
	return fmt.Sprintf("model %s: its pipelines carry %.4g req/s but serve none of it within its SLO in simulation (%.2f%% on time at %.4g req/s, %d of %d dropped, p50 %.1f ms, and no lower load tried holds the target)",
		u.Model, u.CapacityRPS, 100*u.Attainment, u.RateRPS, u.Dropped, u.Requests, u.P50Ms)
}

// StateServed applies the rule to a plan that records its prediction: every model's
// throughput_rps becomes ServedRPS. It returns the models that serve nothing within their
// SLO (throughput_rps 0): such a plan is not to be written. A plan without a ppipe section
// or a complete prediction comes back unchanged.
func StateServed(pl *formats.Plan) []Unserved {
	pp := ppipesec.PlanOf(pl)
	if pp == nil {
		return nil
	}
	var bad []Unserved
	for i := range pp.Models {
		m := &pp.Models[i]
		served, ok := ServedRPS(pl, *m)
		if !ok {
			continue
		}
		m.ThroughputRPS = served
		if served > 0 {
			continue
		}
		u := Unserved{Model: m.Model, CapacityRPS: capacity(*m)}
		for _, a := range pl.Prediction.Apps {
			if a.Name == m.Model {
				u.RateRPS, u.Attainment, u.Dropped, u.Requests, u.P50Ms = a.RateRPS, a.Attainment, a.Dropped, a.Requests, a.P50Ms
			}
		}
		bad = append(bad, u)
	}
	ppipesec.SetPlan(pl, pp)
	return bad
}

// StatedCapacity is a model of a plan written under the rule before this one: it records
// its prediction but states as throughput_rps its pipelines' capacity (PPipe A.2's x_l),
// more than the prediction serves within the SLO. Such a plan is consistent under the rule
// it was written by, so it still loads and runs; plan check reports it, and a re-solve
// states what it serves.
type StatedCapacity struct {
	Index     int // its place in ppipe.models
	Model     string
	StatedRPS float64 // throughput_rps as written: the capacity
	ServedRPS float64 // what the plan's prediction serves within the SLO (ServedRPS)
}

func (s StatedCapacity) String() string {
	return fmt.Sprintf("ppipe.models[%d] (model %s): throughput_rps %.4g is its pipelines' capacity (the rule plans were written by before they stated what they serve); its prediction serves %.4g req/s within the SLO: re-solve it (plan solve) to state that",
		s.Index, s.Model, s.StatedRPS, s.ServedRPS)
}

// StatesCapacity lists the models of pl that state their capacity where the plan's
// prediction says they serve less (the older rule; Verify accepts it). A plan stating what
// it serves, or recording no complete prediction, lists none.
func StatesCapacity(pl *formats.Plan) []StatedCapacity {
	pp := ppipesec.PlanOf(pl)
	if pp == nil {
		return nil
	}
	var out []StatedCapacity
	for i, m := range pp.Models {
		served, ok := ServedRPS(pl, m)
		if ok && olderRule(m.ThroughputRPS, served, capacity(m)) {
			out = append(out, StatedCapacity{Index: i, Model: m.Model, StatedRPS: m.ThroughputRPS, ServedRPS: served})
		}
	}
	return out
}

// olderRule says whether a model stating stated, whose prediction serves served and whose
// pipelines carry capacity, follows the rule before plans stated what they serve: it states
// its capacity, and that is not what it serves.
func olderRule(stated, served, capacity float64) bool {
	return near(stated, capacity) && !near(stated, served)
}
