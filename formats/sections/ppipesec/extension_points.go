package ppipesec

import (
	"slices"

	"github.com/plan-dev/plan/formats"
)

// Targets lists the workload's models with their rates, 0 where a model states none and is
// planned for its throughput (formats.RateTargeter).
func (workloadSection) Targets(w *formats.Workload) []formats.RateTarget {
	var out []formats.RateTarget
	for _, m := range ModelsOf(w) {
		out = append(out, formats.RateTarget{Name: m.Name, RateRPS: m.RateRPS})
	}
	return out
}

// WithRates sets in w a copy of its models with each rate rate(name, rate)
// (formats.RateTargeter).
func (workloadSection) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	ms := slices.Clone(ModelsOf(w))
	for i := range ms {
		ms[i].RateRPS = rate(ms[i].Name, ms[i].RateRPS)
	}
	SetModels(w, ms)
}

// GPUsUsed counts the whole GPUs the plan's pipelines occupy per type under its rounding
// mode (PhysicalGPUs; formats.GPUCounter).
func (planSection) GPUsUsed(p *formats.Plan) map[string]int {
	pp := PlanOf(p)
	if pp == nil {
		return nil
	}
	_, used := pp.PhysicalGPUs()
	return used
}
