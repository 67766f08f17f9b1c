package dyorcsec

import (
	"maps"

	"github.com/plan-dev/plan/formats"
)

// Targets lists the workflow applications by name with their rates (formats.RateTargeter).
func (workloadSection) Targets(w *formats.Workload) []formats.RateTarget {
	wf := WorkflowsOf(w)
	if wf == nil {
		return nil
	}
	var out []formats.RateTarget
	for _, n := range formats.SortedKeys(wf.Apps) {
		out = append(out, formats.RateTarget{Name: n, RateRPS: wf.Apps[n].RateRPS})
	}
	return out
}

// WithRates sets in w a copy of its workflows whose apps have each rate rate(name, rate);
// the services stay shared (formats.RateTargeter).
func (workloadSection) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	src := WorkflowsOf(w)
	if src == nil {
		return
	}
	wf := *src
	wf.Apps = maps.Clone(src.Apps)
	for n, a := range wf.Apps {
		a.RateRPS = rate(n, a.RateRPS)
		wf.Apps[n] = a
	}
	SetWorkflows(w, &wf)
}

// GPUsUsed counts the GPUs the plan deploys per type: with a seed placement, each placed
// GPU of the plan's cluster that holds a service; without one, the deployments' replicas,
// one GPU each (formats.GPUCounter).
func (planSection) GPUsUsed(p *formats.Plan) map[string]int {
	d := PlanOf(p)
	if d == nil {
		return nil
	}
	if len(d.Placement) > 0 {
		// The placement lists each GPU once (validation).
		held := map[int]bool{}
		for _, g := range d.Placement {
			if len(g.Services) > 0 {
				held[g.GPU] = true
			}
		}
		return p.Cluster.CountGPUIndices(held)
	}
	used := map[string]int{}
	for _, s := range d.Deployments {
		used[s.GPU] += s.Replicas
	}
	return used
}
