package qlm

import (
	"math"
	"sort"
)

// The decomposed plan generator of QLM §7 [ours]: at paper scale (100 GPUs, N ≈ 400 request
// groups) the MILP has ~320 k binaries and cannot be solved in the re-plan budget, so the
// program is split into (1) assignment of groups to virtual queues and (2) the order of each
// queue. Both steps evaluate candidates with the same L1-linearised chance constraint and
// objective (13) as the MILP (Violations / Expected), so a decomposed plan is always a
// feasible point of the MILP; it is also the MILP's warm start ("warm start from the
// current VQs"). Every step is bounded by a deterministic work budget (candidate-evaluation
// group steps), never by the wall clock, so the same problem always yields the same plan.

// defaultBudget bounds the group steps the per-queue local search may evaluate in one
// re-plan (about a millisecond of work per million steps on one core).
const defaultBudget = 4_000_000

// enumerateMax is the queue length up to which the per-queue order is found exactly by
// branch and bound (enumeration when N_g ≤ 8 [ours]).
const enumerateMax = 8

// score is the lexicographic quality of a plan, each term weighted by the groups' requests
// (PlanGroup.Weight): fewer predicted violations first, then the
// smaller total predicted lateness (the soft program's ℓ [ours]: a group predicted late at
// the conservative L1 quantile may still make it, so it must not be pushed back for a
// smaller objective), then the smaller sum of expected completions (objective 13).
type score struct {
	viol float64
	late float64
	obj  float64
}

func (a score) less(b score) bool {
	if a.viol != b.viol {
		return a.viol < b.viol
	}
	if math.Abs(a.late-b.late) > absTol {
		return a.late < b.late
	}
	return a.obj < b.obj-absTol
}

// queueScore evaluates one virtual queue's order: its violations at the L1 quantile and its
// share of objective (13). steps counts the group steps spent (the work budget).
func queueScore(pr *PlanProblem, g int, order []int, steps *int) score {
	*steps += len(order)
	tq := pr.Now + pr.Instances[g].Residual
	te := pr.Instances[g].Residual
	prev := pr.Instances[g].Loaded
	var s score
	for _, i := range order {
		gr := &pr.Groups[i]
		c := gr.Cost[g]
		if gr.Model != prev {
			tq += c.Swap
			te += c.Swap
			prev = gr.Model
		}
		w := gr.w()
		if l := tq + c.CQ - gr.Deadline; l > 0 {
			s.viol += w
			s.late += w * l
		}
		s.obj += w * (te + c.CMean)
		tq += c.WQ
		te += c.WMean
	}
	return s
}

// decompose returns the decomposed plan: greedy assignment in deadline order, then each
// queue ordered exactly (≤ enumerateMax groups) or by bounded local search.
func decompose(pr *PlanProblem, budget int) [][]int {
	if budget <= 0 {
		budget = defaultBudget
	}
	q := assign(pr)
	steps := 0
	// Half the budget orders the queues, the rest improves the assignment; each share is
	// split evenly over the queues so one long queue cannot starve the others.
	per := budget / 2 / max(1, len(q))
	for g := range q {
		q[g] = orderQueue(pr, g, q[g], &steps, steps+per)
	}
	relocate(pr, q, &steps, budget)
	return q
}

// orderQueue is step (2) for one queue: exact up to enumerateMax groups, else local search
// within the step limit lim.
func orderQueue(pr *PlanProblem, g int, groups []int, steps *int, lim int) []int {
	if len(groups) <= enumerateMax {
		return orderExact(pr, g, groups, steps)
	}
	return orderLocal(pr, g, groups, steps, lim)
}

// relocate improves the assignment of step (1): a group moves from its queue to another
// eligible one, inserted at the best of the candidate positions, when that lowers the sum of
// the two queues' scores; both queues are then reordered. Passes repeat until none improves
// or the step budget lim is spent. Moves are tried in a fixed order, so the result is
// deterministic.
func relocate(pr *PlanProblem, q [][]int, steps *int, lim int) {
	G := len(q)
	cur := make([]score, G)
	for g := range q {
		cur[g] = queueScore(pr, g, q[g], steps)
	}
	var from, to []int
	for improved := true; improved && *steps < lim; {
		improved = false
		for a := 0; a < G && *steps < lim; a++ {
			for k := 0; k < len(q[a]) && *steps < lim; k++ {
				i := q[a][k]
				gr := &pr.Groups[i]
				if gr.Pinned >= 0 {
					continue
				}
				from = append(append(from[:0], q[a][:k]...), q[a][k+1:]...)
				fs := queueScore(pr, a, from, steps)
				bestB, bestP, bestGain := -1, 0, score{}
				for b := 0; b < G; b++ {
					if b == a || gr.Cost[b] == nil {
						continue
					}
					lo, hi := 0, len(q[b])
					if hi > 2*localWindow {
						// Long queue: positions around the group's deadline rank.
						r := sort.Search(len(q[b]), func(x int) bool { return pr.Groups[q[b][x]].Deadline > gr.Deadline })
						lo, hi = max(0, r-localWindow/2), min(len(q[b]), r+localWindow/2)
					}
					for p := lo; p <= hi; p++ {
						to = append(append(append(to[:0], q[b][:p]...), i), q[b][p:]...)
						ts := queueScore(pr, b, to, steps)
						gain := score{viol: fs.viol + ts.viol - cur[a].viol - cur[b].viol, late: fs.late + ts.late - cur[a].late - cur[b].late, obj: fs.obj + ts.obj - cur[a].obj - cur[b].obj}
						if gain.less(score{}) && (bestB < 0 || gain.less(bestGain)) {
							bestB, bestP, bestGain = b, p, gain
						}
					}
				}
				if bestB < 0 {
					continue
				}
				b := bestB
				q[b] = append(append(append([]int(nil), q[b][:bestP]...), i), q[b][bestP:]...)
				q[a] = append([]int(nil), from...)
				q[a] = orderQueue(pr, a, q[a], steps, *steps+len(q[a])*len(q[a])*localWindow)
				q[b] = orderQueue(pr, b, q[b], steps, *steps+len(q[b])*len(q[b])*localWindow)
				cur[a] = queueScore(pr, a, q[a], steps)
				cur[b] = queueScore(pr, b, q[b], steps)
				improved = true
				k--
			}
		}
	}
}

// assign is step (1): groups in earliest-deadline order, each to the eligible instance where
// it would meet its deadline at the L1 quantile with the least expected completion, or, when
// none can, to the one where it completes earliest (least-loaded placement [ours]). Appending
// to a queue whose tail runs the same model costs no swap, so same-model groups gather.
func assign(pr *PlanProblem) [][]int {
	G := len(pr.Instances)
	idx := edfOrder(pr)
	tq := make([]float64, G)
	te := make([]float64, G)
	last := make([]string, G)
	for g, in := range pr.Instances {
		tq[g] = pr.Now + in.Residual
		te[g] = in.Residual
		last[g] = in.Loaded
	}
	q := make([][]int, G)
	for _, i := range idx {
		gr := &pr.Groups[i]
		best, bestOK, bestE, bestQ := -1, false, math.Inf(1), math.Inf(1)
		for g, c := range gr.Cost {
			if c == nil || (gr.Pinned >= 0 && gr.Pinned != g) {
				continue
			}
			sw := 0.0
			if gr.Model != last[g] {
				sw = c.Swap
			}
			cq := tq[g] + sw + c.CQ
			ce := te[g] + sw + c.CMean
			ok := cq <= gr.Deadline
			if best < 0 || (ok && !bestOK) || (ok == bestOK && ok && ce < bestE) || (ok == bestOK && !ok && cq < bestQ) {
				best, bestOK, bestE, bestQ = g, ok, ce, cq
			}
		}
		if best < 0 {
			continue // no eligible instance: SolvePlan rejects such problems first
		}
		c := gr.Cost[best]
		if gr.Model != last[best] {
			tq[best] += c.Swap
			te[best] += c.Swap
			last[best] = gr.Model
		}
		tq[best] += c.WQ
		te[best] += c.WMean
		q[best] = append(q[best], i)
	}
	return q
}

// orderExact finds the best order of a short queue by depth-first branch and bound over its
// permutations; the bound is the partial score plus every remaining group's completion at
// the current time (no remaining group can start earlier). Ties keep the first order found
// in lexicographic index order, so the result is deterministic.
func orderExact(pr *PlanProblem, g int, groups []int, steps *int) []int {
	n := len(groups)
	if n <= 1 {
		return groups
	}
	sorted := append([]int(nil), groups...)
	sortEDF(pr, sorted)
	best := append([]int(nil), sorted...)
	bestS := queueScore(pr, g, best, steps)
	cur := make([]int, 0, n)
	used := make([]bool, n)
	var rec func(tq, te float64, prev string, s score)
	rec = func(tq, te float64, prev string, s score) {
		*steps++
		if len(cur) == n {
			if s.less(bestS) {
				bestS = s
				copy(best, cur)
			}
			return
		}
		// Bound: remaining groups complete no earlier than now + their own completion.
		lb := s.obj
		for k, i := range sorted {
			if !used[k] {
				lb += pr.Groups[i].w() * (te + pr.Groups[i].Cost[g].CMean)
			}
		}
		// viol and late only grow along a path; obj is bounded by lb.
		if s.viol > bestS.viol || (s.viol == bestS.viol && (s.late > bestS.late+absTol || (math.Abs(s.late-bestS.late) <= absTol && lb >= bestS.obj-absTol))) {
			return
		}
		for k, i := range sorted {
			if used[k] {
				continue
			}
			gr := &pr.Groups[i]
			c := gr.Cost[g]
			nq, ne := tq, te
			if gr.Model != prev {
				nq += c.Swap
				ne += c.Swap
			}
			ns := s
			w := gr.w()
			if l := nq + c.CQ - gr.Deadline; l > 0 {
				ns.viol += w
				ns.late += w * l
			}
			ns.obj += w * (ne + c.CMean)
			used[k] = true
			cur = append(cur, i)
			rec(nq+c.WQ, ne+c.WMean, gr.Model, ns)
			cur = cur[:len(cur)-1]
			used[k] = false
		}
	}
	rec(pr.Now+pr.Instances[g].Residual, pr.Instances[g].Residual, pr.Instances[g].Loaded, score{})
	return best
}

// localWindow is how far an insertion move may carry a group in the per-queue local search.
const localWindow = 8

// orderLocal orders a long queue: earliest deadline first, then first-improvement insertion
// moves (a group moved up to localWindow positions; moving a group next to another of its
// model saves a swap) until no move improves the score or the step budget lim is spent.
func orderLocal(pr *PlanProblem, g int, groups []int, steps *int, lim int) []int {
	cur := append([]int(nil), groups...)
	sortEDF(pr, cur)
	s := queueScore(pr, g, cur, steps)
	cand := make([]int, len(cur))
	for improved := true; improved && *steps < lim; {
		improved = false
		for from := 0; from < len(cur) && *steps < lim; from++ {
			for to := max(0, from-localWindow); to <= min(len(cur)-1, from+localWindow); to++ {
				if to == from {
					continue
				}
				move(cand, cur, from, to)
				if cs := queueScore(pr, g, cand, steps); cs.less(s) {
					s = cs
					cur, cand = cand, cur
					improved = true
					break
				}
			}
		}
	}
	return cur
}

// move writes src with the element at from moved to position to into dst.
func move(dst, src []int, from, to int) {
	x := src[from]
	switch {
	case from < to:
		copy(dst[:from], src[:from])
		copy(dst[from:to], src[from+1:to+1])
		dst[to] = x
		copy(dst[to+1:], src[to+1:])
	default:
		copy(dst[:to], src[:to])
		dst[to] = x
		copy(dst[to+1:from+1], src[to:from])
		copy(dst[from+1:], src[from+1:])
	}
}
