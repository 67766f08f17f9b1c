package ppipe

import (
	"errors"
	"slices"
	"time"

	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

// The coarse phase. A model of M blocks has O(M²) cuts (i, j) for a middle stage, each at
// every slice level and batch, so at P = 3 with pipeline rounding a space of three 60-block
// models keeps 30–100 thousand options: an LP of 120 thousand columns and 70 thousand rows,
// whose dual simplex takes ~1.3 ms an iteration and 8–10 s in all on this machine. Under a
// short --time-limit that LP runs out of its half of the time unsolved, the restricted MILP
// it guides never runs, and the solve ends on the NP plan (generated corpus case-1-3 at
// 20 s: 603.1 where the same phases given 60 s find 885.7). PPipe cuts where the activation
// is small (§4: the cut's transfer time τ enters both the stage's latency and its NIC cap),
// so a coarse grid of cuts — the cheapest by τ and an even spread — keeps most of the good
// plans in a space a tenth of the size, whose LP and LP-guided MILP take a second or two.
// The coarse phase runs that before the full LP on a large space and hands its plan on as
// the incumbent; its bound is not the full space's and is not kept.

// coarseMinOptions is the kept-option count above which the coarse phase runs first: the
// bundled benchmark's hardest case (hc2-g1, 3 models, P ≤ 3) keeps about 2.6 thousand and
// its full LP solves in well under a second.
const coarseMinOptions = 20000

// coarseCuts is how many internal cut positions the coarse grid keeps per model: half the
// cheapest by transfer time, half evenly spread (so a stage can still balance latency).
const coarseCuts = 12

// coarseGrid is the set of cut positions (0 and M included) model md's coarse options may
// start and end at: all of them when the model has no more internal cuts than coarseCuts.
func coarseGrid(md *modelData) []bool {
	M := md.blocks
	keep := make([]bool, M+1)
	keep[0], keep[M] = true, true
	if M-1 <= coarseCuts {
		for c := range keep {
			keep[c] = true
		}
		return keep
	}
	cuts := make([]int, 0, M-1)
	for c := 1; c < M; c++ {
		cuts = append(cuts, c)
	}
	slices.SortStableFunc(cuts, func(a, b int) int {
		switch {
		case md.tau[a] < md.tau[b]:
			return -1
		case md.tau[a] > md.tau[b]:
			return 1
		}
		return 0
	})
	for _, c := range cuts[:coarseCuts/2] {
		keep[c] = true
	}
	spread := coarseCuts - coarseCuts/2
	for s := 1; s <= spread; s++ {
		keep[s*M/(spread+1)] = true
	}
	return keep
}

// coarseKeep keeps the options whose cuts lie on their model's coarse grid, and every option
// of the incumbent (nil: none) so that it stays a feasible start.
func coarseKeep(spaces []*modelSpace, incumbent assignment) func(m, l, d, o int) bool {
	grids := make([][]bool, len(spaces))
	for m, ms := range spaces {
		grids[m] = coarseGrid(ms.md)
	}
	return func(m, l, d, o int) bool {
		op := spaces[m].tmpls[l].stages[d][o]
		return grids[m][op.i] && grids[m][op.j] || incumbent.uses(m, l, d, o)
	}
}

// keptOptions is the number of options the spaces hold.
func keptOptions(spaces []*modelSpace) int {
	n := 0
	for _, ms := range spaces {
		for _, t := range ms.tmpls {
			for _, st := range t.stages {
				n += len(st)
			}
		}
	}
	return n
}

// coarse is the coarse phase: on the coarse grid's restriction of spaces, the LP relaxation
// (lpShare of the time left) and the MILP restricted to the options it uses, started from
// the incumbent: a quarter of what is left after the LP, or all of it where the full LP
// would not fit in the rest (fullLPFits). A better plan found replaces the incumbent; the
// bound stays the caller's.
func (s *session) coarse(spaces []*modelSpace, cfg spaceConfig, inc incumbent) (incumbent, error) {
	c := restrict(spaces, coarseKeep(spaces, inc.best))
	lcfg := cfg
	lcfg.relax = true
	began := time.Now()
	lp := s.p.build(c.spaces, lcfg)
	lres, err := s.run(lp, solveCall{phase: "coarse-lp", limit: lpShare(time.Until(s.deadline))})
	took := time.Since(began)
	if err != nil && !errors.Is(err, planner.ErrNoSolution) {
		return incumbent{}, err
	}
	if err != nil || lres.Status != solver.StatusOptimal {
		return inc, nil
	}
	var start assignment
	if inc.best != nil {
		start = c.lower(inc.best)
	}
	r, rb, rstart := s.p.guidedRestriction(c.spaces, lp, lres, start, cfg)
	limit := time.Until(s.deadline)
	if fullLPFits(took, keptOptions(c.spaces), keptOptions(spaces), limit) {
		limit /= 4
	}
	rres, err := s.run(rb, solveCall{phase: "coarse", start: rstart, limit: limit})
	switch {
	case err == nil:
		if rres.Objective > inc.obj || inc.best == nil {
			inc.best, inc.obj = c.lift(r.lift(rb.decode(rres.Values), c.spaces), spaces), rres.Objective
		}
	case errors.Is(err, planner.ErrNoSolution):
	default:
		return incumbent{}, err
	}
	return inc, nil
}

// fullLPFits reports whether the full space's LP relaxation, of full options, may still
// solve in left once the coarse phase's MILP has had a quarter of it, judged by the coarse
// LP of coarse options, which took took (model building included). The LP's time grows at
// least with its size (authors-like case-11-118 of the real-shaped corpus: 6.3 thousand
// columns in 0.07–0.11 s, 64.8 thousand in 1.5 s, 16–23× for 10.3×), so a space ten times
// the coarse one cannot solve in less than ten times the coarse LP's time. Where it cannot,
// the quarter it would be left is no use to it and the coarse MILP, the only phase that
// can still improve the plan, takes the time instead: under a 2 s limit beside a busy core,
// case-11-152's coarse MILP given a quarter (113 ms) ended on the NP plan, 288.8, and its
// full LP then ran out of time unsolved; given the rest (478 ms) it finds 337.5.
func fullLPFits(took time.Duration, coarse, full int, left time.Duration) bool {
	if coarse <= 0 {
		return true
	}
	need := time.Duration(float64(took) * float64(full) / float64(coarse))
	return need < left*3/4
}
