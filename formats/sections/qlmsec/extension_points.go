package qlmsec

import (
	"slices"

	"github.com/plan-dev/plan/formats"
)

// Targets lists the workload's LLM classes with their rates (formats.RateTargeter).
func (workloadSection) Targets(w *formats.Workload) []formats.RateTarget {
	var out []formats.RateTarget
	for _, c := range ClassesOf(w) {
		out = append(out, formats.RateTarget{Name: c.Name, RateRPS: c.RateRPS})
	}
	return out
}

// WithRates sets in w a copy of its classes with each rate rate(name, rate)
// (formats.RateTargeter).
func (workloadSection) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	cs := slices.Clone(ClassesOf(w))
	for i := range cs {
		cs[i].RateRPS = rate(cs[i].Name, cs[i].RateRPS)
	}
	SetClasses(w, cs)
}

// GPUsUsed counts the GPUs of the plan's instances per type: gpu_count each, at least one
// (a tensor-parallel instance spans gpu_count GPUs; formats.GPUCounter).
func (planSection) GPUsUsed(p *formats.Plan) map[string]int {
	q := PlanOf(p)
	if q == nil {
		return nil
	}
	used := map[string]int{}
	for _, in := range q.Instances {
		used[in.GPU] += max(in.GPUCount, 1)
	}
	return used
}
