package qlm

import (
	"math"
	"math/rand/v2"
	"sort"
)

// GroupItem is one waiting request as Alg. 1 of the paper (QLM §4) sees it: its model,
// its deadline (SLO) and its token statistics, plus its arrival for the split order.
type GroupItem struct {
	Model    string
	Deadline float64 // seconds
	InTokens float64
	OutMean  float64
	Arrival  float64
}

// KMeansGroups is Alg. 1 (QLM §4): k-means over (SLO, input tokens, expected output
// tokens) on log scales, separately per model (a group holds one model, QLM §4), then every cluster
// larger than cap(model) = δ·avg_batch is split in half, repeatedly, earliest arrivals in
// the first half. k per model is the larger of the number of distinct deadlines' SLO bands
// it needs and ⌈n / cap⌉ (the paper leaves k open). Initial centres are k-means++
// draws from a PCG seeded by seed, so the grouping is deterministic. Groups are returned as
// item indexes in arrival order, the groups ordered by model (first appearance), then by
// earliest deadline.
func KMeansGroups(items []GroupItem, capFor func(model string) int, seed uint64) [][]int {
	var models []string
	by := map[string][]int{}
	for i, it := range items {
		if _, ok := by[it.Model]; !ok {
			models = append(models, it.Model)
		}
		by[it.Model] = append(by[it.Model], i)
	}
	var out [][]int
	for mi, m := range models {
		idx := by[m]
		c := max(1, capFor(m))
		k := min(len(idx), max(1, (len(idx)+c-1)/c))
		// One cluster per SLO band at least: interactive and batch requests do not share a
		// group when both wait (the paper's groups are per SLO class).
		k = max(k, min(len(idx), sloBands(items, idx)))
		cl := kmeans(items, idx, k, seed+uint64(mi)*0x9e3779b97f4a7c15)
		var groups [][]int
		for _, g := range cl {
			groups = append(groups, splitCap(items, g, c)...)
		}
		sort.SliceStable(groups, func(a, b int) bool {
			return minDeadline(items, groups[a]) < minDeadline(items, groups[b])
		})
		out = append(out, groups...)
	}
	return out
}

// sloBands counts distinct deadlines' orders of magnitude among idx (ten-fold SLO bands).
func sloBands(items []GroupItem, idx []int) int {
	lo := math.Inf(1)
	for _, i := range idx {
		lo = math.Min(lo, items[i].Deadline)
	}
	seen := map[int]bool{}
	for _, i := range idx {
		seen[int(math.Log10(1+items[i].Deadline-lo))] = true
	}
	return len(seen)
}

func minDeadline(items []GroupItem, g []int) float64 {
	d := math.Inf(1)
	for _, i := range g {
		d = math.Min(d, items[i].Deadline)
	}
	return d
}

// splitCap halves a cluster above c members, repeatedly, earliest arrivals first (Alg. 1).
func splitCap(items []GroupItem, g []int, c int) [][]int {
	g = append([]int(nil), g...)
	sort.SliceStable(g, func(a, b int) bool {
		if items[g[a]].Arrival != items[g[b]].Arrival {
			return items[g[a]].Arrival < items[g[b]].Arrival
		}
		return g[a] < g[b]
	})
	if len(g) <= c {
		return [][]int{g}
	}
	h := (len(g) + 1) / 2
	return append(splitCap(items, g[:h], c), splitCap(items, g[h:], c)...)
}

// kmeans clusters idx into k non-empty clusters on z-scored features by Lloyd iterations
// from k-means++ seeds.
func kmeans(items []GroupItem, idx []int, k int, seed uint64) [][]int {
	n := len(idx)
	if k <= 1 || n <= 1 {
		return [][]int{append([]int(nil), idx...)}
	}
	// Features on log scales (QLM §4, Alg. 1: SLO and token statistics): slack to the
	// earliest deadline, input tokens and expected output tokens. Log scales make a ten-fold
	// SLO or length difference count alike and keep small jitter from splitting a class.
	const dim = 3
	lo := math.Inf(1)
	for _, i := range idx {
		lo = math.Min(lo, items[i].Deadline)
	}
	x := make([][dim]float64, n)
	for j, i := range idx {
		it := &items[i]
		x[j] = [dim]float64{math.Log1p(it.Deadline - lo), math.Log1p(math.Max(0, it.InTokens)), math.Log1p(math.Max(0, it.OutMean))}
	}
	dist := func(a, b [dim]float64) float64 {
		s := 0.0
		for d := range a {
			s += (a[d] - b[d]) * (a[d] - b[d])
		}
		return s
	}
	rng := rand.New(rand.NewPCG(seed, 0x6b6d65616e73))
	cent := [][dim]float64{x[rng.IntN(n)]}
	dmin := make([]float64, n)
	for len(cent) < k {
		tot := 0.0
		for j := range x {
			dmin[j] = math.Inf(1)
			for _, c := range cent {
				dmin[j] = math.Min(dmin[j], dist(x[j], c))
			}
			tot += dmin[j]
		}
		if tot == 0 {
			break // fewer distinct points than k
		}
		u, pick := rng.Float64()*tot, n-1
		for j := range x {
			if u -= dmin[j]; u < 0 {
				pick = j
				break
			}
		}
		cent = append(cent, x[pick])
	}
	asg := make([]int, n)
	for it := 0; it < 50; it++ {
		changed := it == 0
		for j := range x {
			best, bd := 0, math.Inf(1)
			for c := range cent {
				if d := dist(x[j], cent[c]); d < bd {
					best, bd = c, d
				}
			}
			if asg[j] != best {
				changed = true
				asg[j] = best
			}
		}
		if !changed {
			break
		}
		sum := make([][dim]float64, len(cent))
		cnt := make([]int, len(cent))
		for j := range x {
			for d := 0; d < dim; d++ {
				sum[asg[j]][d] += x[j][d]
			}
			cnt[asg[j]]++
		}
		for c := range cent {
			if cnt[c] > 0 {
				for d := 0; d < dim; d++ {
					cent[c][d] = sum[c][d] / float64(cnt[c])
				}
			}
		}
	}
	cl := make([][]int, len(cent))
	for j, c := range asg {
		cl[c] = append(cl[c], idx[j])
	}
	var out [][]int
	for _, c := range cl {
		if len(c) > 0 {
			out = append(out, c)
		}
	}
	return out
}
