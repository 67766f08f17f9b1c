package ppipe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/solver"
)

// probeCount bounds each GPU type while the cost objective estimates how many GPUs a fleet
// may need (a type without available is otherwise unbounded).
const probeCount = 64

// solveCost is `plan solve --objective cost` for PPipe (issue 34 item 2): the MILP of PPipe
// A.2 (pools, vGPU slices, batches, cuts as for throughput) with Σ_l x_{m,l} ≥ rate_m per
// model instead of the max-min objective, and min Σ_k price_k·N_k over the physical GPUs N_k
// of each type (the budget rows' rounded counts), each type bounded by its available count.
// A type without one is bounded by the GPUs the whole-model (NP) options of every model
// would need on it alone, plus one per model for pipelines that use it as one stage: a
// cost-optimal plan that needs more of it than serving every model on it alone is not
// excluded in theory, but none arises where the type is the cheaper per request.
func solveCost(ctx context.Context, in Inputs, opts Options) (*formats.Plan, error) {
	c := in.Cluster
	if c == nil {
		return nil, &InputError{Problems: []string{"cluster: missing"}}
	}
	if opts.Strategy != StrategyPPipe {
		return nil, &InputError{Problems: []string{fmt.Sprintf("strategy: %q: --objective cost plans with the ppipe MILP only", opts.Strategy)}}
	}
	prices, _, err := c.Prices()
	if err != nil {
		return nil, &InputError{Problems: []string{err.Error()}}
	}
	opts.FillSurplus = false
	began := time.Now()
	probe := sized(c, func(g formats.GPUPool) int { return min(c.AvailableOf(g.Type), probeCount) })
	pp, err := prepare(Inputs{Profiles: in.Profiles, Cluster: probe, Workload: in.Workload, Refs: in.Refs}, opts)
	if err != nil {
		return nil, err
	}
	var probs []string
	for _, md := range pp.models {
		if !(md.rate > 0) {
			probs = append(probs, fmt.Sprintf("workload: models[%s].rate_rps: required for --objective cost (the rate the fleet must serve)", md.name))
		}
	}
	if len(probs) > 0 {
		return nil, &InputError{Problems: probs}
	}
	ps := &session{p: pp, ctx: ctx, began: began, deadline: began.Add(opts.TimeLimit)}
	np, err := ps.spaces(spaceConfig{P: 1, wholeOnly: true})
	if err != nil && !errors.Is(err, ErrInfeasible) {
		return nil, err
	}
	best := bestWholeX(pp, np) // [model][type] req/s of one whole GPU
	need := make([]int, len(pp.types))
	for mi, md := range pp.models {
		anyX := 0.0
		for _, x := range best[mi] {
			anyX = math.Max(anyX, x)
		}
		for k := range pp.types {
			x := best[mi][k]
			if x <= 0 {
				x = anyX
			}
			if x > 0 {
				need[k] += int(math.Ceil(md.rate/x)) + 1
			} else {
				need[k] += probeCount
			}
		}
	}
	counts := map[string]int{}
	for k, t := range pp.types {
		counts[t.name] = min(c.AvailableOf(t.name), need[k])
	}
	cl := sized(c, func(g formats.GPUPool) int { return counts[g.Type] })
	p, err := prepare(Inputs{Profiles: in.Profiles, Cluster: cl, Workload: in.Workload, Refs: in.Refs}, opts)
	if err != nil {
		return nil, err
	}
	s := &session{p: p, ctx: ctx, began: began, deadline: began.Add(opts.TimeLimit)}
	cfg := spaceConfig{P: opts.MaxPartitions, replicas: opts.Replicas}
	for _, t := range p.types {
		cfg.cost = append(cfg.cost, prices[t.name])
	}
	spaces, err := s.spaces(cfg)
	if err != nil {
		return nil, err
	}
	b := p.build(spaces, cfg)
	res, err := s.solve("cost", b, nil, 0)
	if err != nil {
		return nil, err
	}
	if !res.HasSolution {
		if res.Status == solver.StatusInfeasible {
			return nil, shortError(ctx, p, best, pp)
		}
		return nil, fmt.Errorf("cost: %w (time limit %s)", ErrNoSolution, opts.TimeLimit)
	}
	pipes := p.pipes(spaces, b.decode(res.Values), 1)
	st := stats{status: statusOf(res), objective: res.Objective, bound: res.Bound, gap: res.Gap, nodes: s.nodes}
	countOptions(&st, spaces)
	st.solveMs = float64(time.Since(began).Microseconds()) / 1000
	if opts.Deterministic {
		st.solveMs = 0
	}
	target := make([]float64, len(p.models))
	for mi, md := range p.models {
		target[mi] = md.rate
	}
	plan, err := p.plan(in, pipes, target, st)
	if err != nil {
		return nil, err
	}
	if err := fleet.Finish(plan, c); err != nil {
		return nil, &InputError{Problems: []string{err.Error()}}
	}
	plan.Provenance.Bound = math.Round(res.Bound*1e6) / 1e6
	if math.IsInf(plan.Provenance.Gap, 0) || math.IsNaN(plan.Provenance.Gap) {
		plan.Provenance.Gap = 0
	}
	return plan, nil
}

// sized is c with each pool's count set by n (prices and availability kept).
func sized(c *formats.Cluster, n func(formats.GPUPool) int) *formats.Cluster {
	out := *c
	out.GPUs = make([]formats.GPUPool, len(c.GPUs))
	for i, g := range c.GPUs {
		g.Count = n(g)
		out.GPUs[i] = g
	}
	out.Servers = nil
	return &out
}

// bestWholeX is, per model and GPU type, the best throughput of one whole GPU running the
// whole model within its budget (the NP options), 0 where none.
func bestWholeX(p *problem, spaces []*modelSpace) [][]float64 {
	out := make([][]float64, len(p.models))
	for mi := range p.models {
		out[mi] = make([]float64, len(p.types))
		if mi >= len(spaces) || spaces[mi] == nil {
			continue
		}
		for _, t := range spaces[mi].tmpls {
			if len(t.types) != 1 || len(t.stages) != 1 {
				continue
			}
			k := t.types[0]
			for _, o := range t.stages[0] {
				if o.v == 1 {
					out[mi][k] = math.Max(out[mi][k], o.X)
				}
			}
		}
	}
	return out
}

// shortError names the rate the available GPUs serve when no fleet within them does: the
// fleet core's LP over whole-model throughput per GPU (pipelines aside).
func shortError(ctx context.Context, p *problem, best [][]float64, probe *problem) error {
	var fp fleet.Problem
	for _, t := range probe.types {
		a := p.cluster.AvailableOf(t.name)
		if a == math.MaxInt {
			a = -1
		}
		fp.Types = append(fp.Types, fleet.Type{Name: t.name, Available: a})
	}
	for mi, md := range probe.models {
		fp.Demands = append(fp.Demands, fleet.Demand{Name: md.name, Rate: md.rate, Cap: best[mi]})
	}
	scale, err := fleet.MaxScale(ctx, fp)
	if err != nil {
		return err
	}
	var probs []string
	for _, md := range probe.models {
		if scale < 1 {
			probs = append(probs, fmt.Sprintf("workload: models[%s].rate_rps: %g: the GPUs available (cluster gpus[].available) serve at most %.4g req/s of it: raise available or lower the rate", md.name, md.rate, md.rate*scale))
		} else {
			probs = append(probs, fmt.Sprintf("workload: models[%s].rate_rps: %g: no plan within the GPUs available (cluster gpus[].available) serves it: raise available or lower the rate", md.name, md.rate))
		}
	}
	return fmt.Errorf("%w: %w", planner.ErrInfeasible, &InputError{Problems: probs})
}
