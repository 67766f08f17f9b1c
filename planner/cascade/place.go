package cascade

import (
	"maps"
	"math"
	"slices"
)

// fullReplication places every model of use on every GPU; a w-GPU model gets one replica
// per aligned group of w GPUs inside each server (never across servers, §4.4).
func (t *Task) fullReplication(hw Hardware, use []bool) []Replica {
	var pl []Replica
	per := hw.PerServer
	if per <= 0 {
		per = hw.N
	}
	for m := range t.Models {
		if !use[m] {
			continue
		}
		w := t.Models[m].Width()
		if w == 1 {
			for d := 0; d < hw.N; d++ {
				pl = append(pl, Replica{Model: m, GPUs: []int{d}})
			}
			continue
		}
		for s := 0; s*per < hw.N; s++ {
			lo, hi := s*per, min((s+1)*per, hw.N)
			for g := lo; g+w <= hi; g += w {
				gs := make([]int, w)
				for k := range gs {
					gs[k] = g + k
				}
				pl = append(pl, Replica{Model: m, GPUs: gs})
			}
		}
	}
	return pl
}

// memUse returns the bytes replica r occupies on its k-th GPU.
func (t *Task) memUse(r Replica, k int) int64 {
	p := t.Models[r.Model].Parts
	if k < len(p) {
		return p[k]
	}
	return p[len(p)-1]
}

// planErr is an error flowing backwards through the co-optimization loop (§4.1).
type planErr struct {
	kind  string // "throughput", "latency", "oom"
	rng   int
	model int
}

// place runs greedy pruning (§4.4) from full replication of the models the gears use,
// keeping at least minCount[m] replicas of m and every range's LP feasible (u* ≤ 1 at the
// optimistic per-sample time: §4.4's batch-1 times would reject loads that only SP4's
// batching can carry). It returns the placement or an OOM error on the
// range that blocked the pruning.
func (p *planning) place(assign []int, minCount map[int]int) ([]Replica, *planErr) {
	t := p.t
	use := make([]bool, len(t.Models))
	for _, a := range assign {
		for _, m := range p.P[a].Models {
			use[m] = true
		}
	}
	pl := t.fullReplication(p.hw, use)
	for m := range t.Models {
		if !use[m] {
			continue
		}
		cnt := 0
		for _, r := range pl {
			if r.Model == m {
				cnt++
			}
		}
		if cnt == 0 {
			// a multi-GPU model wider than a server
			return nil, &planErr{kind: "oom", rng: len(assign) - 1, model: m}
		}
	}
	// rangesOf[m]: per distinct cascade using m, its highest range QPS.
	type cq struct {
		a int
		q float64
		r int
	}
	blocked := -1
	for {
		used := make([]int64, p.hw.N)
		for _, r := range pl {
			for k, d := range r.GPUs {
				used[d] += t.memUse(r, k)
			}
		}
		over := make([]int64, p.hw.N)
		anyOver := false
		for d := range used {
			if used[d] > p.hw.Mem {
				over[d] = used[d] - p.hw.Mem
				anyOver = true
			}
		}
		if !anyOver {
			return pl, nil
		}
		count := map[int]int{}
		for _, r := range pl {
			count[r.Model]++
		}
		best, bestUtil, bestU := -1, math.Inf(-1), 0.0
		for ri, r := range pl {
			if count[r.Model]-1 < max(1, minCount[r.Model]) {
				continue
			}
			var mem float64
			for k, d := range r.GPUs {
				if over[d] > 0 {
					mem += math.Min(1, float64(t.memUse(r, k))/float64(over[d]))
				}
			}
			if mem == 0 {
				continue
			}
			rest := append(append([]Replica(nil), pl[:ri]...), pl[ri+1:]...)
			restKey := placementKey(rest)
			// u_max over the ranges whose cascade uses model(ρ): per distinct cascade, the
			// top range's QPS times u* at unit load.
			seen := map[int]cq{}
			for ri2, a := range assign {
				if !contains(p.P[a].Models, r.Model) {
					continue
				}
				if x, ok := seen[a]; !ok || p.q[ri2] > x.q {
					seen[a] = cq{a, p.q[ri2], ri2}
				}
			}
			keys := slices.Sorted(maps.Keys(seen))
			umax := 0.0
			feasible := true
			for _, a := range keys {
				x := seen[a]
				c := &p.P[a]
				lb := p.lb.solve(c, rest, restKey, p.optTimes(c), false)
				u := lb.u * x.q
				if !(u <= 1) {
					feasible = false
					if x.r > blocked {
						blocked = x.r
					}
					break
				}
				umax = math.Max(umax, u)
			}
			if !feasible {
				continue
			}
			util := math.Inf(1)
			if umax > 0 {
				util = mem / umax
			}
			if util > bestUtil || (util == bestUtil && umax < bestU) {
				best, bestUtil, bestU = ri, util, umax
			}
		}
		if best < 0 {
			r := blocked
			if r < 0 {
				r = len(assign) - 1
			}
			return nil, &planErr{kind: "oom", rng: r, model: -1}
		}
		pl = append(pl[:best], pl[best+1:]...)
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// optTimes returns the optimistic per-sample times (min_b lat(b)/b) of c's models (see place).
func (p *planning) optTimes(c *Cascade) []float64 {
	out := make([]float64, len(c.Models))
	for i, m := range c.Models {
		out[i] = p.t.Models[m].RtOpt
	}
	return out
}

// batchTimes returns the per-sample times at the batch sizes SP4 chose: b1 for stage 1,
// max(1, Reach_i·b1) later (§4.5).
func (p *planning) batchTimes(c *Cascade, b1 int) []float64 {
	out := make([]float64, len(c.Models))
	for i, m := range c.Models {
		b := max(1, int(math.Round(c.Reach[i]*float64(b1))))
		out[i] = p.t.Models[m].PerSample(b)
	}
	return out
}
