package cascadesec

import (
	"github.com/plan-dev/plan/formats"
)

// rated names an item of the section and its rate field for formats.RatedList.
var rated = formats.RatedList[Cascade]{Rated: func(x *Cascade) (string, *float64) { return x.Name, &x.QPSMax }, Range: true}

// Targets lists the workload's cascades with their qps_max, the top of the QPS range the
// gear plan covers (CascadeServe §4) rather than a rate asked for: Range
// (formats.RateTargeter).
func (workloadSection) Targets(w *formats.Workload) []formats.RateTarget {
	return rated.Targets(CascadesOf(w))
}

// WithRates sets in w a copy of its cascades with each rate rate(name, rate)
// (formats.RateTargeter).
func (workloadSection) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	SetCascades(w, rated.WithRates(CascadesOf(w), rate))
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
	return p.Cluster.CountGPUIndices(seen)
}
