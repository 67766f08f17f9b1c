package ppipe

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/solver"
)

// probeCount bounds each GPU type while the cost objective estimates how many GPUs a fleet
// may need (a type without available is otherwise unbounded).
const probeCount = 64

// solveCost is `plan solve --objective cost` for PPipe: the MILP of PPipe
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
	if opts.Strategy == StrategyDARTR {
		return nil, &InputError{Problems: []string{fmt.Sprintf("strategy: %q: --objective cost plans with the ppipe MILP or the np baseline", opts.Strategy)}}
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
	ps := newSession(ctx, pp, began)
	np, err := ps.spaces(spaceConfig{P: 1, wholeOnly: true})
	if err != nil && !errors.Is(err, planner.ErrInfeasible) {
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
	// A type with an available count offers all of it: capping it at need (a heuristic) could
	// make a rate the available GPUs serve infeasible, below the largest rate maxScale names.
	counts := map[string]int{}
	for k, t := range pp.types {
		counts[t.name] = need[k]
		if a := c.AvailableOf(t.name); a < math.MaxInt {
			counts[t.name] = a
		}
	}
	cl := sized(c, func(g formats.GPUPool) int { return counts[g.Type] })
	p, err := prepare(Inputs{Profiles: in.Profiles, Cluster: cl, Workload: in.Workload, Refs: in.Refs}, opts)
	if err != nil {
		return nil, err
	}
	s := newSession(ctx, p, began)
	cfg := spaceConfig{P: opts.MaxPartitions, replicas: opts.Replicas, perLength: opts.ReplicasPerLength}
	if opts.Strategy == StrategyNP {
		// The NP baseline: whole models on whole GPUs, one type per pipeline (PPipe §7.1).
		cfg = spaceConfig{P: 1, wholeOnly: true}
	}
	for _, t := range p.types {
		cfg.cost = append(cfg.cost, prices[t.name])
	}
	spaces, err := s.spaces(cfg)
	if err != nil {
		return nil, err
	}
	r, err := s.costDecomposed(spaces, cfg)
	if err != nil {
		return nil, err
	}
	a, bound := r.best, r.bound
	if a == nil {
		if r.last != nil && r.last.Status == solver.StatusInfeasible {
			return nil, shortError(ctx, in, opts)
		}
		return nil, fmt.Errorf("cost: %w (time limit %s)", planner.ErrNoSolution, opts.TimeLimit)
	}
	pipes := p.pipes(spaces, a, 1)
	obj := p.cost(pipes, cfg.cost)
	st := stats{status: "optimal", objective: obj, bound: math.Min(bound, obj), nodes: s.nodes}
	if obj > 0 {
		st.gap = (obj - st.bound) / obj
	}
	if st.gap > opts.Gap+absTol {
		st.status = solver.StatusTimeLimit.String()
	}
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
	plan.Provenance.Bound = formats.Proven(math.Round(st.bound*1e6) / 1e6)
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

// shortError names the largest rates the available GPUs serve when no fleet within them
// serves the workload's: maxScale's s* times every model's rate, one point that does not
// depend on how far beyond it the asked rates are (a sweep of --rate multipliers names the
// same rates at every point past it). The message used to come from an LP over whole-model
// throughput (pipelines aside) scaled to the asked rates: it named 401.1 req/s at 500 and
// 409 at 600, and 400 was not served.
func shortError(ctx context.Context, in Inputs, opts Options) error {
	scale, err := maxScale(ctx, in, opts)
	if err != nil {
		return err
	}
	var names, rates []string
	for _, m := range ppipesec.ModelsOf(in.Workload) {
		names = append(names, m.Name)
		rates = append(rates, fmt.Sprintf("%s %s", m.Name, floor4(m.RateRPS*scale)))
	}
	var prob string
	if scale > 0 {
		together := ""
		if len(names) > 1 {
			together = " together"
		}
		prob = fmt.Sprintf("workload: models[%s].rate_rps: the GPUs available (cluster gpus[].available) serve at most %s req/s%s (%s× these rates): raise available or lower the rates",
			strings.Join(names, ","), strings.Join(rates, ", "), together, floor4(scale))
	} else {
		prob = fmt.Sprintf("workload: models[%s].rate_rps: the GPUs available (cluster gpus[].available) serve none of these rates together (every plan within them leaves a model without a pipeline): raise available", strings.Join(names, ","))
	}
	return fmt.Errorf("%w: %w", planner.ErrInfeasible, &InputError{Problems: []string{prob}})
}

// floor4 prints x to 4 significant digits rounded down, so a rate named as servable is
// never above the one the plan serves.
func floor4(x float64) string {
	if !(x > 0) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'g', 4, 64)
	}
	e := math.Pow(10, math.Floor(math.Log10(x))-3)
	return strconv.FormatFloat(math.Floor(x/e*(1+tieTol))*e, 'g', 4, 64)
}

// maxScale is the largest s such that s times every model's rate is served within the
// available GPUs, solved directly: PPipe's max-min MILP (A.2, the throughput objective
// max z with Σ_l x_{m,l} ≥ w_m·z) with each model's weight its rate and each type's count
// its available count (probeCount without one). Its plan serves s·rate_m, the cost MILP's
// rate rows over the same options and budget rows, so any lower scale has a cost plan.
// Below the gap tolerance the number is the incumbent's, which is served.
func maxScale(ctx context.Context, in Inputs, opts Options) (float64, error) {
	c := in.Cluster
	cl := sized(c, func(g formats.GPUPool) int { return min(c.AvailableOf(g.Type), probeCount) })
	wl := *in.Workload
	wl.Sections = maps.Clone(wl.Sections) // a copy: its own sections
	ppipesec.SetModels(&wl, append([]ppipesec.ModelWorkload(nil), ppipesec.ModelsOf(in.Workload)...))
	for i := range ppipesec.ModelsOf(&wl) {
		ppipesec.ModelsOf(&wl)[i].Weight = ppipesec.ModelsOf(&wl)[i].RateRPS
	}
	o := opts
	o.Objective, o.FillSurplus, o.Progress = "", false, nil
	o.Gap = 1e-6
	p, err := prepare(Inputs{Profiles: in.Profiles, Cluster: cl, Workload: &wl, Refs: in.Refs}, o)
	if err != nil {
		return 0, err
	}
	s := newSession(ctx, p, time.Now())
	var sol solved
	if opts.Strategy == StrategyNP {
		sol, err = s.np()
	} else {
		sol, err = s.ppipe()
	}
	if errors.Is(err, planner.ErrInfeasible) || errors.Is(err, planner.ErrNoSolution) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	thr := modelThroughput(sol.pipes, len(p.models))
	z := math.Inf(1)
	for mi, md := range p.models {
		z = math.Min(z, thr[mi]/md.rate)
	}
	if math.IsInf(z, 0) {
		return 0, nil
	}
	return z, nil
}

// costStart is the MIP start of the cost MILP: every model on whole GPUs of the one type and
// batch (a one-stage template's option) that serve its rate at the least cost, ⌈rate/X⌉ of
// them; nil when some model has no such option within the type's bound (HiGHS then searches
// from scratch). Σ counts per type may exceed a bound shared across models: HiGHS ignores an
// infeasible start.
func costStart(p *problem, spaces []*modelSpace, price []float64) assignment {
	a := make(assignment, len(spaces))
	for mi, ms := range spaces {
		a[mi] = make([][]choice, len(ms.tmpls))
		bestCost, bl, bo, bg := math.Inf(1), -1, -1, 0
		for li, t := range ms.tmpls {
			if len(t.stages) != 1 || t.replica != 0 {
				continue
			}
			for oi, o := range t.stages[0] {
				if o.v != 1 || o.X <= 0 || o.i != 0 || o.j != ms.md.blocks {
					continue
				}
				g := int(math.Ceil(ms.md.rate / o.X))
				if g > o.G || o.X*float64(g) > t.xmax+absTol {
					continue
				}
				if c := float64(g) * price[t.types[0]]; c < bestCost {
					bestCost, bl, bo, bg = c, li, oi, g
				}
			}
		}
		if bl < 0 {
			return nil
		}
		a[mi][bl] = []choice{{stage: 0, opt: bo, g: bg}}
	}
	return a
}

// physical is the physical GPUs of each type pipes take (PhysicalGPUs of their plan, nModels
// models), rounded as the budget rows round them.
func (p *problem) physical(pipes []pipe, nModels int) map[string]float64 {
	pp := &ppipesec.PPipePlan{Models: make([]ppipesec.PPipeModelPlan, nModels)}
	for _, x := range pipes {
		pl := ppipesec.PPipePipeline{}
		for _, pt := range x.parts {
			pl.Partitions = append(pl.Partitions, ppipesec.Partition{GPU: p.types[pt.k].name, VGPU: pt.o.v, Count: pt.g})
		}
		pp.Models[x.model].Pipelines = append(pp.Models[x.model].Pipelines, pl)
	}
	return PhysicalGPUs(pp, p.opts.Rounding)
}

// cost is the price of the physical GPUs of pipes (rounded as the budget rows round them).
func (p *problem) cost(pipes []pipe, price []float64) float64 {
	used := p.physical(pipes, len(p.models))
	c := 0.0
	for k, t := range p.types {
		c += price[k] * used[t.name]
	}
	return math.Round(c*1e6) / 1e6
}

// costSearch solves the cost MILP as the throughput MILP is solved (ppipe()): the LP
// relaxation gives a global lower bound and the templates and batches worth keeping; the
// MILP restricted to them, started from costStart, usually closes the gap; otherwise, on a
// large model (cutoffMinIntegers) with a plan in hand, the cut-off phase (costCutoff), else
// the full MILP with the time left, started from the best plan. Every phase ends by deadline
// (the session's, or costDecomposed's share of it for one model).
func (s *session) costSearch(spaces []*modelSpace, cfg spaceConfig, deadline time.Time) (costResult, error) {
	full := s.p.build(spaces, cfg)
	// costStart serves each model on its own cheapest type, so together the models may
	// need more GPUs of a type than it has (its available count): such a start still guides
	// HiGHS (which drops an infeasible start) but is no incumbent. Taking it as one wrote a
	// plan with 13 L4s of 12 whenever it cost less than the best fleet within them.
	start := costStart(s.p, spaces, cfg.cost)
	var best assignment
	bestObj, bound := math.Inf(1), 0.0
	if start != nil && s.p.fits(spaces, start, cfg) {
		best = start
		bestObj = s.p.cost(s.p.pipes(spaces, best, 1), cfg.cost)
	}
	lcfg := cfg
	lcfg.relax = true
	lp := s.p.build(spaces, lcfg)
	lres, err := s.solve(lp, solveCall{phase: "cost lp", deadline: deadline, limit: time.Until(deadline) / 3})
	if err != nil {
		return costResult{}, err
	}
	if lres.Status == solver.StatusInfeasible {
		return costResult{last: lres}, nil
	}
	if lres.Status == solver.StatusOptimal {
		bound = lres.Objective
		r, rb, rstart := s.p.guidedRestriction(spaces, lp, lres, start, cfg)
		rres, err := s.solve(rb, solveCall{phase: "cost restricted", start: rstart, deadline: deadline, limit: time.Until(deadline) / 2})
		if err != nil {
			return costResult{}, err
		}
		if rres.HasSolution {
			a := r.lift(rb.decode(rres.Values), spaces)
			if c := s.p.cost(s.p.pipes(spaces, a, 1), cfg.cost); c < bestObj {
				best, bestObj = a, c
			}
		}
		if best != nil && bestObj-bound <= s.p.opts.Gap*bestObj {
			return costResult{best: best, last: rres, bound: bound}, nil
		}
	}
	if best != nil && lres.Status == solver.StatusOptimal && full.m.NumIntegers() >= cutoffMinIntegers {
		return s.costCutoff(full, incumbent{best: best, obj: bestObj, bound: bound}, cutoffOpts{lp: lres, race: proofRace(), deadline: deadline})
	}
	var fstart []float64
	if best != nil {
		fstart = full.start(best)
	} else if start != nil {
		fstart = full.start(start)
	}
	res, err := s.solve(full, solveCall{phase: "cost", start: fstart, deadline: deadline})
	if err != nil {
		return costResult{}, err
	}
	if res.HasSolution {
		a := full.decode(res.Values)
		if c := s.p.cost(s.p.pipes(spaces, a, 1), cfg.cost); c < bestObj {
			best, bestObj = a, c
		}
	}
	if res.Status == solver.StatusOptimal && res.HasSolution {
		bound = math.Max(bound, res.Objective)
	} else if !math.IsInf(res.Bound, 0) && !math.IsNaN(res.Bound) {
		bound = math.Max(bound, res.Bound)
	}
	return costResult{best: best, last: res, bound: bound}, nil
}

// costResult is what a phase of the cost search returns: the best fleet's assignment (nil:
// none), the last solver result (by which solveCost tells rates the available GPUs cannot
// serve from a time-out; nil when the phase ran none), and the lower bound on the cost.
type costResult struct {
	best  assignment
	last  *solver.Result
	bound float64
}

// costDecomposed splits the cost MILP by model: a physical GPU only ever hosts one
// pipeline's slices (rounding per pipeline) or one model's (per stage), so GPUs are never
// shared across models and the cost is the sum of each model's; only the available counts
// couple the models. Each model is solved alone (costSearch, an equal share of the time
// left); when their union fits every type's count it is optimal to within the sum of their
// gaps, with the sum of their bounds as bound. Otherwise the joint MILP is solved.
func (s *session) costDecomposed(spaces []*modelSpace, cfg spaceConfig) (costResult, error) {
	if len(spaces) == 1 {
		return s.costSearch(spaces, cfg, s.deadline)
	}
	a := make(assignment, len(spaces))
	bounds, objs := make([]float64, len(spaces)), make([]float64, len(spaces))
	for mi := range spaces {
		share := time.Until(s.deadline) / time.Duration(len(spaces)-mi)
		r, err := s.costSearch(spaces[mi:mi+1], cfg, time.Now().Add(share))
		if err != nil || r.best == nil {
			return costResult{last: r.last}, err
		}
		a[mi], bounds[mi] = r.best[0], r.bound
		objs[mi] = s.p.cost(s.p.pipes(spaces[mi:mi+1], r.best, 1), cfg.cost)
	}
	// A second pass gives the time the first left to the models whose gap is still open,
	// each MILP started from its plan so far.
	var open []int
	for mi := range spaces {
		// relTol: the cut-off phase proves bound = obj·(1 − gap) exactly, up to rounding.
		if objs[mi]-bounds[mi] > s.p.opts.Gap*objs[mi]*(1+relTol) {
			open = append(open, mi)
		}
	}
	for i, mi := range open {
		left := time.Until(s.deadline)
		if left < time.Second {
			break
		}
		share := time.Now().Add(left / time.Duration(len(open)-i))
		sub := spaces[mi : mi+1]
		full := s.p.build(sub, cfg)
		res, err := s.solve(full, solveCall{phase: "cost", start: full.start(assignment{a[mi]}), deadline: share})
		if err != nil {
			return costResult{}, err
		}
		if res.HasSolution {
			am := full.decode(res.Values)
			if c := s.p.cost(s.p.pipes(sub, am, 1), cfg.cost); c < objs[mi] {
				a[mi], objs[mi] = am[0], c
			}
		}
		if res.Status == solver.StatusOptimal && res.HasSolution {
			bounds[mi] = math.Max(bounds[mi], res.Objective)
		} else if !math.IsInf(res.Bound, 0) && !math.IsNaN(res.Bound) {
			bounds[mi] = math.Max(bounds[mi], res.Bound)
		}
	}
	bound := 0.0
	for _, b := range bounds {
		bound += b
	}
	if s.p.fits(spaces, a, cfg) {
		return costResult{best: a, bound: bound}, nil
	}
	return s.costSearch(spaces, cfg, s.deadline)
}

// fits reports whether an assignment's physical GPUs fit every type's count.
func (p *problem) fits(spaces []*modelSpace, a assignment, cfg spaceConfig) bool {
	used := p.physical(p.pipes(spaces, a, 1), len(spaces))
	for k, t := range p.types {
		if used[t.name] > float64(p.count(cfg, k))+absTol {
			return false
		}
	}
	return true
}

// costCutoff is the cost MILP's cut-off phase, as cutoff is the throughput MILP's: the full
// MILP restricted to fleets cheaper than the incumbent by more than the gap (Σ_k price_k·N_k
// ≤ t = incumbent·(1 − gap), also HiGHS's objective bound), columns fixed by the LP
// relaxation's reduced costs, raced on both cores without primal heuristics. The cost MILP's
// LP bound is weak (fractional GPUs: 3.35 against a 3.73 plan on BenchmarkSolveCost's first
// model), so the full MILP warm-started from the plan spends its time raising the bound
// (3.69 after 18 s there); with the cut-off, every node whose bound is above t is
// infeasible, and infeasible, which that model reaches in 1.4 s, proves the plan within the
// gap. The price: a fleet cheaper by less than the gap is no longer looked for.
func (s *session) costCutoff(full *built, inc incumbent, o cutoffOpts) (costResult, error) {
	t := inc.obj * (1 - s.p.opts.Gap)
	if o.lp != nil {
		fixByReducedCost(full.m, o.lp, t)
	}
	var obj []solver.Term
	for _, n := range full.nk {
		obj = append(obj, solver.Term{Var: n.h, Coef: full.m.VarObj(n.h)})
	}
	full.m.AddRow("cutoff", -solver.Inf, t, obj...)
	res, err := s.solve(full, solveCall{phase: "cost cutoff", deadline: o.deadline, race: o.race, proof: true, cutoff: &t})
	if err != nil {
		return costResult{}, err
	}
	best, bound := inc.best, inc.bound
	switch {
	case res.Status == solver.StatusInfeasible:
		return costResult{best: best, last: res, bound: math.Max(bound, t)}, nil
	case res.HasSolution:
		a := full.decode(res.Values)
		if c := s.p.cost(s.p.pipes(full.spaces, a, 1), full.cfg.cost); c < inc.obj {
			best = a
		}
		return costResult{best: best, last: res, bound: math.Max(bound, math.Min(t, res.Bound))}, nil
	case !math.IsInf(res.Bound, 0) && !math.IsNaN(res.Bound):
		bound = math.Max(bound, math.Min(t, res.Bound))
	}
	return costResult{best: best, last: res, bound: bound}, nil
}
