package dyorc

import (
	"fmt"
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

// ClusterOf reads the GPU side of a cluster file: every GPU of its pools, in order (DyOrc's
// data plane models one GPU type; the largest memory and the first pool's grouping are used).
func ClusterOf(c *formats.Cluster) (Cluster, error) {
	var out Cluster
	for _, g := range c.GPUs {
		out.GPUs += g.Count
		m := g.MemoryBytes
		if m == 0 {
			m = formats.KnownGPUMemory(g.Type)
		}
		out.MemBytes = max(out.MemBytes, m)
		if out.Type == "" {
			out.Type, out.PerServer = g.Type, g.PerServer
		}
	}
	if out.GPUs == 0 {
		return out, fmt.Errorf("cluster has no GPUs")
	}
	return out, nil
}

// FromPlan builds the deployment a dyorc plan describes: the workflows come from the plan's
// embedded workload, the GPUs from its cluster, the warm placement from placement (or, when
// absent, each deployment's replicas spread over the GPUs in turn).
func FromPlan(p *formats.Plan) (*dataplane.Deployment, error) {
	if dyorcsec.PlanOf(p) == nil {
		return nil, formats.ErrorList{{Path: "dyorc", Rule: "the plan has no dyorc section"}}
	}
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil || dyorcsec.WorkflowsOf(e.Workload) == nil {
		return nil, formats.ErrorList{{Path: "provenance.embedded.workload", Rule: "a dyorc plan must embed the workload with its workflows"}}
	}
	cl := p.Cluster
	if cl == nil {
		cl = e.Cluster
	}
	if cl == nil {
		return nil, formats.ErrorList{{Path: "cluster", Rule: "a dyorc plan must carry its cluster"}}
	}
	w, err := Compile(dyorcsec.WorkflowsOf(e.Workload))
	if err != nil {
		return nil, formats.ErrorList{{Path: "provenance.embedded.workload", Rule: err.Error()}}
	}
	c, err := ClusterOf(cl)
	if err != nil {
		return nil, formats.ErrorList{{Path: "cluster", Rule: err.Error()}}
	}
	warm := make([][]int, c.GPUs)
	if len(dyorcsec.PlanOf(p).Placement) > 0 {
		for i, g := range dyorcsec.PlanOf(p).Placement {
			if g.GPU >= c.GPUs {
				return nil, formats.ErrorList{{Path: fmt.Sprintf("dyorc.placement[%d].gpu", i), Value: fmt.Sprint(g.GPU), Rule: fmt.Sprintf("the cluster has %d GPUs", c.GPUs)}}
			}
			for j, s := range g.Services {
				sv, ok := w.SvcIndex[s]
				if !ok {
					return nil, formats.ErrorList{{Path: fmt.Sprintf("dyorc.placement[%d].services[%d]", i, j), Value: s, Rule: "not a workflow service"}}
				}
				warm[g.GPU] = append(warm[g.GPU], sv)
			}
		}
	} else {
		g := 0
		for _, d := range dyorcsec.PlanOf(p).Deployments {
			sv, ok := w.SvcIndex[d.Service]
			if !ok {
				continue
			}
			for k := 0; k < d.Replicas; k++ {
				warm[g%c.GPUs] = append(warm[g%c.GPUs], sv)
				g++
			}
		}
	}
	net := DefaultNet
	if v, ok := dyorcsec.PlanOf(p).Params["ingress_us"]; ok {
		net.IngressUs = v
	}
	d, err := NewDeployment(w, c, warm, net)
	if err != nil {
		return nil, formats.ErrorList{{Path: "dyorc", Rule: err.Error()}}
	}
	return d, nil
}

// Sample builds a small random DyOrc deployment from r (the conformance harness): two to
// three services, a chain app with an optional step and a choice, and a bounded loop app, on
// one to four GPUs with room for only some services at once.
func Sample(r *rand.Rand) *dataplane.Deployment {
	ns := 2 + r.IntN(2)
	wf := &dyorcsec.Workflows{Services: map[string]dyorcsec.Service{}, Apps: map[string]dyorcsec.App{}}
	var names []string
	for k := 0; k < ns; k++ {
		n := fmt.Sprintf("s%d", k)
		names = append(names, n)
		wf.Services[n] = dyorcsec.Service{WeightsGB: 1 + float64(r.IntN(3)), MaxBatch: 1 + r.IntN(8),
			Latency: &dyorcsec.ServiceLatency{BaseUs: float64(2000 + r.IntN(20000)), PerItemUs: float64(200 + r.IntN(3000))}, OutKB: float64(r.IntN(512))}
	}
	pc := 0.2 + 0.6*r.Float64()
	wf.Apps["chain"] = dyorcsec.App{Steps: []dyorcsec.Step{
		{ID: "a", Service: names[0]},
		{ID: "b", Choice: map[string]float64{names[1]: pc, names[ns-1] + "": 1 - pc}, When: "a.go", P: 0.5 + 0.5*r.Float64()},
		{ID: "c", Service: names[0], Fanout: 1 + r.IntN(2)},
	}}
	if ns == 2 {
		wf.Apps["chain"].Steps[1].Choice = map[string]float64{names[1]: 1}
	}
	wf.Apps["loop"] = dyorcsec.App{Loop: &dyorcsec.Loop{ID: "round", MaxIter: 3, PStop: []float64{0.5, 0.5, 1},
		Body: []dyorcsec.Step{{ID: "x", Service: names[ns-1], Fanout: 1 + r.IntN(3)}}}}
	w, err := Compile(wf)
	if err != nil {
		panic(fmt.Sprintf("dyorc.Sample: %v", err)) // a bug in Sample
	}
	for i := range w.Apps {
		w.Apps[i].SLOUs = 2e5 + float64(r.IntN(400000))
		w.Apps[i].RateRPS = float64(5 + r.IntN(40))
	}
	g := 1 + r.IntN(4)
	c := Cluster{GPUs: g, PerServer: 1 + r.IntN(g), MemBytes: int64(3+r.IntN(4)) * 1.2e9, Type: "T4"}
	warm := make([][]int, g)
	if r.IntN(2) == 0 {
		warm[0] = []int{0}
	}
	net := DefaultNet
	net.HostLatUs, net.DiskUsPerGB = 2000, 10000
	d, err := NewDeployment(w, c, warm, net)
	if err != nil {
		panic(fmt.Sprintf("dyorc.Sample built an invalid deployment: %v", err))
	}
	return d
}
