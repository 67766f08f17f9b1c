package ppipe

import (
	"math"

	"github.com/plan-dev/plan/solver"
)

// restricted is a sub-space of the full option spaces with maps back to full indices.
type restricted struct {
	spaces []*modelSpace
	tmap   [][]int     // [model][restricted template] → full template
	omap   [][][][]int // [model][restricted template][stage][restricted option] → full option
}

// keepGuided is the option filter of a relaxation-guided restricted MILP: an option the
// relaxation chose, any option of a template at a batch size the relaxation used there (the
// restricted MILP may re-cut and re-slice those templates freely at those batches: the
// relaxation's own support is too narrow, its integer optimum often several % below the best
// plan), and every option of the incumbent (nil: none) so that it stays a feasible start.
func keepGuided(spaces []*modelSpace, chosen func(m, l, d, o int) bool, incumbent assignment) func(m, l, d, o int) bool {
	batches := map[[3]int]bool{}
	for m, ms := range spaces {
		for l, t := range ms.tmpls {
			for d, st := range t.stages {
				for o, op := range st {
					if chosen(m, l, d, o) {
						batches[[3]int{m, l, op.b}] = true
					}
				}
			}
		}
	}
	return func(m, l, d, o int) bool {
		return chosen(m, l, d, o) || batches[[3]int{m, l, spaces[m].tmpls[l].stages[d][o].b}] || incumbent.uses(m, l, d, o)
	}
}

// guidedRestriction is the restricted MILP of the LP-guided phase, for plan and cost solves
// alike: the options the relaxation lres of lp uses (above lpTol, HiGHS's feasibility
// tolerance) as keepGuided widens them with the incumbent, built under cfg, and the
// incumbent lowered into it as the start (nil without an incumbent).
func (p *problem) guidedRestriction(spaces []*modelSpace, lp *built, lres *solver.Result, incumbent assignment, cfg spaceConfig) (*restricted, *built, []float64) {
	inLP := func(m, l, d, o int) bool {
		return lres.Values[lp.y[m][l][d][o]] > lpTol || lres.Values[lp.f[m][l][d][o]] > lpTol
	}
	r := restrict(spaces, keepGuided(spaces, inLP, incumbent))
	rb := p.build(r.spaces, cfg)
	var start []float64
	if incumbent != nil {
		start = rb.start(r.lower(incumbent))
	}
	return r, rb, start
}

// restrict keeps the options for which keep is true; a template survives when every stage
// keeps at least one option. Bounds (G, xmax) stay those of the full space: still valid.
func restrict(spaces []*modelSpace, keep func(m, l, d, o int) bool) *restricted {
	r := &restricted{}
	for mi, ms := range spaces {
		rs := &modelSpace{md: ms.md, minLat: ms.minLat, raw: ms.raw, kept: ms.kept}
		var tm []int
		var om [][][]int
		for li, t := range ms.tmpls {
			nt := &tmpl{types: t.types, xmax: t.xmax, maxLat: t.maxLat, stages: make([][]option, len(t.stages))}
			maps := make([][]int, len(t.stages))
			ok := true
			for d, st := range t.stages {
				for oi, o := range st {
					if keep(mi, li, d, oi) {
						nt.stages[d] = append(nt.stages[d], o)
						maps[d] = append(maps[d], oi)
					}
				}
				if len(nt.stages[d]) == 0 {
					ok = false
				}
			}
			if ok {
				rs.tmpls = append(rs.tmpls, nt)
				tm = append(tm, li)
				om = append(om, maps)
			}
		}
		r.spaces = append(r.spaces, rs)
		r.tmap = append(r.tmap, tm)
		r.omap = append(r.omap, om)
	}
	return r
}

// lift maps a restricted assignment to the full spaces.
func (r *restricted) lift(a assignment, full []*modelSpace) assignment {
	out := make(assignment, len(full))
	for mi := range full {
		out[mi] = make([][]choice, len(full[mi].tmpls))
		for rl, ch := range a[mi] {
			if ch == nil {
				continue
			}
			fc := make([]choice, len(ch))
			for i, c := range ch {
				fc[i] = choice{stage: c.stage, opt: r.omap[mi][rl][c.stage][c.opt], g: c.g}
			}
			out[mi][r.tmap[mi][rl]] = fc
		}
	}
	return out
}

// lower maps a full assignment into the restricted spaces, dropping pipelines that use a
// removed option.
func (r *restricted) lower(a assignment) assignment {
	out := make(assignment, len(r.spaces))
	for mi, rs := range r.spaces {
		out[mi] = make([][]choice, len(rs.tmpls))
		for rl, fl := range r.tmap[mi] {
			ch := a[mi][fl]
			if ch == nil {
				continue
			}
			rc := make([]choice, 0, len(ch))
			for _, c := range ch {
				for ro, fo := range r.omap[mi][rl][c.stage] {
					if fo == c.opt {
						rc = append(rc, choice{stage: c.stage, opt: ro, g: c.g})
						break
					}
				}
			}
			if len(rc) == len(ch) {
				out[mi][rl] = rc
			}
		}
	}
	return out
}

// relGap is HiGHS's gap definition |obj − bound| / |obj|.
func relGap(obj, bound float64) float64 {
	if obj == 0 {
		if bound == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Max(0, bound-obj) / math.Abs(obj)
}
