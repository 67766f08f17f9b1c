package ppipe

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/plan-dev/plan/solver"
)

// built is a MILP over the option spaces of one or more models, with its variable handles.
type built struct {
	m      *solver.Model
	spaces []*modelSpace
	cfg    spaceConfig
	y, g   [][][][]solver.Var // [model][template][stage][option]; g is the option's g_{l,d,v}
	f      [][][][]solver.Var // throughput routed through each option, req/s
	u, x   [][]solver.Var     // [model][template]
	z      solver.Var
	multi  bool
	// hvars are the rounding variables with the (scaled) terms they bound, for warm starts.
	hvars []hvar
	// nk are the priced GPU counts of the cost objective with the budget terms they equal
	// (cost.go), for warm starts.
	nk []hvar
}

type hvar struct {
	h     solver.Var
	terms []solver.Term // g terms with coefficient 12/v
}

// lcmLevels scales g/v to integers: 12 is divisible by every level 1..4.
const lcmLevels = 12

// build writes the A.2 formulation (PPipe A.2, Eqs. 15–28) over the pruned spaces. Rows and
// columns are added in a fixed order, so the same inputs always give the same model.
func (p *problem) build(spaces []*modelSpace, cfg spaceConfig) *built {
	sense := solver.Maximize
	if cfg.cost != nil {
		sense = solver.Minimize // cost.go: least cost per hour at every model's rate
	}
	m := solver.NewModel("ppipe", sense)
	b := &built{m: m, spaces: spaces, cfg: cfg, multi: len(spaces) > 1 && cfg.cost == nil}
	if b.multi {
		b.z = m.AddContinuous("z", 0, solver.Inf, 1)
	}
	bs := &milpBuilder{p: p, b: b, m: m, cfg: cfg, stageTerms: map[hkey][]solver.Term{}, stageAllWhole: map[hkey]bool{}}
	for mi, ms := range spaces {
		b.y = append(b.y, make([][][]solver.Var, len(ms.tmpls)))
		b.g = append(b.g, make([][][]solver.Var, len(ms.tmpls)))
		b.f = append(b.f, make([][][]solver.Var, len(ms.tmpls)))
		b.u = append(b.u, make([]solver.Var, len(ms.tmpls)))
		b.x = append(b.x, make([]solver.Var, len(ms.tmpls)))
		var objTerms []solver.Term
		for li, t := range ms.tmpls {
			objTerms = append(objTerms, bs.template(mi, li, ms, t))
		}
		if b.multi {
			objTerms = append(objTerms, solver.Term{Var: b.z, Coef: ms.md.weight})
			m.AddRow(fmt.Sprintf("maxmin_m%d", mi), -solver.Inf, 0, objTerms...)
		}
		if cfg.cost != nil {
			// Σ_l x_{m,l} ≥ rate_m: the model's rate is served (objTerms hold −x).
			m.AddRow(fmt.Sprintf("rate_m%d", mi), -solver.Inf, -ms.md.rate, objTerms...)
		}
	}
	bs.gpuBudget()
	return b
}

// hkey is a rounding group: (model, stage or template·16+stage, GPU type).
type hkey struct{ m, d, k int }

// milpBuilder holds what build collects across templates: the g terms of every rounding
// group (in the order the groups appear) for the GPU budget.
type milpBuilder struct {
	p             *problem
	b             *built
	m             *solver.Model
	cfg           spaceConfig
	stageTerms    map[hkey][]solver.Term
	stageAllWhole map[hkey]bool
	stageOrder    []hkey
}

// template adds template li of model mi: its choice u and throughput x, every stage's
// options, contiguity and the latency budget; it returns x's term of the max-min row.
func (bs *milpBuilder) template(mi, li int, ms *modelSpace, t *tmpl) solver.Term {
	m, b, cfg := bs.m, bs.b, bs.cfg
	name := fmt.Sprintf("m%d_l%d", mi, li)
	obj := 0.0
	if !b.multi && cfg.cost == nil {
		obj = 1
	}
	u := m.AddVar("u_"+name, 0, 1, 0, !cfg.relax)
	x := m.AddContinuous("x_"+name, 0, t.xmax, obj)
	b.u[mi][li], b.x[mi][li] = u, x
	if t.replica > 0 {
		// Symmetry breaking between replicas of one type sequence: x[l,r] ≥ x[l,r+1]
		// and u[l,r] ≥ u[l,r+1], so permuted copies of a plan are not re-explored.
		m.AddRow("symx_"+name, 0, solver.Inf, solver.Term{Var: b.x[mi][li-1], Coef: 1}, solver.Term{Var: x, Coef: -1})
		m.AddRow("symu_"+name, 0, solver.Inf, solver.Term{Var: b.u[mi][li-1], Coef: 1}, solver.Term{Var: u, Coef: -1})
	}
	b.y[mi][li] = make([][]solver.Var, len(t.stages))
	b.g[mi][li] = make([][]solver.Var, len(t.stages))
	b.f[mi][li] = make([][]solver.Var, len(t.stages))
	latTerms := []solver.Term{{Var: u, Coef: -ms.md.budget / 1000}}
	flowLat := []solver.Term{{Var: x, Coef: -ms.md.budget / 1000}}
	for d, st := range t.stages {
		lt, ft := bs.stage(mi, li, d, name, t, st, u, x)
		latTerms = append(latTerms, lt...)
		flowLat = append(flowLat, ft...)
	}
	bs.contiguity(mi, li, name, t)
	// Latency row only where some chain of surviving options could exceed T'.
	if t.maxLat > ms.md.budget+absTol {
		m.AddRow("lat_"+name, -solver.Inf, 0, latTerms...)
		// The same budget weighted by throughput: Σ lat_ω·f_ω ≤ T'·x. In an integer
		// solution every chosen option carries f = x, so this is the latency row times
		// x; in the LP it stops options that carry no flow from lending "latency
		// credit" to a slow chain that does (the relaxation's main weakness).
		m.AddRow("flat_"+name, -solver.Inf, 0, flowLat...)
	}
	return solver.Term{Var: x, Coef: -1}
}

// stage adds stage d's options (y, f), slice counts per vGPU level (g) and rows; it returns
// the stage's terms of the latency row and of the throughput-weighted latency row.
func (bs *milpBuilder) stage(mi, li, d int, name string, t *tmpl, st []option, u, x solver.Var) (latTerms, flowLat []solver.Term) {
	m, b, cfg, p := bs.m, bs.b, bs.cfg, bs.p
	stageTerms, stageAllWhole := bs.stageTerms, bs.stageAllWhole
	k := t.types[d]
	choice := []solver.Term{{Var: u, Coef: -1}}
	thr := []solver.Term{{Var: x, Coef: 1}}
	ys := make([]solver.Var, len(st))
	gs := make([]solver.Var, len(st))
	fs := make([]solver.Var, len(st))
	key := hkey{mi, d, k}
	if cfg.roundingPipeline(p) {
		key = hkey{mi, li*16 + d, k} // one rounding group per (template, stage)
	}
	if _, ok := stageTerms[key]; !ok {
		bs.stageOrder = append(bs.stageOrder, key)
		stageAllWhole[key] = true
	}
	// Slices are counted per (l, d, v), not per option: exactly one option of the
	// stage is active, so Σ_{ω at level v} f_ω/X_ω ≤ g_v is exact for integer points
	// and as tight as per-option counts in the LP, with far fewer integer columns.
	levelOf := map[int][]int{}
	var levels []int
	for oi, o := range st {
		if _, ok := levelOf[o.v]; !ok {
			levels = append(levels, o.v)
		}
		levelOf[o.v] = append(levelOf[o.v], oi)
	}
	for oi, o := range st {
		on := fmt.Sprintf("%s_d%d_v%db%d_%d_%d", name, d, o.v, o.b, o.i, o.j)
		y := m.AddVar("y_"+on, 0, 1, 0, !cfg.relax)
		F := math.Min(t.xmax, o.X*float64(o.G))
		f := m.AddContinuous("f_"+on, 0, F, 0)
		ys[oi], fs[oi] = y, f
		choice = append(choice, solver.Term{Var: y, Coef: 1})
		thr = append(thr, solver.Term{Var: f, Coef: -1})
		m.AddRow("fy_"+on, -solver.Inf, 0, solver.Term{Var: f, Coef: 1}, solver.Term{Var: y, Coef: -F})
		latTerms = append(latTerms, solver.Term{Var: y, Coef: o.lat() / 1000})
		flowLat = append(flowLat, solver.Term{Var: f, Coef: o.lat() / 1000})
	}
	for _, v := range levels {
		vn := fmt.Sprintf("%s_d%d_v%d", name, d, v)
		Gv := 0
		for _, oi := range levelOf[v] {
			Gv = max(Gv, st[oi].G)
		}
		g := m.AddVar("g_"+vn, 0, float64(Gv), 0, !cfg.relax && !cfg.contCounts)
		for _, oi := range levelOf[v] {
			gs[oi] = g
		}
		capRow := []solver.Term{{Var: g, Coef: -1}}
		ub := []solver.Term{{Var: g, Coef: 1}}
		lb := []solver.Term{{Var: g, Coef: 1}}
		for _, oi := range levelOf[v] {
			capRow = append(capRow, solver.Term{Var: fs[oi], Coef: 1 / st[oi].X})
			ub = append(ub, solver.Term{Var: ys[oi], Coef: -float64(st[oi].G)})
			lb = append(lb, solver.Term{Var: ys[oi], Coef: -1})
		}
		m.AddRow("cap_"+vn, -solver.Inf, 0, capRow...)
		// y ≤ g ≤ G·y with the tight per-option G of bound() instead of big-M v·N.
		m.AddRow("ub_"+vn, -solver.Inf, 0, ub...)
		m.AddRow("lb_"+vn, 0, solver.Inf, lb...)
		stageTerms[key] = append(stageTerms[key], solver.Term{Var: g, Coef: float64(lcmLevels / v)})
		if v != 1 {
			stageAllWhole[key] = false
		}
	}
	b.y[mi][li][d], b.g[mi][li][d], b.f[mi][li][d] = ys, gs, fs
	m.AddRow(fmt.Sprintf("choice_%s_d%d", name, d), 0, 0, choice...)
	if d == 0 {
		// x = Σ f over the head stage; conservation carries it through every stage.
		m.AddRow(fmt.Sprintf("thr_%s", name), 0, 0, thr...)
	}
	return latTerms, flowLat
}

// contiguity adds template li's flow rows: stage d ends at cut c with batch b ⇔ stage d+1
// starts there, for the choices and for the throughput they carry.
func (bs *milpBuilder) contiguity(mi, li int, name string, t *tmpl) {
	m, b := bs.m, bs.b
	// Contiguity + unified batch: stage d ends at cut c with batch b ⇔ stage d+1 starts there.
	fvar := map[solver.Var]solver.Var{}
	for d := range t.stages {
		for oi := range t.stages[d] {
			fvar[b.y[mi][li][d][oi]] = b.f[mi][li][d][oi]
		}
	}
	for d := 0; d+1 < len(t.stages); d++ {
		type cb struct{ c, b int }
		flows := map[cb][]solver.Term{}
		var order []cb
		for oi, o := range t.stages[d] {
			key := cb{o.j, o.b}
			if _, ok := flows[key]; !ok {
				order = append(order, key)
			}
			flows[key] = append(flows[key], solver.Term{Var: b.y[mi][li][d][oi], Coef: 1})
		}
		for oi, o := range t.stages[d+1] {
			key := cb{o.i, o.b}
			if _, ok := flows[key]; !ok {
				order = append(order, key)
			}
			flows[key] = append(flows[key], solver.Term{Var: b.y[mi][li][d+1][oi], Coef: -1})
		}
		for _, key := range order {
			m.AddRow(fmt.Sprintf("flow_%s_d%d_c%d_b%d", name, d, key.c, key.b), 0, 0, flows[key]...)
			// The same conservation for throughput: in the LP relaxation, throughput must
			// follow contiguous chains, so fractional choices cannot skip blocks.
			ft := make([]solver.Term, len(flows[key]))
			for i, tm := range flows[key] {
				ft[i] = solver.Term{Var: fvar[tm.Var], Coef: tm.Coef}
			}
			m.AddRow(fmt.Sprintf("fflow_%s_d%d_c%d_b%d", name, d, key.c, key.b), 0, 0, ft...)
		}
	}
}

// gpuBudget adds the GPU budget rows.
func (bs *milpBuilder) gpuBudget() {
	m, b, cfg, p := bs.m, bs.b, bs.cfg, bs.p
	stageTerms, stageAllWhole := bs.stageTerms, bs.stageAllWhole
	budget := make([][]solver.Term, len(p.types))
	// GPU budget with physical rounding: h ≥ Σ g/v per rounding group, Σ h ≤ N_k. Groups
	// holding only whole-GPU options need no h (Σ g is already an integer GPU count).
	for _, key := range bs.stageOrder {
		terms := stageTerms[key]
		if stageAllWhole[key] {
			for _, t := range terms {
				budget[key.k] = append(budget[key.k], solver.Term{Var: t.Var, Coef: 1})
			}
			continue
		}
		n := p.count(cfg, key.k)
		h := m.AddVar(fmt.Sprintf("h_m%d_s%d_k%d", key.m, key.d, key.k), 0, float64(n), 0, !cfg.relax && !cfg.contCounts)
		row := append([]solver.Term{{Var: h, Coef: lcmLevels}}, negate(terms)...)
		m.AddRow(fmt.Sprintf("round_m%d_s%d_k%d", key.m, key.d, key.k), 0, solver.Inf, row...)
		b.hvars = append(b.hvars, hvar{h: h, terms: terms})
		budget[key.k] = append(budget[key.k], solver.Term{Var: h, Coef: 1})
	}
	for k := range p.types {
		if len(budget[k]) > 0 {
			m.AddRow("budget_"+p.types[k].name, -solver.Inf, float64(p.count(cfg, k)), budget[k]...)
			if cfg.cost != nil {
				// N_k = the physical GPUs of type k, priced: the cost objective.
				// Integer: a sum of integer counts, and HiGHS branches on it directly.
				nk := m.AddVar("gpus_"+p.types[k].name, 0, solver.Inf, cfg.cost[k], !cfg.relax && !cfg.contCounts)
				m.AddRow("cost_"+p.types[k].name, 0, 0, append([]solver.Term{{Var: nk, Coef: -1}}, budget[k]...)...)
				b.nk = append(b.nk, hvar{h: nk, terms: budget[k]})
			}
		}
	}
}

func negate(ts []solver.Term) []solver.Term {
	out := make([]solver.Term, len(ts))
	for i, t := range ts {
		out[i] = solver.Term{Var: t.Var, Coef: -t.Coef}
	}
	return out
}

func (c spaceConfig) roundingPipeline(p *problem) bool { return p.opts.Rounding == RoundingPipeline }

// choice is one chosen option with its slice count: the decoded form of y and g.
type choice struct {
	stage, opt int
	g          int
}

// assignment is a solution in decoded form: per model, per template, the chosen option of
// every stage (nil = template unused).
type assignment [][][]choice

// uses reports whether the assignment (nil: none) puts option o of stage d of template l of
// model m in a pipeline.
func (a assignment) uses(m, l, d, o int) bool {
	if a == nil {
		return false
	}
	for _, c := range a[m][l] {
		if c.stage == d && c.opt == o {
			return true
		}
	}
	return false
}

// start turns an assignment into a full MIP start vector.
func (b *built) start(a assignment) []float64 {
	a = b.replicasInOrder(a)
	vals := make([]float64, b.m.NumVars())
	zs := math.Inf(1)
	for mi, ms := range b.spaces {
		total := 0.0
		for li, t := range ms.tmpls {
			ch := a[mi][li]
			if ch == nil {
				continue
			}
			vals[b.u[mi][li]] = 1
			x := t.pipelineX(ch)
			for _, c := range ch {
				vals[b.y[mi][li][c.stage][c.opt]] = 1
				vals[b.g[mi][li][c.stage][c.opt]] = float64(c.g) // the stage's g_v (shared by its level)
			}
			vals[b.x[mi][li]] = x
			for _, c := range ch {
				vals[b.f[mi][li][c.stage][c.opt]] = x
			}
			total += x
		}
		zs = math.Min(zs, total/ms.md.weight)
	}
	for _, h := range b.hvars {
		s := 0.0
		for _, t := range h.terms {
			s += t.Coef * vals[t.Var]
		}
		vals[h.h] = math.Ceil(s/lcmLevels - absTol)
	}
	for _, n := range b.nk {
		s := 0.0
		for _, t := range n.terms {
			s += t.Coef * vals[t.Var]
		}
		vals[n.h] = s
	}
	if b.multi {
		vals[b.z] = zs
	}
	return vals
}

// pipelineX is the throughput of template t's pipeline on the choices ch: its slowest
// stage's slices, within the template's bound.
func (t *tmpl) pipelineX(ch []choice) float64 {
	x := t.xmax
	for _, c := range ch {
		x = math.Min(x, t.stages[c.stage][c.opt].X*float64(c.g))
	}
	return x
}

// replicasInOrder is a with every run of replica templates (one type sequence's copies, whose
// options are the same) holding its pipelines in the order the model's symmetry-breaking
// rows ask (symx, symu: a replica carries no more than the one before it, and is used only
// if it is). A plan from a restricted space, which has no such rows, may use a later replica
// and not an earlier one; as a MIP start it would be infeasible, and HiGHS drops it.
func (b *built) replicasInOrder(a assignment) assignment {
	out := make(assignment, len(a))
	for mi, ms := range b.spaces {
		out[mi] = slices.Clone(a[mi])
		for lo := 0; lo < len(ms.tmpls); {
			hi := lo + 1
			for hi < len(ms.tmpls) && ms.tmpls[hi].replica > 0 && sameOptions(ms.tmpls[lo], ms.tmpls[hi]) {
				hi++
			}
			if hi-lo > 1 {
				run := out[mi][lo:hi]
				x := func(ch []choice) float64 {
					if ch == nil {
						return -1
					}
					return ms.tmpls[lo].pipelineX(ch)
				}
				slices.SortStableFunc(run, func(p, q []choice) int { return cmp.Compare(x(q), x(p)) })
			}
			lo = hi
		}
	}
	return out
}

// sameOptions reports whether two templates have the same type sequence and the same
// options at every stage (replicas of the full space).
func sameOptions(s, t *tmpl) bool {
	if !slices.Equal(s.types, t.types) || len(s.stages) != len(t.stages) || s.xmax != t.xmax {
		return false
	}
	for d := range s.stages {
		if !slices.Equal(s.stages[d], t.stages[d]) {
			return false
		}
	}
	return true
}

// decode reads the chosen options and slice counts out of a solution vector.
func (b *built) decode(vals []float64) assignment {
	a := make(assignment, len(b.spaces))
	for mi, ms := range b.spaces {
		a[mi] = make([][]choice, len(ms.tmpls))
		for li, t := range ms.tmpls {
			if vals[b.u[mi][li]] < 0.5 {
				continue
			}
			var ch []choice
			for d := range t.stages {
				for oi := range t.stages[d] {
					if vals[b.y[mi][li][d][oi]] > 0.5 {
						g := int(math.Round(vals[b.g[mi][li][d][oi]]))
						ch = append(ch, choice{stage: d, opt: oi, g: max(g, 1)})
						break
					}
				}
			}
			if len(ch) == len(t.stages) {
				a[mi][li] = ch
			}
		}
	}
	return a
}
