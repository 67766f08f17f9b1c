package pardsec

import (
	"slices"

	"github.com/plan-dev/plan/formats"
)

// Targets lists the workload's pipelines with their rates (formats.RateTargeter).
func (workloadSection) Targets(w *formats.Workload) []formats.RateTarget {
	var out []formats.RateTarget
	for _, p := range PipelinesOf(w) {
		out = append(out, formats.RateTarget{Name: p.Name, RateRPS: p.RateRPS})
	}
	return out
}

// WithRates sets in w a copy of its pipelines with each rate rate(name, rate)
// (formats.RateTargeter).
func (workloadSection) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	ps := slices.Clone(PipelinesOf(w))
	for i := range ps {
		ps[i].RateRPS = rate(ps[i].Name, ps[i].RateRPS)
	}
	SetPipelines(w, ps)
}

// GPUsUsed counts the workers of every app's modules per GPU type, one GPU each (PARD §4
// provisions a module as workers on one GPU type; formats.GPUCounter).
func (planSection) GPUsUsed(p *formats.Plan) map[string]int {
	pd := PlanOf(p)
	if pd == nil {
		return nil
	}
	used := map[string]int{}
	for _, a := range pd.Apps {
		for _, m := range a.Modules {
			used[m.GPU] += m.Workers
		}
	}
	return used
}
