package dyorc

import (
	"fmt"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

// The capacity model's two constants [ours], fitted on the simulator running the plan's own
// policy (TestCapacityMatchesSimulator in internal/systems/dyorcsys: testdata/dyorc/small.json
// solved on 2, 4, 8 and 16 GPUs, where the most each plan serves at 99% on time is 0.21,
// 0.84, 2.0 and about 3.8 times the workload's rates).
const (
	// CapacityUtilization is the share of a GPU's time that carries work at the services'
	// max batch (Load) when the apps still keep their SLOs: the online scheduler (§5) runs
	// batches below the max batch while they gather, and a GPU's short calls queue behind
	// its long ones (an sd15 batch of 8 takes 12 s, the image app's SLO is 5 s).
	CapacityUtilization = 0.47
	// CapacityReserveGPUs is the GPUs' worth of time a plan loses whatever its size: the
	// fixed cost of each batch (a service's base latency) weighs most on a small cluster,
	// whose rates give small batches.
	CapacityReserveGPUs = 1.2
)

// Capacity is the most requests per second each application of a DyOrc plan serves within
// its SLO at the plan's application mix (the autopilot's capacity model, keyed by app name).
// The work per request is the expected calls of the app's workflow on each service times
// the service's time per item at its max batch (Load, the placement MILP's load model); at
// the workload's rates the apps together need W GPU-seconds per second. The online
// scheduler spreads that work over the plan's G GPUs (the MILP's placement spreads it
// evenly), so every rate scales by U·(G − G₀)/W (U = CapacityUtilization, G₀ =
// CapacityReserveGPUs), and no further than the plan's instances carry: a service on r
// GPUs takes at most U·r of them, so an app scales by at most U·r/load over the services
// it calls. More GPUs carry more: the capacity grows with the cluster the placement was
// solved for.
func Capacity(p *formats.Plan) (map[string]float64, error) {
	if p == nil || dyorcsec.PlanOf(p) == nil {
		return nil, fmt.Errorf("dyorc: the plan has no dyorc section")
	}
	w, _, err := inputs(p)
	if err != nil {
		return nil, err
	}
	load := Load(w)
	reps := make([]int, len(w.Services))
	for _, g := range dyorcsec.PlanOf(p).Placement {
		for _, s := range g.Services {
			if sv, ok := w.SvcIndex[s]; ok {
				reps[sv]++
			}
		}
	}
	var work float64
	for _, l := range load {
		work += l
	}
	gpus := float64(len(dyorcsec.PlanOf(p).Placement))
	if !(work > 0) || gpus == 0 {
		return nil, fmt.Errorf("dyorc: the plan's services carry no expected load (or it places none): no capacity")
	}
	// A plan on fewer GPUs than G₀ still serves: at least a quarter of its GPUs' time.
	pooled := CapacityUtilization * max(gpus-CapacityReserveGPUs, gpus/4) / work
	out := make(map[string]float64, len(w.Apps))
	for i := range w.Apps {
		a := &w.Apps[i]
		scale := pooled
		for _, n := range a.Nodes {
			if reps[n.Svc] == 0 {
				return nil, fmt.Errorf("app %s: service %s is placed on no GPU (dyorc.placement)", a.Name, w.Services[n.Svc].Name)
			}
			if l := load[n.Svc]; l > 0 {
				scale = min(scale, CapacityUtilization*float64(reps[n.Svc])/l)
			}
		}
		rate := a.RateRPS
		if rate <= 0 {
			rate = DefaultRate
		}
		out[a.Name] = rate * scale
	}
	return out, nil
}
