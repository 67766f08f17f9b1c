package cascade

// The accuracy-SLO branch of the co-optimization loop (CascadeServe §4.3).

import (
	"fmt"
	"math"
	"slices"

	"github.com/plan-dev/plan/planner"
)

// accuracyLoop is the accuracy-SLO branch (CascadeServe §4.3): start at the cheapest cascade,
// upgrade the least-loaded range until A ≥ A*; throughput shortfalls are soft (the range is
// marked overloaded), so they never force accuracy below A*; then an improvement pass moves
// overloaded ranges to cheaper cascades, re-upgrading the least-loaded others, when weighted
// latency improves.
func (p *planning) accuracyLoop() ([]Gear, []Replica, error) {
	n := len(p.q)
	A := p.opt.Accuracy
	if p.P[0].Acc < A-tieTol {
		return nil, nil, fmt.Errorf("%w: accuracy %.4g: the most accurate cascade reaches %.4f (%s)", planner.ErrInfeasible, A, p.P[0].Acc, p.t.Names(&p.P[0]))
	}
	assign := make([]int, n)
	for r := range assign {
		assign[r] = len(p.P) - 1
	}
	p.raise(assign, -1)
	gears, pl, cost := p.evalAcc(assign)
	for pass := 0; pass < 2*n; pass++ {
		worst := -1
		for r := n - 1; r >= 0; r-- {
			if gears[r].Overload && assign[r] < len(p.P)-1 {
				worst = r
				break
			}
		}
		if worst < 0 {
			break
		}
		try := slices.Clone(assign)
		try[worst]++
		p.raise(try, worst)
		g2, pl2, c2 := p.evalAcc(try)
		if c2 >= cost {
			break
		}
		assign, gears, pl, cost = try, g2, pl2, c2
	}
	return gears, pl, nil
}

// raise upgrades the least-loaded ranges (never skip) one step at a time until the plan's
// weighted accuracy reaches A*.
func (p *planning) raise(assign []int, skip int) {
	acc := func() float64 {
		var a float64
		for r, x := range assign {
			a += p.w[r] * p.P[x].Acc
		}
		return a
	}
	for acc() < p.opt.Accuracy-tieTol {
		best, bl := -1, math.Inf(1)
		for r, x := range assign {
			if r == skip || x == 0 {
				continue
			}
			if l := p.q[r] * p.P[x].Work; l < bl {
				best, bl = r, l
			}
		}
		if best < 0 {
			return
		}
		assign[best]--
	}
}

// evalAcc places and simulates an accuracy-SLO assignment; the cost is the weighted p-th
// latency with a large penalty per overloaded gear.
func (p *planning) evalAcc(assign []int) ([]Gear, []Replica, float64) {
	minCount := map[int]int{}
	pl, perr := p.place(assign, minCount)
	if perr != nil {
		// soft: keep full replication of what fits, pruning without the LP guard
		pl = p.t.fullReplication(p.hw, onlyModelSet(len(p.t.Models), usedModels(p.P, assign)))
		pl = p.pruneMemOnly(pl)
	}
	plKey := placementKey(pl)
	gears := make([]Gear, len(assign))
	var cost float64
	for r := range assign {
		g, _ := p.gear(assign[r], r, pl, plKey)
		gears[r] = g
		l := g.Sim.PLat
		if g.Overload || math.IsInf(l, 1) {
			l = 1e6
		}
		cost += p.w[r] * l
	}
	return gears, pl, cost
}

func usedModels(P []Cascade, assign []int) []int {
	var out []int
	for _, a := range assign {
		for _, m := range P[a].Models {
			if !contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// pruneMemOnly drops replicas (largest first, keeping one per model) until memory fits.
func (p *planning) pruneMemOnly(pl []Replica) []Replica {
	for {
		used := make([]int64, p.hw.N)
		for _, r := range pl {
			for k, d := range r.GPUs {
				used[d] += p.t.memUse(r, k)
			}
		}
		count := map[int]int{}
		for _, r := range pl {
			count[r.Model]++
		}
		drop := -1
		for i := len(pl) - 1; i >= 0; i-- {
			r := pl[i]
			over := false
			for _, d := range r.GPUs {
				over = over || used[d] > p.hw.Mem
			}
			if over && count[r.Model] > 1 {
				drop = i
				break
			}
		}
		if drop < 0 {
			return pl
		}
		pl = append(pl[:drop], pl[drop+1:]...)
	}
}
