package ppipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

// Solve plans the workload on the cluster with the chosen strategy and returns a complete,
// self-contained plan (provenance with embedded inputs included). Errors: *InputError
// (planner.ErrInput) for inconsistent inputs, *InfeasibleError (planner.ErrInfeasible) when some model's SLO
// admits no pipeline, planner.ErrNoSolution when the time limit passed without any plan, and the
// solver's errors (solver.ErrBackendUnavailable, solver.ErrCanceled, ...) otherwise.
func Solve(ctx context.Context, in Inputs, opts Options) (*formats.Plan, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Objective == planner.ObjectiveCost {
		return solveCost(ctx, in, opts)
	}
	p, err := prepare(in, opts)
	if err != nil {
		return nil, err
	}
	s := &session{p: p, ctx: ctx, began: time.Now()}
	s.deadline = s.began.Add(opts.TimeLimit)
	if p.opts.Strategy == StrategyDARTR && len(p.types) > 2 {
		return nil, &InputError{Problems: []string{fmt.Sprintf("strategy dart-r: cluster has %d GPU types with GPUs: DART-r pairs one high-class with one low-class type, so it needs at most 2", len(p.types))}}
	}
	if opts.BatchAllowance {
		// λ̂_m, the head's arrival rate that fills batches: Options.ArrivalRate, else the
		// workload's rate_rps, else estimated by a first pass (NP without β).
		var thr []float64
		for mi, md := range p.models {
			md.betaOn = true
			switch {
			case opts.ArrivalRate > 0:
				md.lambda = opts.ArrivalRate / 1e6
			case md.rate > 0:
				md.lambda = md.rate / 1e6
			default:
				if thr == nil {
					pipes, _, err := s.np(false)
					if err != nil && !errors.Is(err, planner.ErrInfeasible) {
						return nil, err
					}
					thr = modelThroughput(pipes, len(p.models))
				}
				md.lambda = thr[mi] / 1e6
			}
		}
	}
	var pipes []pipe
	var st stats
	switch opts.Strategy {
	case StrategyNP:
		pipes, st, err = s.np(true)
	case StrategyDARTR:
		pipes, st, err = s.dartr()
	default:
		pipes, st, err = s.ppipe()
	}
	if err != nil {
		return nil, err
	}
	st.solveMs = float64(time.Since(s.began).Microseconds()) / 1000
	if opts.Deterministic {
		st.solveMs = 0
	}
	st.nodes = s.nodes
	target := p.fillTargets(pipes)
	if opts.FillSurplus {
		pipes, st.surplus = p.fillSurplus(pipes, target)
	}
	return p.plan(in, pipes, target, st)
}

// session carries the state shared by the sub-solves of one Solve call.
type session struct {
	p        *problem
	ctx      context.Context
	began    time.Time
	deadline time.Time
	nodes    int64
	dartrErr error
	// race is solver.Options.Race for the next solve (0: the solver's default); proof marks
	// a solve run to prove a bound (no primal heuristics); objBound is its
	// solver.Options.Cutoff.
	race     int
	proof    bool
	objBound *float64
}

// stats is what the provenance reports about the solve.
type stats struct {
	status                  string
	objective, bound, gap   float64
	solveMs                 float64
	nodes                   int64
	rawOptions, keptOptions int
	surplus                 []int // physical GPUs FillSurplus handed out, per type
}

// spaces builds the pruned option spaces and reports every model with no SLO-feasible
// pipeline (with the smallest SLO that would admit one).
func (s *session) spaces(cfg spaceConfig) ([]*modelSpace, error) {
	var spaces []*modelSpace
	var bad []InfeasibleModel
	for _, md := range s.p.models {
		ms := s.p.space(md, cfg)
		spaces = append(spaces, ms)
		if len(ms.tmpls) == 0 {
			bad = append(bad, InfeasibleModel{Model: md.name, SLO: md.slo, MinFeasible: minFeasibleSLO(ms.minLat, s.p.opts.Alpha)})
		}
	}
	if len(bad) > 0 {
		return nil, &InfeasibleError{Models: bad}
	}
	return spaces, nil
}

// minFeasibleSLO is the smallest T (whole µs) with T − round(α·T) ≥ lat.
func minFeasibleSLO(lat, alpha float64) time.Duration {
	if math.IsInf(lat, 0) || math.IsNaN(lat) {
		return 0
	}
	T := math.Max(1, math.Floor(lat/(1-alpha))-3)
	for T-math.Round(alpha*T) < lat-absTol {
		T++
	}
	return time.Duration(T) * time.Microsecond
}

// run solves one MILP within the session's remaining time; a result without a solution is
// an error (planner.ErrNoSolution on the time limit).
func (s *session) run(phase string, b *built, start []float64, limit time.Duration) (*solver.Result, error) {
	res, err := s.solve(phase, b, start, limit)
	if err != nil {
		return nil, err
	}
	if !res.HasSolution {
		if res.Status == solver.StatusTimeLimit {
			return nil, fmt.Errorf("%s: %w (time limit %s)", phase, planner.ErrNoSolution, s.p.opts.TimeLimit)
		}
		return nil, fmt.Errorf("%s: solver status %s: %w", phase, res.Status, res.Err())
	}
	return res, nil
}

// solve is run's solver call: the result whatever its status, an error only when the
// solver could not run.
func (s *session) solve(phase string, b *built, start []float64, limit time.Duration) (*solver.Result, error) {
	remaining := time.Until(s.deadline)
	if limit > 0 && limit < remaining {
		remaining = limit
	}
	if remaining < 100*time.Millisecond {
		remaining = 100 * time.Millisecond
	}
	o := solver.Options{TimeLimit: remaining, RelGap: s.p.opts.Gap, Start: start, Log: solverLog, Deterministic: s.p.opts.Deterministic, Race: s.race, NoHeuristics: s.proof, Cutoff: s.objBound}
	if f := s.p.opts.Progress; f != nil {
		o.Progress = func(pr solver.Progress) {
			f(Progress{Phase: phase, Elapsed: time.Since(s.began), Nodes: s.nodes + pr.Nodes, Incumbent: pr.Incumbent,
				Bound: pr.Bound, Gap: pr.Gap, HasIncumbent: pr.HasIncumbent})
		}
	}
	res, err := solver.Solve(s.ctx, b.m, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", phase, err)
	}
	if solveHook != nil {
		res = solveHook(phase, res)
	}
	s.nodes += res.Nodes
	return res, nil
}

// solveHook, set only by tests, replaces each phase's solver result: how a test reproduces a
// loaded machine's solve whose LP relaxation and later phases all hit the time limit with no
// solution and no bound, which no fixed time limit reproduces deterministically.
var solveHook func(phase string, res *solver.Result) *solver.Result

func statusOf(r *solver.Result) string {
	if r.Status == solver.StatusOptimal {
		return "optimal"
	}
	return r.Status.String()
}

// np solves the no-partitioning baseline: P = 1, whole GPUs, same objective, margin and β.
func (s *session) np(withBeta bool) ([]pipe, stats, error) {
	cfg := spaceConfig{P: 1, wholeOnly: true}
	spaces, err := s.spaces(cfg)
	if err != nil {
		return nil, stats{}, err
	}
	b := s.p.build(spaces, cfg)
	res, err := s.run("np", b, nil, 0)
	if err != nil {
		return nil, stats{}, err
	}
	pipes := s.p.pipes(spaces, b.decode(res.Values), 1)
	st := stats{status: statusOf(res), objective: res.Objective, bound: res.Bound, gap: res.Gap}
	countOptions(&st, spaces)
	if err := s.p.emptyModels(pipes); err != nil {
		return nil, st, err
	}
	return pipes, st, nil
}

func countOptions(st *stats, spaces []*modelSpace) {
	for _, ms := range spaces {
		st.rawOptions += ms.raw
		st.keptOptions += ms.kept
	}
}

// ppipe solves the pooled-pipeline MILP. HiGHS's MIP presolve is the slowest part in
// WebAssembly and our LP relaxation is tight (throughput flows along contiguous chains), so
// the LP guides the search:
//  1. NP plan (warm start), LP relaxation of the full model (a valid global bound);
//  2. the MILP restricted to the templates the LP uses, at the batches it uses them with
//     (any cuts and slices), plus the NP options: small, fast, and often proves the target
//     gap against the LP bound on its own;
//  3. for several models whose plan is still > ccGate below the bound, the continuous-count
//     relaxation and its repair (continuousCounts);
//  4. otherwise, on a large model whose best plan is near the bound, the full MILP cut off
//     at that plan's objective plus the gap, with columns fixed by the LP's reduced costs,
//     raced on both cores (cutoff); else the full MILP, warm-started from the best plan, with
//     the time left.
func (s *session) ppipe() ([]pipe, stats, error) {
	cfg := spaceConfig{P: s.p.opts.MaxPartitions, replicas: s.p.opts.Replicas, perLength: s.p.opts.ReplicasPerLength}
	spaces, err := s.spaces(cfg)
	if err != nil {
		return nil, stats{}, err
	}
	full := s.p.build(spaces, cfg)
	var npAssign assignment
	if !s.p.opts.NoWarmStart {
		npPipes, _, err := s.np(true)
		switch {
		case err == nil:
			npAssign = full.assignFrom(npPipes)
		case errors.Is(err, planner.ErrInfeasible):
			// NP cannot serve some model whole; PPipe may still cut it. No warm start.
		default:
			return nil, stats{}, err
		}
	}
	st := stats{}
	countOptions(&st, spaces)
	var best assignment
	var lpRes *solver.Result // the LP relaxation of full, for reduced-cost fixing
	bestObj, bound := math.Inf(-1), math.Inf(1)
	if npAssign != nil {
		best, bestObj = npAssign, s.p.objective(s.p.pipes(spaces, npAssign, 1))
	}
	if !s.p.opts.NoLPGuide {
		lcfg := cfg
		lcfg.relax = true
		lp := s.p.build(spaces, lcfg)
		lres, err := s.run("lp", lp, nil, time.Until(s.deadline)/2)
		if err != nil && !errors.Is(err, planner.ErrNoSolution) {
			return nil, stats{}, err
		}
		if err == nil && lres.Status == solver.StatusOptimal {
			bound, lpRes = lres.Objective, lres
			r, rb, start := s.p.guidedRestriction(spaces, lp, lres, npAssign, cfg)
			rres, err := s.run("restricted", rb, start, time.Until(s.deadline)/2)
			switch {
			case err == nil:
				if rres.Objective > bestObj {
					best, bestObj = r.lift(rb.decode(rres.Values), spaces), rres.Objective
				}
			case errors.Is(err, planner.ErrNoSolution):
			default:
				return nil, stats{}, err
			}
		}
	}
	// Only the max-min objective over several models makes the counts the hard part: with
	// one model the full MILP closes the gap about as fast as the relaxation solves.
	// And only when the plan in hand is far from the LP bound: within ccGate, what separates
	// them is the rounding of a good plan's pool sizes, which the cut-off phase settles
	// faster than the relaxation can (HC2-G1, P ≤ 3: 0.98% apart, and the relaxation's bound
	// is the LP's), while a plan several % below the bound (P3-2types-3models: 5%) has the
	// wrong options, which the relaxation finds.
	if !s.p.opts.NoContinuousCounts && len(spaces) > 1 && (best == nil || relGap(bestObj, bound) > max(s.p.opts.Gap, ccGate)) {
		var err error
		if best, bestObj, bound, err = s.continuousCounts(spaces, cfg, best, bestObj, bound); err != nil {
			return nil, stats{}, err
		}
	}
	if gap := relGap(bestObj, bound); best != nil && !s.p.opts.NoCutoff && full.m.NumIntegers() >= cutoffMinIntegers && gap > s.p.opts.Gap && gap <= cutoffMaxGap {
		var err error
		if best, bestObj, bound, err = s.cutoff(full, lpRes, best, bestObj, bound); err != nil {
			return nil, stats{}, err
		}
	} else if best == nil || relGap(bestObj, bound) > s.p.opts.Gap {
		var start []float64
		if best != nil {
			start = full.start(best)
		}
		res, err := s.run("ppipe", full, start, 0)
		if err != nil && !(errors.Is(err, planner.ErrNoSolution) && best != nil) {
			return nil, stats{}, err
		}
		if err == nil {
			bound = math.Min(bound, res.Bound)
			if res.Objective >= bestObj || best == nil {
				best, bestObj = full.decode(res.Values), res.Objective
			}
		}
	}
	pipes := s.p.pipes(spaces, best, 1)
	st.objective, st.bound = bestObj, math.Max(bound, bestObj)
	st.gap = relGap(st.objective, st.bound)
	st.status = "optimal"
	if st.gap > s.p.opts.Gap*(1+relTol) {
		st.status = solver.StatusTimeLimit.String()
	}
	if err := s.p.emptyModels(pipes); err != nil {
		return nil, st, err
	}
	return pipes, st, nil
}

// The last phase is the cut-off MILP rather than the full MILP warm-started from the best plan
// when the model has at least cutoffMinIntegers integer columns and the best plan is within
// cutoffMaxGap of the bound. Smaller models' full MILP proves the gap in well under a second
// and returns its own optimum, a better plan than any within the gap: on equal objectives,
// the one with more headroom or larger batches (the bundled tests' instances have 90–460
// integer columns; the demo 3.9k, the hard HC2/P3 cases of bench_test.go 1.7–17k). A plan further from
// the bound is likely not optimal: then finding a better one is the work, which the full
// MILP, warm-started and with its heuristics, does better (P3-4types-1model: 2.5% apart
// after the restricted MILP; the cut-off phase reached 1.5% in 60 s, the full MILP 0.08%).
const (
	cutoffMinIntegers = 1000
	cutoffMaxGap      = 0.02
)

// ccGate is the gap to the LP bound above which a multi-model solve runs the continuous-count
// phase.
const ccGate = 0.02

// continuousCounts is the formulation phase of the solve: what makes the MILP hard is
// its integer slice and GPU counts (with them continuous, the hardest bundled case solves in
// seconds). So it solves the continuous-count relaxation — template and option choices
// binary, counts continuous — whose dual bound is a valid and much tighter upper bound than
// the LP's, then repairs its choices into an integer plan with a small MILP over the options
// it chose (and, at the same batch sizes, the other cuts and slice levels of its templates,
// and the incumbent's choices, so the incumbent stays a feasible start). Either result may end
// the pipeline: the repaired plan within the gap of the relaxation's bound needs no full MILP.
func (s *session) continuousCounts(spaces []*modelSpace, cfg spaceConfig, best assignment, bestObj, bound float64) (assignment, float64, float64, error) {
	ccfg := cfg
	ccfg.contCounts = true
	cb := s.p.build(spaces, ccfg)
	var start []float64
	if best != nil {
		start = cb.start(best)
	}
	cres, err := s.run("continuous-counts", cb, start, time.Until(s.deadline)/3)
	switch {
	case errors.Is(err, planner.ErrNoSolution):
		return best, bestObj, bound, nil
	case err != nil:
		return nil, 0, 0, err
	}
	bound = math.Min(bound, math.Max(cres.Bound, cres.Objective))
	chosen := func(m, l, d, o int) bool { return cres.Values[cb.y[m][l][d][o]] > 0.5 }
	keep := keepGuided(spaces, chosen, best)
	r := restrict(spaces, keep)
	rb := s.p.build(r.spaces, cfg)
	start = nil
	if best != nil {
		start = rb.start(r.lower(best))
	}
	rres, err := s.run("repair", rb, start, time.Until(s.deadline)/2)
	switch {
	case err == nil:
		if rres.Objective > bestObj || best == nil {
			best, bestObj = r.lift(rb.decode(rres.Values), spaces), rres.Objective
		}
	case errors.Is(err, planner.ErrNoSolution):
	default:
		return nil, 0, 0, err
	}
	return best, bestObj, bound, nil
}

// cutoff is the last phase when a plan is in hand: the full MILP restricted to plans better
// than the incumbent by more than the gap (objective ≥ t = incumbent·(1+gap)). What keeps
// the full MILP from proving the gap is its bound, which must fall from the LP's to within
// the gap of a plan usually found in the first seconds; with the cut-off as a constraint,
// presolve and propagation shrink every model's options to those that could beat t, and
// every node whose bound is below t is infeasible rather than merely unpromising (HiGHS
// prunes against the incumbent itself, not against the gap above it). Infeasible proves the
// incumbent within the gap; a solution found is a better plan; on the time limit, the
// bound is max(t, the phase's own bound), valid since plans below t were never the
// question.
func (s *session) cutoff(full *built, lp *solver.Result, best assignment, bestObj, bound float64) (assignment, float64, float64, error) {
	t := bestObj * (1 + s.p.opts.Gap)
	if lp != nil {
		fixByReducedCost(full.m, lp, t)
	}
	obj := []solver.Term{{Var: full.z, Coef: 1}}
	if !full.multi {
		obj = obj[:0]
		for mi := range full.x {
			for _, x := range full.x[mi] {
				obj = append(obj, solver.Term{Var: x, Coef: 1})
			}
		}
	}
	full.m.AddRow("cutoff", t, solver.Inf, obj...)
	// The proof is the hard part of a hard plan: race both cores on it,
	// unless the plan must not depend on timing (then the solver runs one instance anyway).
	if runtime.GOMAXPROCS(0) >= 2 {
		s.race = min(runtime.GOMAXPROCS(0), 2)
	}
	// A plan above t is rare (the incumbent is usually optimal or within the gap), so HiGHS's
	// primal heuristics, a third of the phase's time on HC2-G1 (sub-MIPs at the root and in
	// the tree), are switched off: 25.8 → 14.7 s on one core there.
	// t is not also HiGHS's objective bound here (as costCutoff's is): on hc2-g1's model as
	// written to a file, one thread, it sped the proof up (10.5 → 7.8 CPU-s), but the
	// planner's own two-racer solve of the same instance took 1,075 nodes and 39–41 s
	// instead of 383 and 18–22 s (BenchmarkSolve, load 7), and one racer alone was no faster
	// (15.1 and 14.9 s).
	s.proof = true
	res, err := s.solve("cutoff", full, nil, 0)
	s.race, s.proof = 0, false
	if err != nil {
		return nil, 0, 0, err
	}
	switch {
	case res.Status == solver.StatusInfeasible:
		return best, bestObj, math.Min(bound, t), nil
	case res.HasSolution:
		if res.Objective > bestObj {
			best, bestObj = full.decode(res.Values), res.Objective
		}
		return best, bestObj, math.Min(bound, math.Max(t, res.Bound)), nil
	case res.Status == solver.StatusTimeLimit:
		if !math.IsInf(res.Bound, 0) && !math.IsNaN(res.Bound) {
			bound = math.Min(bound, math.Max(t, res.Bound))
		}
		return best, bestObj, bound, nil
	}
	return nil, 0, 0, fmt.Errorf("cutoff: solver status %s: %w", res.Status, res.Err())
}

// fixByReducedCost tightens m's column bounds to what a solution with objective ≥ t can use
// (m maximises; ≤ t where it minimises), from lp, the optimal LP relaxation of m (same
// columns): a column at a bound of the LP optimum with reduced cost d cannot move more than
// |lp − t|/|d| from that bound in such a solution, since the LP's dual solution stays
// feasible and bounds the objective by lp ∓ |d|·move. Whatever sign convention the duals
// follow, |d| is that rate for a nonbasic column of an optimal basis. It returns the number
// of columns tightened.
func fixByReducedCost(m *solver.Model, lp *solver.Result, t float64) int {
	if len(lp.ReducedCosts) != m.NumVars() || len(lp.Values) != m.NumVars() {
		return 0
	}
	room := lp.Objective - t
	if m.Sense() == solver.Minimize {
		room = t - lp.Objective
	}
	// A little more slack than exact, so that rounding in HiGHS's duals never cuts off a
	// solution at t.
	slack := room + lpTol*math.Max(1, math.Abs(lp.Objective))
	if slack < 0 {
		return 0 // the LP bound is already below t: nothing reaches it
	}
	const atBound, minRate = 1e-9, 1e-9
	n := 0
	for j := range m.NumVars() {
		v := solver.Var(j)
		d := math.Abs(lp.ReducedCosts[j])
		if d < minRate {
			continue
		}
		lb, ub := m.VarBounds(v)
		x := lp.Values[j]
		move := slack / d
		switch {
		case !math.IsInf(lb, 0) && x <= lb+atBound:
			nub := lb + move
			if m.IsInteger(v) {
				nub = math.Floor(nub + boundRound)
			}
			if nub < ub {
				m.SetVarBounds(v, lb, nub)
				n++
			}
		case !math.IsInf(ub, 0) && x >= ub-atBound:
			nlb := ub - move
			if m.IsInteger(v) {
				nlb = math.Ceil(nlb - boundRound)
			}
			if nlb > lb {
				m.SetVarBounds(v, nlb, ub)
				n++
			}
		}
	}
	return n
}

// emptyModels reports models the plan gives no throughput (e.g. every feasible pipeline
// needs more GPUs than the cluster has).
func (p *problem) emptyModels(pipes []pipe) error {
	thr := modelThroughput(pipes, len(p.models))
	var bad []InfeasibleModel
	for mi, md := range p.models {
		if thr[mi] <= 0 {
			bad = append(bad, InfeasibleModel{Model: md.name, SLO: md.slo, Reason: "every pipeline that meets the SLO needs more GPUs than the cluster has left for it"})
		}
	}
	if len(bad) > 0 {
		return &InfeasibleError{Models: bad}
	}
	return nil
}

// assignFrom maps whole-model single-GPU pipelines (an NP plan) onto this MILP's variables.
// NP's (v=1, b, 0, M) option may have been pruned as dominated by a v' > 1 option of the same
// batch; then the dominating option with v'·n slices is used: same GPUs, at least as fast.
func (b *built) assignFrom(pipes []pipe) assignment {
	a := make(assignment, len(b.spaces))
	for mi, ms := range b.spaces {
		a[mi] = make([][]choice, len(ms.tmpls))
	}
	for _, pp := range pipes {
		if len(pp.parts) != 1 {
			continue
		}
		part := pp.parts[0]
		ms := b.spaces[pp.model]
		for li, t := range ms.tmpls {
			if len(t.types) != 1 || t.types[0] != part.k || a[pp.model][li] != nil {
				continue
			}
			best, bestCap := -1, 0.0
			for oi, o := range t.stages[0] {
				if o.b != part.o.b || o.v%part.o.v != 0 || o.C > part.o.C*(1+tieTol) {
					continue
				}
				if c := float64(o.v) * o.X; c > bestCap {
					best, bestCap = oi, c
				}
			}
			if best >= 0 {
				o := t.stages[0][best]
				g := min(o.G, part.g*o.v/part.o.v)
				a[pp.model][li] = []choice{{stage: 0, opt: best, g: g}}
			}
			break
		}
	}
	return a
}

// pipe is a decoded pipeline after post-processing.
type pipe struct {
	model int
	batch int
	parts []part
	x     float64 // throughput, req/s
}

type part struct {
	k int
	o option
	g int
}

// pipes turns an assignment into pipelines: x = min_d X·g, then every stage is trimmed to
// ⌈x/X⌉ slices (the MILP's x_l = min_d x_ld, PPipe A.2 Eq. 28, is indifferent to surplus
// slices on non-bottleneck stages). scale multiplies slice counts and throughput (DART-r's
// p×A).
func (p *problem) pipes(spaces []*modelSpace, a assignment, scale int) []pipe {
	var out []pipe
	for mi, ms := range spaces {
		for li, t := range ms.tmpls {
			ch := a[mi][li]
			if ch == nil {
				continue
			}
			pp := pipe{model: mi, x: math.Inf(1)}
			for _, c := range ch {
				o := t.stages[c.stage][c.opt]
				pp.parts = append(pp.parts, part{k: t.types[c.stage], o: o, g: c.g})
				pp.batch = o.b
				pp.x = math.Min(pp.x, o.X*float64(c.g))
			}
			for i := range pp.parts {
				pt := &pp.parts[i]
				pt.g = max(1, min(pt.g, int(math.Ceil(pp.x/pt.o.X-absTol))))
				pt.g *= scale
			}
			pp.x *= float64(scale)
			out = append(out, pp)
		}
	}
	return out
}

func modelThroughput(pipes []pipe, n int) []float64 {
	thr := make([]float64, n)
	for _, pp := range pipes {
		thr[pp.model] += pp.x
	}
	return thr
}

// objective is Σx (one model) or min_m x_m/w_m (max-min).
func (p *problem) objective(pipes []pipe) float64 {
	thr := modelThroughput(pipes, len(p.models))
	if len(thr) == 1 {
		return thr[0]
	}
	z := math.Inf(1)
	for mi, md := range p.models {
		z = math.Min(z, thr[mi]/md.weight)
	}
	return z
}

// plan assembles the output document.
// target is each model's guaranteed rate (fillTargets of the MILP's plan, before FillSurplus).
func (p *problem) plan(in Inputs, pipes []pipe, target []float64, st stats) (*formats.Plan, error) {
	o := p.opts
	pl := &formats.Plan{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindPlan},
		Metadata: formats.Metadata{Name: o.Strategy, Description: fmt.Sprintf("%s plan for %d model(s) on %s", o.Strategy, len(p.models), clusterName(p.cluster))},
		Cluster:  p.cluster,
	}
	pp := &ppipesec.PPipePlan{Strategy: o.Strategy, SLOMargin: o.Alpha, MaxPartitions: o.MaxPartitions}
	if o.Strategy == StrategyNP {
		pp.MaxPartitions = 1
	}
	for mi, md := range p.models {
		mp := ppipesec.PPipeModelPlan{Model: md.name, SLO: formats.Duration(md.slo), Weight: md.weight, BudgetUs: md.budget, Pipelines: []ppipesec.PPipePipeline{}}
		for _, x := range pipes {
			if x.model != mi {
				continue
			}
			pl := ppipesec.PPipePipeline{Batch: x.batch, ThroughputRPS: x.x}
			for d, pt := range x.parts {
				pl.LatencyUs += pt.o.C + pt.o.Y
				if d == 0 {
					pl.BatchFormationUs = pt.o.Beta
					pl.LatencyUs += pt.o.Beta
				}
				pl.Partitions = append(pl.Partitions, ppipesec.Partition{
					FirstBlock: pt.o.i, EndBlock: pt.o.j, GPU: p.types[pt.k].name, VGPU: pt.o.v, Count: pt.g,
					StageLatencyUs: pt.o.C, TransferUs: pt.o.Y, ThroughputRPS: pt.o.X * float64(pt.g),
				})
			}
			mp.ThroughputRPS += x.x
			mp.Pipelines = append(mp.Pipelines, pl)
		}
		pp.Models = append(pp.Models, mp)
	}
	// The guaranteed rate: min_m x_m/w_m of the decoded plan times w_m (load factor 1.0, PPipe
	// §7.1), taken before FillSurplus so that load factor 1.0 stays the solver's value.
	for mi := range pp.Models {
		pp.Models[mi].TargetRPS = target[mi]
	}
	used := PhysicalGPUs(pp, o.Rounding)
	for _, g := range p.cluster.GPUs {
		pp.GPUUse = append(pp.GPUUse, ppipesec.GPUUse{GPU: g.Type, Class: g.Class, Used: used[g.Type], Total: g.Count})
	}
	pp.Extra = map[string]string{
		"rounding":        o.Rounding,
		"batch_allowance": strconv.FormatBool(o.BatchAllowance),
		"options_raw":     strconv.Itoa(st.rawOptions),
		"options_kept":    strconv.Itoa(st.keptOptions),
	}
	if o.FillSurplus {
		pp.Extra["surplus_gpus"] = p.surplusExtra(st.surplus)
	}
	ppipesec.SetPlan(pl, pp)
	emb := p.embedded
	digest, err := formats.Digest(&emb)
	if err != nil {
		return nil, err
	}
	pl.Provenance = formats.Provenance{
		Tool: "plan", ToolVersion: planner.ToolVersion(o.ToolVersion), Solver: "highs", SolverVersion: solver.Version(),
		InputDigest: digest, Inputs: slices.Clone(in.Refs), Strategy: o.Strategy, Options: planner.RecordOptions(o.flags()),
		Status: st.status, Objective: st.objective, Bound: formats.Proven(st.bound), Gap: formats.Proven(st.gap), SolveMs: st.solveMs, Nodes: st.nodes,
		Embedded: &emb,
	}
	return pl, nil
}

// solverLog receives HiGHS's log when set (tests and benchmarks set it for diagnosis).
var solverLog io.Writer

func clusterName(c *formats.Cluster) string {
	if c.Metadata.Name != "" {
		return c.Metadata.Name
	}
	return "the cluster"
}

// PhysicalGPUs counts the physical GPUs a plan occupies per type under a rounding mode:
// "stage" sums slices per (model, stage index, type) and rounds up once per group (so slices
// of different pipelines may share a GPU); "pipeline" rounds up per partition. It is
// ppipesec.PPipePlan.PhysicalGPUsWith, the rule Validate and Verify check too.
func PhysicalGPUs(pp *ppipesec.PPipePlan, rounding string) map[string]float64 {
	_, used := pp.PhysicalGPUsWith(rounding)
	out := make(map[string]float64, len(used))
	for t, n := range used {
		out[t] = float64(n)
	}
	return out
}
