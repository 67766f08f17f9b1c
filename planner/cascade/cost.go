package cascade

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
)

// costSearchGPUs is how many GPUs of a type without `available` the cost objective tries
// (when the cluster's count is smaller): CascadeServe plans each GPU count by simulation.
const costSearchGPUs = 8

// SolveCost is `plan solve --objective cost` for cascades: CascadeServe
// plans one GPU type (HardwareOf), so for each GPU type of the cluster alone it runs the
// --min-gpus search (the fewest GPUs whose gear plan meets the SLOs) up to the type's
// available count (or max(count, 8) without one), and keeps the fleet of least cost
// (GPUs × price). Its cluster is the chosen type sized to the GPUs the placement uses.
func SolveCost(ctx context.Context, in planner.Inputs, o Options) (*formats.Plan, error) {
	cl := in.Cluster
	if cl == nil || len(cl.GPUs) == 0 {
		return nil, &planner.InputError{Problems: []string{"cluster: gpus: must list at least one GPU pool"}}
	}
	prices, _, err := cl.Prices()
	if err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	o.MinGPUs = true
	var best *formats.Plan
	var bestOne *formats.Cluster
	bestCost := math.Inf(1)
	var fails []string
	for _, pool := range cl.GPUs {
		lim := cl.AvailableOf(pool.Type)
		if lim == math.MaxInt {
			lim = max(pool.Count, costSearchGPUs)
		}
		if lim < 1 {
			fails = append(fails, fmt.Sprintf("cluster: gpus[type=%s].available: %d: no GPU to plan on", pool.Type, lim))
			continue
		}
		if prices[pool.Type] >= bestCost {
			continue
		}
		one := *cl
		p := pool
		p.Count = lim
		if p.MemoryBytes == 0 {
			p.MemoryBytes = formats.KnownGPUMemory(p.Type)
		}
		one.GPUs, one.Servers = []formats.GPUPool{p}, nil
		o.GPUs = lim
		plan, _, err := Solve(ctx, planner.Inputs{Profiles: in.Profiles, Cluster: &one, Workload: in.Workload, Refs: in.Refs}, o)
		if err != nil {
			if errors.Is(err, planner.ErrInfeasible) || errors.Is(err, planner.ErrInput) {
				fails = append(fails, fmt.Sprintf("cluster: gpus[type=%s].available: %d: %s", pool.Type, lim, strings.ReplaceAll(err.Error(), "\n", "; ")))
				continue
			}
			return nil, err
		}
		cost := float64(fleet.Used(plan)[pool.Type]) * prices[pool.Type]
		if cost < bestCost {
			best, bestOne, bestCost = plan, &one, cost
		}
	}
	if best == nil {
		// Each problem names the cluster field (the CLI puts the file name in front).
		return nil, &planner.InputError{Problems: fails}
	}
	// The plan embeds the chosen type's pool alone (its count the search's ceiling): the
	// verifier, the deployer and the exporters read CascadeServe's one GPU type from it.
	rec := DefaultFlags()
	if err := planner.ReadOptions(best.Provenance.Options, &rec); err != nil {
		return nil, err
	}
	rec.Objective, rec.GPUs = planner.ObjectiveCost, 0
	best.Provenance.Options = planner.RecordOptions(rec)
	// The provenance objective stays the weighted accuracy, which plan check compares
	// (Checker.Compare); the fleet records the cost.
	acc := best.Provenance.Objective
	if err := fleet.Finish(best, bestOne); err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	best.Provenance.Objective = acc
	return best, nil
}
