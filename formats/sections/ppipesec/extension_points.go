package ppipesec

import (
	"github.com/plan-dev/plan/formats"
)

// rated names an item of the section and its rate field for formats.RatedList.
var rated = formats.RatedList[ModelWorkload]{Rated: func(x *ModelWorkload) (string, *float64) { return x.Name, &x.RateRPS }}

// Targets lists the workload's models with their rates, 0 where a model states none and is
// planned for its throughput (formats.RateTargeter).
func (workloadSection) Targets(w *formats.Workload) []formats.RateTarget {
	return rated.Targets(ModelsOf(w))
}

// WithRates sets in w a copy of its models with each rate rate(name, rate)
// (formats.RateTargeter).
func (workloadSection) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	SetModels(w, rated.WithRates(ModelsOf(w), rate))
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
