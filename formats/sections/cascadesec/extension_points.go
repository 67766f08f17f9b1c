package cascadesec

import (
	"slices"

	"github.com/plan-dev/plan/formats"
)

// Targets lists the workload's cascades with their qps_max, the top of the QPS range the
// gear plan covers (CascadeServe §4) rather than a rate asked for: Range
// (formats.RateTargeter).
func (workloadSection) Targets(w *formats.Workload) []formats.RateTarget {
	var out []formats.RateTarget
	for _, cs := range CascadesOf(w) {
		out = append(out, formats.RateTarget{Name: cs.Name, RateRPS: cs.QPSMax, Range: true})
	}
	return out
}

// WithRates sets in w a copy of its cascades with each qps_max rate(name, qps_max)
// (formats.RateTargeter).
func (workloadSection) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	cs := slices.Clone(CascadesOf(w))
	for i := range cs {
		cs[i].QPSMax = rate(cs[i].Name, cs[i].QPSMax)
	}
	SetCascades(w, cs)
}

// GPUsUsed counts the GPUs the placement's replicas occupy per type: each GPU index of the
// plan's cluster once, however many replicas share it (formats.GPUCounter).
func (planSection) GPUsUsed(p *formats.Plan) map[string]int {
	cp := PlanOf(p)
	if cp == nil {
		return nil
	}
	seen := map[int]bool{}
	for _, r := range cp.Placement {
		for _, g := range r.GPUs {
			seen[g] = true
		}
	}
	types := p.Cluster.GPUIndexTypes()
	used := map[string]int{}
	for g := range seen {
		if g >= 0 && g < len(types) {
			used[types[g]]++
		}
	}
	return used
}
