package dyorc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	dp "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/planner"
)

// holdsRates reports whether plan p serves every app's workload rate within its SLO: by
// the simulator, the prediction `plan solve` judges the plan by, at the workload's rates
// (Simulator); without one, by the fitted formula (estimate). An error is the simulator's.
func holdsRates(ctx context.Context, sim Simulator, p *formats.Plan) (bool, error) {
	if sim != nil {
		return meetsAt(ctx, sim, p, 1)
	}
	r, err := worstShare(ctx, sim, p)
	return r >= 1, err
}

// worstShare is the lowest ratio over p's apps of the capacity (Capacity) to the app's rate.
func worstShare(ctx context.Context, sim Simulator, p *formats.Plan) (float64, error) {
	caps, err := capacity(ctx, sim, p)
	if err != nil {
		return 0, err
	}
	w, _, err := inputs(p)
	if err != nil {
		return 0, err
	}
	worst := math.Inf(1)
	for i := range w.Apps {
		worst = min(worst, caps[w.Apps[i].Name]/rateOf(&w.Apps[i]))
	}
	return worst, nil
}

// SolveMinGPUs places the services on the fewest GPUs of the cluster's type whose plan serves
// every app's rate within its SLO in simulation (holdsRates), instead of on every GPU (plan
// solve --min-gpus, as the CascadeServe and QLM planners take it). The plan embeds the
// cluster as given and records the GPUs it uses as its own cluster; none of the counts up to
// the cluster's → ErrInfeasible naming the most the whole cluster serves.
func SolveMinGPUs(ctx context.Context, wl *formats.Workload, cl *formats.Cluster, refs []formats.InputRef, o Options) (*formats.Plan, error) {
	if wl == nil || dyorcsec.WorkflowsOf(wl) == nil || cl == nil || len(cl.GPUs) == 0 {
		return Solve(ctx, wl, cl, refs, o) // its input errors
	}
	w, err := dp.Compile(dyorcsec.WorkflowsOf(wl))
	if err != nil {
		return nil, &planner.InputError{Problems: []string{"workload: " + err.Error()}}
	}
	c, err := dp.ClusterOf(cl)
	if err != nil {
		return nil, &planner.InputError{Problems: []string{"cluster: " + err.Error()}}
	}
	began := time.Now()
	var bytes float64
	for _, s := range w.Services {
		bytes += float64(s.Bytes)
	}
	lo := 1
	if c.MemBytes > 0 {
		lo = max(lo, int(math.Ceil(bytes/float64(c.MemBytes)-absTol)))
	}
	pool := cl.GPUs[0]
	pool.Type = c.Type
	var last *formats.Plan
	for n := lo; n <= c.GPUs; n++ {
		one := *cl
		p := pool
		p.Count = n
		one.GPUs, one.Servers = []formats.GPUPool{p}, nil
		plan, err := Solve(ctx, wl, &one, refs, o)
		if errors.Is(err, planner.ErrInfeasible) {
			continue // the services do not fit n GPUs
		}
		if err != nil {
			return nil, err
		}
		last = plan
		ok, err := holdsRates(ctx, o.Sim, plan)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		plan.Provenance.Embedded.Cluster = cl
		if plan.Provenance.InputDigest, err = planner.InputDigest(plan.Provenance.Embedded); err != nil {
			return nil, err
		}
		gap := o.Gap
		if gap <= 0 {
			gap = 0.01
		}
		plan.Provenance.Options = planner.RecordOptions(Flags{Gap: gap, Policy: o.Policy, MinGPUs: true, TimeLimit: limitIfHit(plan.Provenance.Status, o.TimeLimit)})
		// The search is over counts by simulation, not an optimisation with a bound.
		plan.Provenance.Status = "heuristic"
		plan.Provenance.Bound, plan.Provenance.Gap = nil, nil
		plan.Provenance.SolveMs = float64(time.Since(began).Microseconds()) / 1000
		if o.Deterministic {
			plan.Provenance.SolveMs = 0
		}
		return plan, nil
	}
	worst := 0.0
	if last != nil {
		var err error
		if worst, err = worstShare(ctx, o.Sim, last); err != nil {
			return nil, err
		}
	}
	return nil, &planner.InputError{Problems: []string{fmt.Sprintf(
		"workload: workflows.apps: rate_rps: %s: no count of the cluster's %d %s GPUs serves every app's rate within its SLO (in simulation, on all %d the lowest app holds its SLO up to %.0f%% of its rate); add GPUs or lower the apps' rate_rps",
		planner.ErrInfeasible, c.GPUs, c.Type, c.GPUs, 100*worst)}}
}
