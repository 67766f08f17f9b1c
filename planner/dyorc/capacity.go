package dyorc

import (
	"context"
	"fmt"
	"maps"

	"github.com/plan-dev/plan/dataplane"
	dp "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

// Why DyOrc's capacity is simulated, not priced [ours]. Load prices every call at its
// service's max batch (the placement MILP's load: what the services cost when the GPUs run
// them at their most efficient). The online scheduler does not run them there: it places
// each call where the request finishes earliest (DyOrc §5, Eq. 1), a call joins a queued
// batch of its service only if that beats starting alone on another GPU (§5.1, no batching
// timeout), and a GPU runs one batch at a time whatever services it holds (§6.1). While a GPU
// frees up soon, a language model's call (base 1.44 s, 0.16 s per item, its members' work
// spread ±50% so that a batch lasts as long as its longest member) starts alone there rather
// than joining a batch, so beside an app with a short SLO the long-base services run at
// batches of 1 to 2 (llm7b at 1.6 s per call, not the 0.21 s per item of a full batch: 7.8×
// the GPU time) and sd15 at 1 (2.5 s, not 1.5 s). How large the batches grow before the
// tightest SLO breaks depends on the mix, the GPU count and every service's base, per-item
// time and spread. At the highest load at which every app holds 99% (on three seeds):
//
//	workload (GPUs)              llm7b batch  cap batch  GPUs busy  U·(G−G₀)/W  simulated
//	dyorc/small (4)                 1.4          4.0        0.98       1.25        1.29
//	dyorc/small (16)                2.0         11.6        0.98       6.59        6.59
//	dyorc/image (8)                  -          21.4        0.96       5.37       12.27
//	dyorc/gill (8)                 20.1           -         0.96       2.75        5.79
//	dyorc/workload, MIX (32)        3.0          9.9        0.97       3.91        3.34
//	autopilot, 16 + 160 rps (32)    1.6         11.1        0.95       1.03        0.88
//
// (batches in calls; capacities as factors of each workload's own rates; gill and MIX over
// spans of 20 SLOs, the others over the prediction's.)
// The former model, the max-batch work W spread over the plan's G GPUs at a utilisation
// U = 0.47 fitted on small.json, is right only for mixes like the one it was fitted on: it
// is 2 to 3× pessimistic for an app alone (whose batches do fill) and 17% optimistic for the
// autopilot fixture's mix on 32 GPUs, whose plan at 16 and 160 rps then missed its
// prediction (image 96.6% within its SLO). A closed form of the batches the scheduler forms
// (each service's calls spread over the GPUs for a cycle bounded by the tightest SLO, §5.1
// batch joins, work spread) came no closer than ±25% over these workloads. So a plan's
// capacity is what `plan solve`'s prediction judges it by: the simulator running the plan's
// own policy (Simulator), searched over multiples of the workload's rates; the fitted
// formula (estimate) only starts the search, and stands in where no simulator is installed.

// CapacityPrecision is the relative precision of the capacity search [ours]: the capacity's
// load factor is within 3% below the lowest one that fails.
const CapacityPrecision = 1.03

// capacityStep is the factor the search steps by from its start to a bracket, and
// capacitySteps the most steps it takes either way (1.25^16 ≈ 36×) [ours]: the estimate is
// within 20% on mixes and 2–3× low for an app alone.
const (
	capacityStep  = 1.25
	capacitySteps = 16
)

// The fitted formula's two constants [ours], fitted on the simulator running the plan's own
// policy (testdata/dyorc/small.json solved on 2, 4, 8 and 16 GPUs): the search's start, and
// the capacity where no simulator is installed.
const (
	// CapacityUtilization is the share of a GPU's time that carries work at the services'
	// max batch (Load) when the apps still keep their SLOs, on small.json's mix.
	CapacityUtilization = 0.47
	// CapacityReserveGPUs is the GPUs' worth of time a plan loses whatever its size: the
	// fixed cost of each batch (a service's base latency) weighs most on a small cluster,
	// whose rates give small batches.
	CapacityReserveGPUs = 1.2
)

// Simulator says whether plan p, deployed as dep (dataplane/dyorc's FromPlan), meets every
// app's target at its embedded workload's rates under its policy: `plan solve`'s prediction
// at the plan's rates (sim.Predict with RatesOnly: PredictionSeed and its replications over
// the prediction's span), the verdict a solved plan is judged by. Planner and sim never
// import each other (DESIGN.md), so the registry hands it to each call (Options.Sim,
// Capacity's sim; internal/registry/systems/dyorcsys passes dyorcsim.PredictAtRates): no package
// state.
type Simulator func(ctx context.Context, p *formats.Plan, dep *dataplane.Deployment, policies *dataplane.Registry, policy string) (bool, error)

// Capacity is the most requests per second each application of a DyOrc plan serves within
// its SLO at the plan's application mix (the autopilot's capacity model, keyed by app name):
// the workload's rates (DefaultRate for an app without one) times the highest factor at
// which the plan meets every app's target in simulation (Simulator), 0 for every app when it
// misses even at a trickle (1/36 of the estimate). More GPUs carry more: the capacity
// grows with the cluster the placement was solved for. Without a simulator (sim nil) it is
// the fitted formula (estimate).
func Capacity(p *formats.Plan, sim Simulator) (map[string]float64, error) {
	return capacity(context.Background(), sim, p)
}

func capacity(ctx context.Context, sim Simulator, p *formats.Plan) (map[string]float64, error) {
	est, w, err := estimate(p)
	if err != nil {
		return nil, err
	}
	if sim == nil {
		return est, nil
	}
	start := 0.0
	for i := range w.Apps {
		if s := est[w.Apps[i].Name] / rateOf(&w.Apps[i]); start == 0 || s < start {
			start = s
		}
	}
	k, err := searchScale(start, func(k float64) (bool, error) { return meetsAt(ctx, sim, p, k) })
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(w.Apps))
	for i := range w.Apps {
		out[w.Apps[i].Name] = k * rateOf(&w.Apps[i])
	}
	return out, nil
}

// rateOf is an app's rate as the planner takes it.
func rateOf(a *dp.App) float64 {
	if a.RateRPS > 0 {
		return a.RateRPS
	}
	return DefaultRate
}

// searchScale is the highest k at which meets holds, to CapacityPrecision: from start it
// steps by capacityStep to a bracket, then bisects; 0 when meets fails at the lowest step.
// meets is assumed monotone.
func searchScale(start float64, meets func(float64) (bool, error)) (float64, error) {
	ok, err := meets(start)
	if err != nil {
		return 0, err
	}
	if !ok {
		return downTo(start, meets)
	}
	lo, k := start, start
	for i := 0; i < capacitySteps; i++ {
		k *= capacityStep
		if ok, err = meets(k); err != nil || !ok {
			break
		}
		lo = k
	}
	if err != nil {
		return 0, err
	}
	if ok {
		return lo, nil // holds as far as the search steps
	}
	return bisect(lo, k, meets)
}

// downTo is the highest factor below hi, where meets fails, at which it holds: stepping down
// by capacityStep to a bracket, then bisecting; 0 when it fails at the lowest step.
func downTo(hi float64, meets func(float64) (bool, error)) (float64, error) {
	k := hi
	for i := 0; i < capacitySteps; i++ {
		k /= capacityStep
		ok, err := meets(k)
		if err != nil {
			return 0, err
		}
		if ok {
			return bisect(k, hi, meets)
		}
		hi = k
	}
	return 0, nil
}

// bisect narrows lo (meets holds) and hi (it fails) until hi is within CapacityPrecision of
// lo, and returns lo.
func bisect(lo, hi float64, meets func(float64) (bool, error)) (float64, error) {
	for hi > lo*CapacityPrecision {
		mid := (lo + hi) / 2
		ok, err := meets(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// meetsAt is the prediction's verdict on plan p with every app at k times its workload rate
// (Simulator).
func meetsAt(ctx context.Context, sim Simulator, p *formats.Plan, k float64) (bool, error) {
	q, err := atScale(p, k)
	if err != nil {
		return false, err
	}
	dep, err := dp.FromPlan(q)
	if err != nil {
		return false, err
	}
	return sim(ctx, q, dep, dataplane.NewRegistry(dp.Policies()...), policyOf(p))
}

// policyOf is the runtime policy plan p names (dyorc when none).
func policyOf(p *formats.Plan) string {
	if pol := dyorcsec.PlanOf(p).Policy; pol != "" {
		return pol
	}
	return "dyorc"
}

// atScale is plan p with its embedded workload's app rates times k (DefaultRate for an app
// without one): what a prediction of p at k times its rates simulates.
func atScale(p *formats.Plan, k float64) (*formats.Plan, error) {
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil || dyorcsec.WorkflowsOf(e.Workload) == nil {
		return nil, fmt.Errorf("provenance.embedded holds no workload with workflows")
	}
	wl := *e.Workload
	wl.Sections = maps.Clone(e.Workload.Sections) // the section set below must not reach p's
	wf := *dyorcsec.WorkflowsOf(e.Workload)
	wf.Apps = maps.Clone(wf.Apps)
	for n, a := range wf.Apps {
		rate := a.RateRPS
		if rate <= 0 {
			rate = DefaultRate
		}
		a.RateRPS = rate * k
		wf.Apps[n] = a
	}
	dyorcsec.SetWorkflows(&wl, &wf)
	emb := *e
	emb.Workload = &wl
	q := *p
	q.Provenance.Embedded = &emb
	q.Prediction = nil
	return &q, nil
}

// estimate is the fitted formula: the work per request is the expected calls of the app's
// workflow on each service times the service's time per item at its max batch (Load); at
// the workload's rates the apps together need W GPU-seconds per second, and the plan's G
// GPUs carry U·(G − G₀) of them (U = CapacityUtilization, G₀ = CapacityReserveGPUs), no
// further than the plan's instances carry: a service on r GPUs takes at most U·r of them.
// It also returns the compiled workflows.
func estimate(p *formats.Plan) (map[string]float64, *dp.Workflow, error) {
	if p == nil || dyorcsec.PlanOf(p) == nil {
		return nil, nil, fmt.Errorf("dyorc: the plan has no dyorc section")
	}
	w, _, err := inputs(p)
	if err != nil {
		return nil, nil, err
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
		return nil, nil, fmt.Errorf("dyorc: the plan's services carry no expected load (or it places none): no capacity")
	}
	// A plan on fewer GPUs than G₀ still serves: at least a quarter of its GPUs' time.
	pooled := CapacityUtilization * max(gpus-CapacityReserveGPUs, gpus/4) / work
	out := make(map[string]float64, len(w.Apps))
	for i := range w.Apps {
		a := &w.Apps[i]
		scale := pooled
		for _, n := range a.Nodes {
			if reps[n.Svc] == 0 {
				return nil, nil, fmt.Errorf("app %s: service %s is placed on no GPU (dyorc.placement)", a.Name, w.Services[n.Svc].Name)
			}
			if l := load[n.Svc]; l > 0 {
				scale = min(scale, CapacityUtilization*float64(reps[n.Svc])/l)
			}
		}
		out[a.Name] = rateOf(a) * scale
	}
	return out, w, nil
}
