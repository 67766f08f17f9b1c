package cascade

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// ScalePlan lays cascade plan p out k times over k times the GPUs, in place (the simulator's
// scale benchmarks and `plan bench speed`): copy c's replicas sit on the GPUs of the c-th
// copy of the cluster, every gear's QPS range and the workload's qps_max grow k-fold and
// each replica's share is divided by k, so every replica sees the load of the original plan
// at k times the rate and the simulator's work per request stays constant while N grows.
// p must embed its cluster and workload (provenance.embedded), as a solved plan does.
func ScalePlan(p *formats.Plan, k int) error {
	if cascadesec.PlanOf(p) == nil || p.Provenance.Embedded == nil || p.Provenance.Embedded.Cluster == nil || p.Provenance.Embedded.Workload == nil {
		return fmt.Errorf("cascade: scale plan: want a cascade plan with its cluster and workload embedded")
	}
	if k < 1 {
		return fmt.Errorf("cascade: scale plan: factor %d, want >= 1", k)
	}
	e := p.Provenance.Embedded
	per := 0
	for i := range e.Cluster.GPUs {
		per += e.Cluster.GPUs[i].Count
		e.Cluster.GPUs[i].Count *= k
	}
	for i := range cascadesec.CascadesOf(e.Workload) {
		cascadesec.CascadesOf(e.Workload)[i].QPSMax *= float64(k)
	}
	cp := cascadesec.PlanOf(p)
	base := cp.Placement
	cp.Placement = nil
	for c := 0; c < k; c++ {
		for _, r := range base {
			gs := make([]int, len(r.GPUs))
			for i, g := range r.GPUs {
				gs[i] = g + c*per
			}
			cp.Placement = append(cp.Placement, cascadesec.Replica{Model: r.Model, GPUs: gs})
		}
	}
	for gi := range cp.Gears {
		g := &cp.Gears[gi]
		g.QLo *= float64(k)
		g.QHi *= float64(k)
		for m, sh := range g.Share {
			var out []float64
			for c := 0; c < k; c++ {
				for _, x := range sh {
					out = append(out, x/float64(k))
				}
			}
			g.Share[m] = out
		}
	}
	return nil
}

// ScaledDeployment is the deployment of p scaled k-fold by ScalePlan (p is changed).
func ScaledDeployment(p *formats.Plan, k int) (*dataplane.Deployment, error) {
	if err := ScalePlan(p, k); err != nil {
		return nil, err
	}
	return FromPlan(p)
}
