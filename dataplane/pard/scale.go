package pard

import "github.com/plan-dev/plan/dataplane"

// ScaledPipeline is a fixed three-module pipeline on T4s with k times the workers of its 1×
// point (4, 8 and 4 workers) and k times the rate, at load × its capacity: only N grows, the
// work per request stays the same (the simulator's scale benchmarks and `plan bench speed`).
func ScaledPipeline(k int, load float64) (*dataplane.Deployment, error) {
	lat := func(base dataplane.Time, batch int) []dataplane.Time {
		l := make([]dataplane.Time, batch+1)
		for b := 1; b <= batch; b++ {
			l[b] = base + dataplane.Time(b-1)*base/3
		}
		return l
	}
	mods := []ModuleSpec{
		{Name: "detect", GPU: "T4", Batch: 4, Workers: 4 * k, LatUs: lat(6000, 4)},
		{Name: "classify", GPU: "T4", Batch: 8, Workers: 8 * k, LatUs: lat(9000, 8), After: []string{"detect"}},
		{Name: "caption", GPU: "T4", Batch: 4, Workers: 4 * k, LatUs: lat(5000, 4), After: []string{"classify"}},
	}
	capacity := 1e18
	var slo dataplane.Time
	for _, m := range mods {
		capacity = min(capacity, float64(m.Workers*m.Batch)/(float64(m.LatUs[m.Batch])/1e6))
		slo += 3 * m.LatUs[m.Batch]
	}
	return NewPipelineDeployment([]PipelineSpec{{Name: "app", Modules: mods, SLO: slo, RateRPS: load * capacity}}, DefaultHop)
}
