package dyorc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
)

// CostUtilization is ρ of the cost objective: a fleet serves the workflows when the placement
// keeps every GPU's expected load (busy seconds per second at the services' max batch) at
// most ρ, the headroom the speculative scheduler and bursts need [ours: DyOrc plans no fleet].
const CostUtilization = 0.8

// SolveCost is `plan solve --objective cost` for workflows: DyOrc's data
// plane runs one GPU type (dp.ClusterOf), so for each GPU type of the cluster alone it finds
// the fewest GPUs, within its available count, whose least-loaded placement (Solve's MILP:
// min max_g load) keeps every GPU at most CostUtilization busy and within memory, and
// whose apps meet their SLOs at their rates in simulation (holdsRates); the cheapest of
// those fleets (count × price) is the plan. The count of one type is searched
// upward from max(⌈Σ load/ρ⌉, ⌈Σ weights/memory⌉), so the first that fits is the least cost
// for that type.
func SolveCost(ctx context.Context, wl *formats.Workload, cl *formats.Cluster, refs []formats.InputRef, o Options) (*formats.Plan, error) {
	w, err := compileInputs(wl, cl)
	if err != nil {
		return nil, err
	}
	prices, _, err := cl.Prices()
	if err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	load := Load(w)
	total, bytes := 0.0, 0.0
	for s, l := range load {
		total += l
		bytes += float64(w.Services[s].Bytes)
	}
	began := time.Now()
	var best *formats.Plan
	// lbCost is a proven lower bound on any fleet's cost: a fleet of one type holds the
	// services only on at least lo GPUs of it (the load and memory bounds below hold for every
	// placement), whatever the placement's MILP and the simulation then say of it.
	bestCost, lbCost := math.Inf(1), math.Inf(1)
	var short []string
	for _, pool := range cl.GPUs {
		mem := pool.MemoryBytes
		if mem == 0 {
			mem = formats.KnownGPUMemory(pool.Type)
		}
		lo := max(1, int(math.Ceil(total/CostUtilization-absTol)))
		if mem > 0 {
			lo = max(lo, int(math.Ceil(bytes/float64(mem)-absTol)))
		}
		hi := min(cl.AvailableOf(pool.Type), lo+len(w.Services)+1)
		if lo <= hi {
			lbCost = math.Min(lbCost, float64(lo)*prices[pool.Type])
		}
		if float64(lo)*prices[pool.Type] >= bestCost {
			continue
		}
		found := false
		for n := lo; n <= hi && float64(n)*prices[pool.Type] < bestCost; n++ {
			one := *cl
			p := pool
			p.Count = n
			one.GPUs, one.Servers = []formats.GPUPool{p}, nil
			plan, err := Solve(ctx, wl, &one, refs, o)
			if errors.Is(err, planner.ErrInfeasible) || errors.Is(err, planner.ErrInput) {
				continue // the services do not fit n GPUs of this type
			}
			if err != nil {
				return nil, err
			}
			// The busiest GPU's load within the cost model's bound, and every app's rate
			// within its SLO in simulation (holdsRates; the load bound alone sized fleets
			// whose apps missed their SLOs in simulation). The load is checked first: it
			// costs nothing.
			if dyorcsec.PlanOf(plan).Params["expected_max_gpu_load"] > CostUtilization+absTol {
				continue
			}
			ok, err := holdsRates(ctx, o.Sim, plan)
			if err != nil {
				return nil, err
			}
			if ok {
				best, bestCost, found = plan, float64(n)*prices[pool.Type], true
				break
			}
		}
		if !found && hi < lo+len(w.Services)+1 {
			short = append(short, fmt.Sprintf("cluster: gpus[type=%s].available: %d: they serve at most %.1f%% of the workflows' apps rate_rps (expected load %.3g GPU-s/s, at most %.0f%% per GPU): raise available or lower the rates",
				pool.Type, hi, 100*float64(hi)*CostUtilization/total, total, 100*CostUtilization))
		}
	}
	if best == nil {
		if len(short) > 0 {
			return nil, &planner.InputError{Problems: short}
		}
		return nil, fmt.Errorf("%w: no GPU type of the cluster holds the workflow services within %.0f%% load", planner.ErrInfeasible, 100*CostUtilization)
	}
	// The plan embeds the cluster as given (every type, availability), so re-solving
	// compares the types again; its cluster is the chosen type sized to the fleet.
	best.Provenance.Embedded.Cluster = cl
	if best.Provenance.InputDigest, err = planner.InputDigest(best.Provenance.Embedded); err != nil {
		return nil, err
	}
	best.Provenance.Options = planner.RecordOptions(Flags{Gap: o.Gap, Policy: o.Policy, Objective: planner.ObjectiveCost, TimeLimit: limitIfHit(best.Provenance.Status, o.TimeLimit)})
	if o.Gap <= 0 {
		best.Provenance.Options = planner.RecordOptions(Flags{Gap: 0.01, Policy: o.Policy, Objective: planner.ObjectiveCost, TimeLimit: limitIfHit(best.Provenance.Status, o.TimeLimit)})
	}
	best.Provenance.SolveMs = float64(time.Since(began).Microseconds()) / 1000
	if o.Deterministic {
		best.Provenance.SolveMs = 0
	}
	if err := fleet.Record(best, cl); err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	// The search tries every type's counts upward, but whether a count serves the apps rests
	// on the placement MILP (to its gap) and on simulation, neither a proof; what is proven is
	// lbCost. The plan is optimal where it costs that, a heuristic with its gap otherwise.
	cost := best.Provenance.Objective
	bound := math.Min(cost, lbCost)
	best.Provenance.Bound = formats.Proven(bound)
	best.Provenance.Gap = formats.Proven(0)
	best.Provenance.Status = "optimal"
	if cost > 0 && bound < cost {
		best.Provenance.Gap = formats.Proven(math.Ceil((cost-bound)/cost*1e6) / 1e6)
		best.Provenance.Status = "heuristic"
	}
	return best, nil
}
