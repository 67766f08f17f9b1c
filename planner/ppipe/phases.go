package ppipe

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

// incumbent is what the phases of a search hand on, each taking the one the phase before it
// returned: the best plan found so far (nil: none yet), its objective, and the bound proven
// on every plan's objective (an upper bound when maximising throughput, a lower one for the
// cost objective).
type incumbent struct {
	best  assignment
	obj   float64
	bound float64
}

// ppipe solves the pooled-pipeline MILP. Our LP relaxation is tight (throughput flows
// along contiguous chains) and solves far faster than the MILP, so the LP guides the search:
//  1. NP plan (warm start); on a large space, a plan from its coarse grid of cuts (coarse);
//     the LP relaxation of the full model (a valid global bound);
//  2. the MILP restricted to the templates the LP uses, at the batches it uses them with
//     (any cuts and slices), plus the NP options: small, fast, and often proves the target
//     gap against the LP bound on its own;
//  3. for several models whose plan is still > ccGate below the bound, the continuous-count
//     relaxation and its repair (continuousCounts);
//  4. otherwise, on a large model whose best plan is near the bound, the full MILP cut off
//     at that plan's objective plus the gap, with columns fixed by the LP's reduced costs,
//     raced on both cores (cutoff); else the full MILP, warm-started from the best plan, with
//     the time left (fullMILP).
func (s *session) ppipe() (solved, error) {
	cfg := spaceConfig{P: s.p.opts.MaxPartitions, replicas: s.p.opts.Replicas, perLength: s.p.opts.ReplicasPerLength}
	// The NP plan comes before the full space is built: building a large one takes up to a
	// CPU-second (0.29 s for case-11-70 of the real-shaped corpus beside a busy core, 0.7 s
	// for case-11-83), and with the NP MILP after it, a short limit on a busy machine left
	// that MILP no time ("np: no plan found", nothing written, where the NP plan alone
	// solves in milliseconds) and the phases after it less. With the plan in hand and the
	// time spent, it is the plan.
	np, err := s.warmPlan()
	if err != nil {
		return solved{}, err
	}
	if np != nil {
		s.reserveFor(np.st.objective)
		if time.Until(s.deadline) < minCall {
			return npStands(*np), nil
		}
	}
	spaces, err := s.spaces(cfg)
	if err != nil {
		return solved{}, err
	}
	full := s.p.build(spaces, cfg)
	inc := warmFrom(s.p, spaces, full, np)
	s.reserveFor(inc.obj)
	st := stats{}
	countOptions(&st, spaces)
	// late: the deadline has passed with a plan in hand. A phase started now would still
	// build its model (on a 59-block model up to a CPU-second, before its solver call) and
	// spend minCall, past the limit, on a plan the phases before it rarely improve in that.
	late := func() bool { return inc.best != nil && time.Until(s.deadline) < minCall }
	// fullLate: a phase on the full model (the continuous-count relaxation, the cut-off or
	// the full MILP) started with less than fullPhaseLPs of the full LP relaxation's time
	// left could not do more than solve its root, and its model building (up to a
	// CPU-second on a 100-thousand-column model) runs past the limit: with a plan in hand,
	// it is not started.
	var lpTook time.Duration
	fullLate := func() bool { return late() || inc.best != nil && time.Until(s.deadline) < fullPhaseLPs*lpTook }
	// A large space (coarse.go) first gets a plan from its coarse grid of cuts: under a short
	// limit its full LP may not solve, and that plan is then the one the limit leaves.
	if !s.p.opts.NoLPGuide && keptOptions(spaces) > coarseMinOptions && !late() {
		if inc, err = s.coarse(spaces, cfg, inc); err != nil {
			return solved{}, err
		}
		s.reserveFor(inc.obj)
	}
	var lp *solver.Result // the LP relaxation of full, for reduced-cost fixing
	if !s.p.opts.NoLPGuide && !late() {
		g, err := s.lpGuide(spaces, cfg, inc)
		if err != nil {
			return solved{}, err
		}
		inc, lp, lpTook = g.inc, g.lp, g.took
		s.reserveFor(inc.bound)
	}
	// Only the max-min objective over several models makes the counts the hard part: with
	// one model the full MILP closes the gap about as fast as the relaxation solves.
	// And only when the plan in hand is far from the LP bound: within ccGate, what separates
	// them is the rounding of a good plan's pool sizes, which the cut-off phase settles
	// faster than the relaxation can (HC2-G1, P ≤ 3: 0.98% apart, and the relaxation's bound
	// is the LP's), while a plan several % below the bound (P3-2types-3models: 5%) has the
	// wrong options, which the relaxation finds.
	if !s.p.opts.NoContinuousCounts && len(spaces) > 1 && !fullLate() && time.Until(s.deadline)/ccShare >= fullPhaseLPs*lpTook && (inc.best == nil || relGap(inc.obj, inc.bound) > max(s.p.opts.Gap, ccGate)) {
		if inc, err = s.continuousCounts(spaces, cfg, inc); err != nil {
			return solved{}, err
		}
	}
	switch gap := relGap(inc.obj, inc.bound); {
	case fullLate():
		// The plan in hand stands with its bound; the status below says the limit stopped it.
	case inc.best != nil && !s.p.opts.NoCutoff && full.m.NumIntegers() >= cutoffMinIntegers && gap > s.p.opts.Gap && gap <= cutoffMaxGap:
		if inc, err = s.cutoff(full, inc, cutoffOpts{lp: lp, race: proofRace()}); err != nil {
			return solved{}, err
		}
	case inc.best == nil || gap > s.p.opts.Gap:
		if inc, err = s.fullMILP(full, inc); err != nil {
			return solved{}, err
		}
	}
	pipes := s.p.pipes(spaces, inc.best, 1)
	st.objective, st.bound = inc.obj, math.Max(inc.bound, inc.obj)
	st.gap = relGap(st.objective, st.bound)
	st.status = "optimal"
	if st.gap > s.p.opts.Gap*(1+relTol) {
		st.status = solver.StatusTimeLimit.String()
	}
	if err := s.p.emptyModels(pipes); err != nil {
		return solved{st: st}, err
	}
	return solved{pipes: pipes, st: st}, nil
}

// warmPlan is the first phase: the NP plan (PPipe §7.1's baseline), which warmFrom maps onto
// the full model's variables as the incumbent, with no bound yet. Without it (nil:
// Options.NoWarmStart, or NP cannot serve some model whole, which PPipe may still cut) there
// is no incumbent.
func (s *session) warmPlan() (*solved, error) {
	if s.p.opts.NoWarmStart {
		return nil, nil
	}
	np, err := s.np()
	switch {
	case err == nil:
		return &np, nil
	case errors.Is(err, planner.ErrInfeasible):
		return nil, nil
	default:
		return nil, err
	}
}

// warmFrom is the incumbent the NP plan np (nil: none) gives on full's variables.
func warmFrom(p *problem, spaces []*modelSpace, full *built, np *solved) incumbent {
	inc := incumbent{obj: math.Inf(-1), bound: math.Inf(1)}
	if np != nil {
		inc.best = full.assignFrom(np.pipes)
		inc.obj = p.objective(p.pipes(spaces, inc.best, 1))
	}
	return inc
}

// npStands is the NP plan as the search's plan when the time limit leaves no time to build
// the full space: no bound (the NP optimum bounds only plans without partitions), so the
// status says the limit stopped it.
func npStands(np solved) solved {
	st := np.st
	st.bound, st.gap = math.Inf(1), math.Inf(1)
	st.status = solver.StatusTimeLimit.String()
	return solved{pipes: np.pipes, st: st}
}

// lpShare is the limit of an LP relaxation that guides a restricted MILP, of left: three
// quarters. An LP stops when it is solved, so its share binds only when it is slow, and then
// a larger one is what lets the phases it guides run at all: an LP cut off unsolved leaves
// no restricted MILP, and the phases after it work on the full model, which is larger
// still. Under a 2 s limit beside a busy core, the real-shaped corpus's case-11-70 gave its
// coarse LP (10.6 thousand columns) a quarter of the time left, 103 ms; it ended unsolved and
// the solve on the NP plan, 987.8 req/s, where given three quarters it solves in 130 ms and
// the coarse MILP it guides finds 1,361.
func lpShare(left time.Duration) time.Duration { return left * 3 / 4 }

// lpGuided is what the LP-guided phase leaves: the incumbent, with the LP's bound and the
// restricted MILP's plan where better, and the LP relaxation itself (nil unless it solved to
// optimality) for the cut-off phase's reduced-cost fixing.
type lpGuided struct {
	inc incumbent
	lp  *solver.Result
	// took is how long the LP relaxation ran, solved or not.
	took time.Duration
}

// fullPhaseLPs is the least time, in the full LP relaxation's solve times, that a phase on
// the full model is started with (the cut-off or the full MILP: the time left; the
// continuous-count relaxation: its share of it, 1/ccShare): its root alone is one. With
// less, that time is the restricted MILP's: under a 2 s limit, the real-shaped corpus's
// case-11-111 gave its continuous-count relaxation 60 ms after a 219 ms LP, which ran
// unsolved past its stop, while the restricted MILP before it, stopped at its half (220 ms),
// ended on 343.5 or 435.9 by the run; given the time, it ends on 435.9.
const fullPhaseLPs = 3

// lpGuide is the LP-guided phase: the LP relaxation of the full model under cfg (a valid
// global bound) with lpShare of the time left, then the MILP restricted to the options it
// uses (guidedRestriction, started from the incumbent) with half the time left after it, or
// all of it where the half it would leave is too short for a phase on the full model
// (fullPhaseLPs).
func (s *session) lpGuide(spaces []*modelSpace, cfg spaceConfig, inc incumbent) (lpGuided, error) {
	lcfg := cfg
	lcfg.relax = true
	began := time.Now()
	lp := s.p.build(spaces, lcfg)
	lres, err := s.run(lp, solveCall{phase: "lp", limit: lpShare(time.Until(s.deadline))})
	took := time.Since(began)
	if err != nil && !errors.Is(err, planner.ErrNoSolution) {
		return lpGuided{}, err
	}
	if err != nil || lres.Status != solver.StatusOptimal {
		return lpGuided{inc: inc, took: took}, nil
	}
	inc.bound = lres.Objective
	r, rb, start := s.p.guidedRestriction(spaces, lp, lres, inc.best, cfg)
	limit := time.Until(s.deadline)
	if limit-limit/2 >= fullPhaseLPs*took {
		limit /= 2
	}
	rres, err := s.run(rb, solveCall{phase: "restricted", start: start, limit: limit})
	switch {
	case err == nil:
		if rres.Objective > inc.obj {
			inc.best, inc.obj = r.lift(rb.decode(rres.Values), spaces), rres.Objective
		}
	case errors.Is(err, planner.ErrNoSolution):
	default:
		return lpGuided{}, err
	}
	return lpGuided{inc: inc, lp: lres, took: took}, nil
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
// phase; ccShare the part of the time left its relaxation gets (1/ccShare), which must hold
// fullPhaseLPs of the full LP's time for the phase to start.
const (
	ccGate  = 0.02
	ccShare = 3
)

// continuousCounts is the formulation phase of the solve: what makes the MILP hard is
// its integer slice and GPU counts (with them continuous, the hardest bundled case solves in
// seconds). So it solves the continuous-count relaxation — template and option choices
// binary, counts continuous — whose dual bound is a valid and much tighter upper bound than
// the LP's, then repairs its choices into an integer plan with a small MILP over the options
// it chose (and, at the same batch sizes, the other cuts and slice levels of its templates,
// and the incumbent's choices, so the incumbent stays a feasible start). Either result may end
// the pipeline: the repaired plan within the gap of the relaxation's bound needs no full MILP.
func (s *session) continuousCounts(spaces []*modelSpace, cfg spaceConfig, inc incumbent) (incumbent, error) {
	ccfg := cfg
	ccfg.contCounts = true
	cb := s.p.build(spaces, ccfg)
	var start []float64
	if inc.best != nil {
		start = cb.start(inc.best)
	}
	cres, err := s.run(cb, solveCall{phase: "continuous-counts", start: start, limit: time.Until(s.deadline) / ccShare})
	switch {
	case errors.Is(err, planner.ErrNoSolution):
		return inc, nil
	case err != nil:
		return incumbent{}, err
	}
	inc.bound = math.Min(inc.bound, math.Max(cres.Bound, cres.Objective))
	chosen := func(m, l, d, o int) bool { return cres.Values[cb.y[m][l][d][o]] > 0.5 }
	keep := keepGuided(spaces, chosen, inc.best)
	r := restrict(spaces, keep)
	rb := s.p.build(r.spaces, cfg)
	start = nil
	if inc.best != nil {
		start = rb.start(r.lower(inc.best))
	}
	rres, err := s.run(rb, solveCall{phase: "repair", start: start, limit: time.Until(s.deadline) / 2})
	switch {
	case err == nil:
		if rres.Objective > inc.obj || inc.best == nil {
			inc.best, inc.obj = r.lift(rb.decode(rres.Values), spaces), rres.Objective
		}
	case errors.Is(err, planner.ErrNoSolution):
	default:
		return incumbent{}, err
	}
	return inc, nil
}

// cutoffOpts are what a cut-off phase (cutoff, costCutoff) runs with, set by the phase that
// calls it.
type cutoffOpts struct {
	// lp is the optimal LP relaxation of the phase's model, for reduced-cost fixing (nil:
	// none).
	lp *solver.Result
	// race is solver.Options.Race of the proof (proofRace; 0: the solver's default).
	race int
	// deadline replaces the session's (zero: the session's; costDecomposed's per-model
	// shares).
	deadline time.Time
}

// proofRace is the race of a cut-off phase's proof. The proof is the hard part of a hard
// plan: race both cores on it, unless the plan must not depend on timing (then the solver
// runs one instance anyway).
func proofRace() int {
	if runtime.GOMAXPROCS(0) >= 2 {
		return min(runtime.GOMAXPROCS(0), 2)
	}
	return 0
}

// cutoff is the last phase when a plan is in hand: the full MILP restricted to plans better
// than the incumbent by more than the gap (objective ≥ t = incumbent·(1+gap)). What keeps
// the full MILP from proving the gap is its bound, which must fall from the LP's to within
// the gap of a plan usually found in the first seconds; with the cut-off as a constraint,
// propagation shrinks every model's options to those that could beat t, and
// every node whose bound is below t is infeasible rather than merely unpromising (HiGHS
// prunes against the incumbent itself, not against the gap above it). Infeasible proves the
// incumbent within the gap; a solution found is a better plan; on the time limit, the
// bound is max(t, the phase's own bound), valid since plans below t were never the
// question.
func (s *session) cutoff(full *built, inc incumbent, o cutoffOpts) (incumbent, error) {
	t := inc.obj * (1 + s.p.opts.Gap)
	if o.lp != nil {
		fixByReducedCost(full.m, o.lp, t)
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
	// A plan above t is rare (the incumbent is usually optimal or within the gap), so HiGHS's
	// primal heuristics, a third of the phase's time on HC2-G1 (sub-MIPs at the root and in
	// the tree), are switched off (proof): 25.8 → 14.7 s on one core there.
	// t is not also HiGHS's objective bound here (as costCutoff's is): on hc2-g1's model as
	// written to a file, one thread, it sped the proof up (10.5 → 7.8 CPU-s), but the
	// planner's own two-racer solve of the same instance took 1,075 nodes and 39–41 s
	// instead of 383 and 18–22 s (BenchmarkSolve, load 7), and one racer alone was no faster
	// (15.1 and 14.9 s).
	res, err := s.solve(full, solveCall{phase: "cutoff", deadline: o.deadline, race: o.race, proof: true})
	if err != nil {
		return incumbent{}, err
	}
	switch {
	case res.Status == solver.StatusInfeasible:
		inc.bound = math.Min(inc.bound, t)
		return inc, nil
	case res.HasSolution:
		if res.Objective > inc.obj {
			inc.best, inc.obj = full.decode(res.Values), res.Objective
		}
		inc.bound = math.Min(inc.bound, math.Max(t, res.Bound))
		return inc, nil
	case res.Status == solver.StatusTimeLimit:
		if !math.IsInf(res.Bound, 0) && !math.IsNaN(res.Bound) {
			inc.bound = math.Min(inc.bound, math.Max(t, res.Bound))
		}
		return inc, nil
	}
	return incumbent{}, fmt.Errorf("cutoff: solver status %s: %w", res.Status, res.Err())
}

// fullMILP is the last phase otherwise: the full MILP, warm-started from the incumbent, with
// the time left. Its time limit without a solution keeps the incumbent when there is one.
func (s *session) fullMILP(full *built, inc incumbent) (incumbent, error) {
	var start []float64
	if inc.best != nil {
		start = full.start(inc.best)
	}
	res, err := s.run(full, solveCall{phase: "ppipe", start: start})
	if err != nil && !(errors.Is(err, planner.ErrNoSolution) && inc.best != nil) {
		return incumbent{}, err
	}
	if err == nil {
		inc.bound = math.Min(inc.bound, res.Bound)
		if res.Objective >= inc.obj || inc.best == nil {
			inc.best, inc.obj = full.decode(res.Values), res.Objective
		}
	}
	return inc, nil
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
