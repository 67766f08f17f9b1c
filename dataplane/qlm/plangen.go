package qlm

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/plan-dev/plan/solver"
)

// PlanProblem is one instance of the plan generator (QLM §7): the waiting request groups,
// with their costs on every instance, and the instances' loaded models and residual work.
// Times are seconds; Now and deadlines are absolute.
type PlanProblem struct {
	Now       float64
	Instances []PlanInstance
	Groups    []PlanGroup
}

// PlanInstance is one virtual queue's instance.
type PlanInstance struct {
	Loaded   string
	Residual float64
}

// PlanGroup is one request group: model, deadline, the instance it is pinned to (-1 = free:
// load balancing may place it) and its cost per instance (nil = cannot run there).
type PlanGroup struct {
	ID       int
	Model    string
	Deadline float64
	Pinned   int
	Cost     []*GroupCost
	// Weight is the number of requests the group holds (0 counts as 1): SLOs are per
	// request (QLM §2.3, Def. 2.2), so the plan's penalty (QLM §7, Eq. 11–13) counts a late
	// group once per request. Unweighted, pushing one group of hundreds of batch requests
	// past its deadline costs the same as one late interactive request, and the decomposed
	// plan sacrifices the large groups first under overload.
	Weight int
}

// w is the group's weight in the plan's score.
func (g *PlanGroup) w() float64 { return float64(max(g.Weight, 1)) }

// GroupCost are a group's RCT quantities on one instance (QLM §6): drain time mean and L1
// quantile, own completion mean and Δ-quantile, and the swap time S into its model.
type GroupCost struct {
	WMean, WQ, CMean, CQ, Swap float64
}

// PlanOptions set the solve.
type PlanOptions struct {
	// TimeLimit bounds one MILP solve (0 = 1 s).
	TimeLimit time.Duration
	// MaxBinaries above which the MILP is not built and the decomposed plan ([ours]: assign,
	// then order each queue) is the answer; 0 = 600, negative = never build it.
	MaxBinaries int
	// Budget bounds the decomposed generator's local search, in group steps (0 = 4 M).
	Budget int
	// SkipStrict goes straight to soft mode (the caller's last strict program was
	// infeasible and the overload persists: no solve storms [ours]).
	SkipStrict bool
}

// PlanSolution is the virtual-queue order per instance (indexes into Groups) and how it was
// found.
type PlanSolution struct {
	Queues [][]int
	// Mode is strict, soft, decomposed or edf (the fallback chain [ours]).
	Mode string
	// Fallback: the strict program had no plan.
	Fallback bool
	// Violations is the number of groups predicted to miss their deadline.
	Violations int
	Objective  float64
}

// SolvePlan runs the plan generator. It first builds the decomposed plan [ours]
// (assignment in deadline order, then each queue ordered exactly or by bounded local
// search); small problems then solve the MILP of QLM §7 with the L1 linearisation
// of the chance constraint (each drain term at μ + zσ, completion at its Δ-quantile), strict
// first, then soft, warm-started from that plan, and keep whichever plan is better (fewer
// predicted violations, then objective 13). EDF order with least-loaded placement is the
// last fallback.
func SolvePlan(pr *PlanProblem, o PlanOptions) PlanSolution {
	if o.TimeLimit <= 0 {
		o.TimeLimit = time.Second
	}
	if o.MaxBinaries == 0 {
		o.MaxBinaries = 600
	}
	G, N := len(pr.Instances), len(pr.Groups)
	if N == 0 {
		return PlanSolution{Queues: make([][]int, G), Mode: "strict"}
	}
	L := N
	if G > 1 {
		L = min(N, int(math.Ceil(1.5*float64(N)/float64(G)))+2)
	}
	bins := 0
	for _, g := range pr.Groups {
		for gi, c := range g.Cost {
			if c != nil && (g.Pinned < 0 || g.Pinned == gi) {
				bins += L
			}
		}
	}
	dq := decompose(pr, o.Budget)
	ds := planScore(pr, dq)
	// A decomposed queue longer than L cannot be the MILP's start; L = N always fits.
	for _, v := range dq {
		L = max(L, len(v))
	}
	dec := PlanSolution{Queues: dq, Mode: "decomposed", Fallback: ds.viol > 0, Violations: Violations(pr, dq), Objective: ds.obj}
	if o.MaxBinaries < 0 || bins > o.MaxBinaries {
		return dec
	}
	for _, soft := range []bool{false, true} {
		if !soft && o.SkipStrict {
			continue
		}
		q, _, err := solveMILP(pr, L, soft, o.TimeLimit, dq)
		if err != nil {
			continue
		}
		ms := planScore(pr, q)
		if ds.less(ms) {
			return dec
		}
		s := PlanSolution{Queues: q, Mode: "strict", Fallback: soft, Violations: Violations(pr, q), Objective: ms.obj}
		if soft {
			s.Mode = "soft"
		}
		return s
	}
	if ds.viol == 0 {
		return dec
	}
	q := edfPlan(pr)
	if es := planScore(pr, q); ds.less(es) {
		return dec
	}
	return PlanSolution{Queues: q, Mode: "edf", Fallback: true, Violations: Violations(pr, q), Objective: Expected(pr, q)}
}

// planScore is the lexicographic quality (violations, objective 13) of plan q.
func planScore(pr *PlanProblem, q [][]int) score {
	var s score
	steps := 0
	for g, order := range q {
		qs := queueScore(pr, g, order, &steps)
		s.viol += qs.viol
		s.late += qs.late
		s.obj += qs.obj
	}
	return s
}

// walkPlan visits the groups of plan q in each instance's queue order with the time the
// instance starts them: from start plus the instance's residual, a model swap before a group
// of another model than the one before it, and then the drain visit returns for the group.
func walkPlan(pr *PlanProblem, q [][]int, start float64, visit func(i int, t float64, c *GroupCost) (drain float64)) {
	for g, order := range q {
		t := start + pr.Instances[g].Residual
		prev := pr.Instances[g].Loaded
		for _, i := range order {
			c := pr.Groups[i].Cost[g]
			if pr.Groups[i].Model != prev {
				t += c.Swap
				prev = pr.Groups[i].Model
			}
			t += visit(i, t, c)
		}
	}
}

// Violations counts groups whose L1-quantile completion under plan q misses their deadline.
func Violations(pr *PlanProblem, q [][]int) int {
	n := 0
	walkPlan(pr, q, pr.Now, func(i int, t float64, c *GroupCost) float64 {
		if t+c.CQ > pr.Groups[i].Deadline {
			n++
		}
		return c.WQ
	})
	return n
}

// Expected is the MILP objective (13) of plan q: the sum of expected group completions.
func Expected(pr *PlanProblem, q [][]int) float64 {
	sum := 0.0
	walkPlan(pr, q, 0, func(_ int, t float64, c *GroupCost) float64 {
		sum += t + c.CMean
		return c.WMean
	})
	return sum
}

// sortEDF orders groups (indices into pr.Groups) earliest deadline first, ties by group ID:
// the EDF order every step of the plan generator starts from.
func sortEDF(pr *PlanProblem, groups []int) {
	sort.SliceStable(groups, func(a, b int) bool {
		ga, gb := &pr.Groups[groups[a]], &pr.Groups[groups[b]]
		if ga.Deadline != gb.Deadline {
			return ga.Deadline < gb.Deadline
		}
		return ga.ID < gb.ID
	})
}

// edfOrder is every group of pr (its index in pr.Groups) in EDF order (sortEDF).
func edfOrder(pr *PlanProblem) []int {
	idx := make([]int, len(pr.Groups))
	for i := range idx {
		idx[i] = i
	}
	sortEDF(pr, idx)
	return idx
}

// edfPlan is the fallback: groups by earliest deadline (ties by ID), each to its pinned
// instance or the eligible one with the least expected drain so far.
func edfPlan(pr *PlanProblem) [][]int {
	G := len(pr.Instances)
	idx := edfOrder(pr)
	load := make([]float64, G)
	for g := range load {
		load[g] = pr.Instances[g].Residual
	}
	q := make([][]int, G)
	for _, i := range idx {
		gr := pr.Groups[i]
		best := gr.Pinned
		if best < 0 {
			bt := math.Inf(1)
			for g, c := range gr.Cost {
				if c != nil && load[g] < bt {
					best, bt = g, load[g]
				}
			}
		}
		q[best] = append(q[best], i)
		load[best] += gr.Cost[best].WMean
	}
	return q
}

// milpVar is one assignment binary x[g,i,j]: group i at position j of instance g's queue.
type milpVar struct {
	i, g, j int
	v       solver.Var
}

// milpDef is a continuous variable with the one row that bounds it from below (coefficient
// 1), in creation order: the warm start sets each to its least feasible value.
type milpDef struct {
	v   solver.Var
	row int
}

// milpBuild is the MILP of QLM §7 being built: variables and rows are added in a fixed order
// (assignment, occupancy and gaps, swaps, completions per instance), so a problem always
// yields the same model.
type milpBuild struct {
	pr    *PlanProblem
	L     int
	soft  bool
	m     *solver.Model
	xs    []milpVar
	defs  []milpDef
	at    [][][]milpVar // at[g][j] = vars at position j of g
	mlist []string
	M     float64
}

// solveMILP builds and solves the MILP of QLM §7 (strict or soft) with L positions per queue.
func solveMILP(pr *PlanProblem, L int, soft bool, limit time.Duration, start [][]int) ([][]int, float64, error) {
	b := &milpBuild{pr: pr, L: L, soft: soft, m: solver.NewModel("qlm-plan", solver.Minimize)}
	if err := b.assign(); err != nil {
		return nil, 0, err
	}
	b.horizon()
	for g := range pr.Instances {
		b.queueRows(g)
		b.completionRows(g, b.swapRows(g))
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit+time.Second)
	defer cancel()
	opts := solver.Options{TimeLimit: limit, RelGap: 0.01, Deterministic: true}
	if start != nil {
		opts.Start = b.warmStart(start)
	}
	res, err := solver.Solve(ctx, b.m, opts)
	if err != nil {
		return nil, 0, err
	}
	if !res.HasSolution {
		return nil, 0, fmt.Errorf("no solution: %v", res.Status)
	}
	G := len(pr.Instances)
	q := make([][]int, G)
	pos := make([][]int, G)
	for _, x := range b.xs {
		if res.Values[x.v] > 0.5 {
			q[x.g] = append(q[x.g], x.i)
			pos[x.g] = append(pos[x.g], x.j)
		}
	}
	for g := range q {
		sort.Sort(byPos{q[g], pos[g]})
	}
	return q, res.Objective, nil
}

// assign adds the binaries of every eligible (instance, position) of every group and the
// rows placing each group exactly once.
func (b *milpBuild) assign() error {
	pr, L := b.pr, b.L
	b.at = make([][][]milpVar, len(pr.Instances))
	for g := range b.at {
		b.at[g] = make([][]milpVar, L)
	}
	perGroup := make([][]solver.Term, len(pr.Groups))
	models := map[string]int{}
	for i, gr := range pr.Groups {
		if _, ok := models[gr.Model]; !ok {
			models[gr.Model] = len(b.mlist)
			b.mlist = append(b.mlist, gr.Model)
		}
		for g, c := range gr.Cost {
			if c == nil || (gr.Pinned >= 0 && gr.Pinned != g) {
				continue
			}
			for j := 0; j < L; j++ {
				v := b.m.AddBinary(fmt.Sprintf("x_%d_%d_%d", g, i, j), 0)
				x := milpVar{i, g, j, v}
				b.xs = append(b.xs, x)
				b.at[g][j] = append(b.at[g][j], x)
				perGroup[i] = append(perGroup[i], solver.Term{Var: v, Coef: 1})
			}
		}
		if len(perGroup[i]) == 0 {
			return fmt.Errorf("group %d has no eligible instance", gr.ID)
		}
	}
	for i := range perGroup {
		b.m.AddRow(fmt.Sprintf("assign_%d", i), 1, 1, perGroup[i]...)
	}
	return nil
}

// horizon sets the big-M bound [ours]: the longest any queue can take, plus the most
// negative slack, plus one.
func (b *milpBuild) horizon() {
	pr := b.pr
	M := 0.0
	minSlo := 0.0
	for g := range pr.Instances {
		h := pr.Instances[g].Residual
		for _, gr := range pr.Groups {
			if c := gr.Cost[g]; c != nil {
				h += c.CQ + c.WQ + c.Swap
			}
		}
		M = math.Max(M, h)
	}
	for _, gr := range pr.Groups {
		minSlo = math.Min(minSlo, gr.Deadline-pr.Now)
	}
	b.M = M + (-minSlo + 1)
}

// occ is the occupancy of position j of instance g: the sum of its binaries.
func (b *milpBuild) occ(g, j int) []solver.Term {
	var t []solver.Term
	for _, x := range b.at[g][j] {
		t = append(t, solver.Term{Var: x.v, Coef: 1})
	}
	return t
}

// queueRows: at most one group per position, and no gap before an occupied position.
func (b *milpBuild) queueRows(g int) {
	for j := 0; j < b.L; j++ {
		b.m.AddRow(fmt.Sprintf("occ_%d_%d", g, j), math.Inf(-1), 1, b.occ(g, j)...)
		if j+1 < b.L {
			t := b.occ(g, j+1)
			for _, x := range b.at[g][j] {
				t = append(t, solver.Term{Var: x.v, Coef: -1})
			}
			b.m.AddRow(fmt.Sprintf("gap_%d_%d", g, j), math.Inf(-1), 0, t...)
		}
	}
}

// swapRows adds the swap-in variables s[g,k,j] ≥ y[g,k,j] − y[g,k,j−1] (j ≥ 1; QLM §7 Eq.
// 9–10) and returns the swap-time terms at each position; position 0 pays a swap when its
// model is not the loaded one (QLM §7 Eq. 10).
func (b *milpBuild) swapRows(g int) [][]solver.Term {
	pr := b.pr
	sw := make([][]solver.Term, b.L)
	for j := 0; j < b.L; j++ {
		for k, name := range b.mlist {
			var yk, ykPrev []solver.Term
			var S float64
			for _, x := range b.at[g][j] {
				if pr.Groups[x.i].Model == name {
					yk = append(yk, solver.Term{Var: x.v, Coef: 1})
					S = pr.Groups[x.i].Cost[g].Swap
				}
			}
			if len(yk) == 0 {
				continue
			}
			if j == 0 {
				if name != pr.Instances[g].Loaded {
					for _, t := range yk {
						sw[0] = append(sw[0], solver.Term{Var: t.Var, Coef: S})
					}
				}
				continue
			}
			for _, x := range b.at[g][j-1] {
				if pr.Groups[x.i].Model == name {
					ykPrev = append(ykPrev, solver.Term{Var: x.v, Coef: 1})
				}
			}
			s := b.m.AddContinuous(fmt.Sprintf("s_%d_%d_%d", g, k, j), 0, 1, 0)
			row := []solver.Term{{Var: s, Coef: 1}}
			for _, t := range yk {
				row = append(row, solver.Term{Var: t.Var, Coef: -1})
			}
			row = append(row, ykPrev...)
			b.defs = append(b.defs, milpDef{s, b.m.AddRow(fmt.Sprintf("swap_%d_%d_%d", g, k, j), 0, math.Inf(1), row...)})
			sw[j] = append(sw[j], solver.Term{Var: s, Coef: S})
		}
	}
	return sw
}

// completionRows adds ctE / ctQ at each position of instance g (drains before j, swaps up to
// j, own completion at j): the objective's completion variables, and the chance constraint
// (strict) or the lateness variables (soft).
func (b *milpBuild) completionRows(g int, sw [][]solver.Term) {
	pr, M := b.pr, b.M
	for j := 0; j < b.L; j++ {
		var e, qt []solver.Term
		for jj := 0; jj < j; jj++ {
			for _, x := range b.at[g][jj] {
				c := pr.Groups[x.i].Cost[g]
				e = append(e, solver.Term{Var: x.v, Coef: c.WMean})
				qt = append(qt, solver.Term{Var: x.v, Coef: c.WQ})
			}
		}
		for jj := 0; jj <= j; jj++ {
			e = append(e, sw[jj]...)
			qt = append(qt, sw[jj]...)
		}
		for _, x := range b.at[g][j] {
			c := pr.Groups[x.i].Cost[g]
			slack := pr.Groups[x.i].Deadline - pr.Now
			e = append(e, solver.Term{Var: x.v, Coef: c.CMean + M})
			qt = append(qt, solver.Term{Var: x.v, Coef: c.CQ - slack + M})
		}
		R := pr.Instances[g].Residual
		// c ≥ ctE − M(1 − o)  ⇔  c − (Σ coef·x) ≥ R − M
		cv := b.m.AddContinuous(fmt.Sprintf("c_%d_%d", g, j), 0, math.Inf(1), 1)
		b.defs = append(b.defs, milpDef{cv, b.m.AddRow(fmt.Sprintf("obj_%d_%d", g, j), R-M, math.Inf(1), append([]solver.Term{{Var: cv, Coef: 1}}, neg(e)...)...)})
		if b.soft {
			l := b.m.AddContinuous(fmt.Sprintf("late_%d_%d", g, j), 0, math.Inf(1), 100)
			b.defs = append(b.defs, milpDef{l, b.m.AddRow(fmt.Sprintf("late_%d_%d", g, j), R-M, math.Inf(1), append([]solver.Term{{Var: l, Coef: 1}}, neg(qt)...)...)})
		} else {
			// ctQ − slo ≤ M(1 − o)  ⇔  Σ(coef)·x ≤ M − R
			b.m.AddRow(fmt.Sprintf("chance_%d_%d", g, j), math.Inf(-1), M-R, qt...)
		}
	}
}

// warmStart [ours]: the decomposed plan's x, and each continuous variable at the least value
// its defining row allows.
func (b *milpBuild) warmStart(start [][]int) []float64 {
	val := make([]float64, b.m.NumVars())
	pos := map[[3]int]bool{}
	for g, order := range start {
		for j, i := range order {
			pos[[3]int{g, i, j}] = true
		}
	}
	for _, x := range b.xs {
		if pos[[3]int{x.g, x.i, x.j}] {
			val[x.v] = 1
		}
	}
	for _, d := range b.defs {
		lb, _ := b.m.RowBounds(d.row)
		v := lb
		for _, t := range b.m.RowTerms(d.row) {
			if t.Var != d.v {
				v -= t.Coef * val[t.Var]
			}
		}
		val[d.v] = math.Max(0, v)
	}
	return val
}

func neg(ts []solver.Term) []solver.Term {
	out := make([]solver.Term, len(ts))
	for i, t := range ts {
		out[i] = solver.Term{Var: t.Var, Coef: -t.Coef}
	}
	return out
}

type byPos struct{ q, p []int }

func (b byPos) Len() int           { return len(b.q) }
func (b byPos) Less(i, j int) bool { return b.p[i] < b.p[j] }
func (b byPos) Swap(i, j int) {
	b.q[i], b.q[j] = b.q[j], b.q[i]
	b.p[i], b.p[j] = b.p[j], b.p[i]
}
