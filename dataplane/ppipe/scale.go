package ppipe

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// ScaledDeployment lays plan p out k times over (the simulator's scale benchmarks and
// `plan bench speed`): every GPU pool, partition count and throughput of p is multiplied by
// k, in place, so the same plan shape runs at k times the GPUs and k times the rate, the
// simulator's work per request stays constant and only N grows.
func ScaledDeployment(p *formats.Plan, k int) (*dataplane.Deployment, error) {
	if ppipesec.PlanOf(p) == nil {
		return nil, fmt.Errorf("ppipe: scaled deployment: the plan has no ppipe section")
	}
	if k < 1 {
		return nil, fmt.Errorf("ppipe: scaled deployment: factor %d, want >= 1", k)
	}
	for i := range p.Cluster.GPUs {
		p.Cluster.GPUs[i].Count *= k
	}
	for mi := range ppipesec.PlanOf(p).Models {
		m := &ppipesec.PlanOf(p).Models[mi]
		m.ThroughputRPS *= float64(k)
		m.TargetRPS *= float64(k)
		for pi := range m.Pipelines {
			pl := &m.Pipelines[pi]
			pl.ThroughputRPS *= float64(k)
			for di := range pl.Partitions {
				pl.Partitions[di].Count *= k
			}
		}
	}
	return FromPlan(p)
}
