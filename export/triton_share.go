package export

import (
	"fmt"
	"sort"
	"strings"
)

// twelfths counts GPU slices in twelfths so that 1/1..1/4 slices sum exactly (as the plan's
// rounding does, ppipesec.PPipePlan.PhysicalGPUs).
const twelfths = 12

// tritonLayout pins every unit's instances to GPU ids as a Triton server sees them: within
// one server (a pod of a Deployment, deploy.go), 0..k-1 for its k GPUs — never fleet-wide ids,
// which a server of per_server GPUs does not have (ecosystem.md §7: a listed id the server
// lacks fails the load). A unit of its own (PoolGroups) runs on Servers pods of the same
// shape: its GPUs split into pods of the largest size that divides them and fits a server
// (Options.PerServer; unknown = one server). Units with the same Share (and GPU type) share
// the GPUs their plan rounds their slices up to together (PPipe's stage rounding: the pools
// of every pipeline at one stage index share GPUs): their slices are packed onto exactly
// that many GPUs of one server (first-fit-decreasing, else an exact search), or the export
// is refused naming the rounding. It returns each unit's groups, its pod count and a line
// saying where they go, keyed by the unit's name.
func tritonLayout(gs []Group, perServer map[string]int) (map[string][]TritonGroup, map[string]int, map[string]string, error) {
	groups, servers, where := map[string][]TritonGroup{}, map[string]int{}, map[string]string{}
	shared := map[string][]*Unit{}
	for gi := range gs {
		for ui := range gs[gi].Units {
			u := &gs[gi].Units[ui]
			if u.Share == "" {
				continue
			}
			k := u.Share + "\x00" + u.Placement.GPU
			shared[k] = append(shared[k], u)
		}
	}
	done := map[string]bool{}
	for gi := range gs {
		for ui := range gs[gi].Units {
			u := &gs[gi].Units[ui]
			pl := u.Placement
			ps := perServer[pl.GPU]
			if u.Share == "" {
				gr, n, pods, err := podGroups(pl, ps)
				if err != nil {
					return nil, nil, nil, err
				}
				groups[u.Name], servers[u.Name] = gr, pods
				where[u.Name] = fmt.Sprintf("%s: %d instance(s), at most %d per %s GPU (1/%d slices), on %d Triton server(s) of %d GPU(s) each, GPU ids 0..%d within each server.",
					pl.Key, pl.Count, max(pl.VGPU, 1), pl.GPU, max(pl.VGPU, 1), pods, n/pods, n/pods-1)
				continue
			}
			k := u.Share + "\x00" + pl.GPU
			if done[k] {
				continue
			}
			done[k] = true
			n, err := packShared(shared[k], 0, groups, where)
			if err != nil {
				return nil, nil, nil, err
			}
			if ps > 0 && n > ps {
				return nil, nil, nil, fmt.Errorf("triton: the plan's stage rounding (ppipe.extra.rounding: stage) puts the pools of %s on %d shared %s GPU(s), more than a server's %d (per_server): Triton shares GPUs only within one server; solve with --rounding pipeline to export this plan",
					u.Share, n, pl.GPU, ps)
			}
			for _, su := range shared[k] {
				servers[su.Name] = 1
			}
		}
	}
	return groups, servers, where, nil
}

// podGroups lays a pool onto identical servers: its PoolGroups GPUs (full GPUs of vgpu
// instances, the remainder on one more) split into pods of the largest size that divides
// them and fits a server of perServer GPUs (0: unbounded). It returns one pod's groups (ids
// from 0), the pool's GPUs and the pod count. A remainder GPU makes the pods unequal, so a
// pool with one is a single pod, refused when that exceeds a server.
func podGroups(pl Placement, perServer int) ([]TritonGroup, int, int, error) {
	all, n := PoolGroups(pl.Count, pl.VGPU, 0)
	if n == 0 {
		return all, 0, 1, nil
	}
	if perServer <= 0 || n <= perServer {
		return all, n, 1, nil
	}
	v := max(pl.VGPU, 1)
	if pl.Count%v != 0 {
		return nil, 0, 0, fmt.Errorf("triton: %s: %d instance(s) of 1/%d %s GPU take %d GPUs, more than a server's %d (per_server), and the last GPU holds fewer slices than the others, so no set of identical servers runs exactly %d: give the pool a multiple of %d slices",
			pl.Key, pl.Count, v, pl.GPU, n, perServer, pl.Count, v)
	}
	g := perServer
	for n%g != 0 {
		g--
	}
	gs, _ := PoolGroups(g*v, v, 0)
	return gs, n, n / g, nil
}

// packShared lays the slices of units (one share group of one GPU type) onto
// ⌈Σ slices/VGPU⌉ GPUs from first on, the count the plan's rounding gives; it returns that
// count.
func packShared(units []*Unit, first int, groups map[string][]TritonGroup, where map[string]string) (int, error) {
	type slice struct{ unit, size int }
	var slices []slice
	total := 0
	for i, u := range units {
		v := u.Placement.VGPU
		if v < 1 || v > 4 {
			v = 1 // as the plan's rounding counts it
		}
		size := twelfths / v
		for range max(u.Placement.Count, 0) {
			slices = append(slices, slice{i, size})
			total += size
		}
	}
	bins := (total + twelfths - 1) / twelfths
	sort.SliceStable(slices, func(a, b int) bool { return slices[a].size > slices[b].size })
	free := make([]int, bins)
	for i := range free {
		free[i] = twelfths
	}
	on := make([][]int, len(units)) // unit → instances per bin
	for i := range on {
		on[i] = make([]int, bins)
	}
	sizes := make([]int, len(slices))
	for i, s := range slices {
		sizes[i] = s.size
	}
	binOf, ok := firstFit(sizes, free)
	if !ok {
		binOf, ok = packExact(sizes, bins)
	}
	if !ok {
		keys := make([]string, len(units))
		for i, u := range units {
			keys[i] = fmt.Sprintf("%s (%d × 1/%d)", u.Placement.Key, u.Placement.Count, max(u.Placement.VGPU, 1))
		}
		return 0, fmt.Errorf("triton: the plan's stage rounding (ppipe.extra.rounding: stage) counts %d %s GPU(s) for the pools %s, but their slices do not pack onto them: solve with --rounding pipeline to export this plan",
			bins, units[0].Placement.GPU, strings.Join(keys, ", "))
	}
	for i, s := range slices {
		on[s.unit][binOf[i]]++
	}
	for i, u := range units {
		var gs []TritonGroup
		for b, c := range on[i] {
			if c == 0 {
				continue
			}
			if n := len(gs); n > 0 && gs[n-1].Count == c {
				gs[n-1].GPUs = append(gs[n-1].GPUs, first+b)
				continue
			}
			gs = append(gs, TritonGroup{Count: c, GPUs: []int{first + b}})
		}
		groups[u.Name] = gs
		pl := u.Placement
		where[u.Name] = fmt.Sprintf("%s: %d instance(s) of 1/%d %s GPU, on the server's %s GPUs %d..%d, shared with the other pools of its stage (the plan's stage rounding; GPU indices count each type's GPUs in export order).",
			pl.Key, pl.Count, max(pl.VGPU, 1), pl.GPU, pl.GPU, first, first+bins-1)
	}
	return bins, nil
}

// firstFit puts each slice (largest first) on the first GPU with room: the bin of each, and
// whether all fit.
func firstFit(sizes []int, free []int) ([]int, bool) {
	binOf := make([]int, len(sizes))
	for i, size := range sizes {
		b := 0
		for b < len(free) && free[b] < size {
			b++
		}
		if b == len(free) {
			return nil, false
		}
		free[b] -= size
		binOf[i] = b
	}
	return binOf, true
}

// patterns are the maximal ways to fill one GPU with 1/2, 1/3 and 1/4 slices (counts of 6, 4
// and 3 twelfths).
var patterns = [][3]int{{2, 0, 0}, {1, 1, 0}, {1, 0, 2}, {0, 3, 0}, {0, 2, 1}, {0, 1, 2}, {0, 0, 4}}

// maxStates bounds packExact's search (a refusal beyond it, never a long export).
const maxStates = 200000

// packExact packs slices of the given sizes (twelfths, largest first) onto bins GPUs when
// first-fit does not: whole GPUs each alone, then a depth-first search over the patterns of
// the rest (memoised on the counts left). It returns each slice's bin. Every mix of up to 11
// slices of each size packs onto ⌈Σ sizes / 12⌉ GPUs (checked exhaustively), so the refusal
// is a guard (the search bound), not an expected outcome.
func packExact(sizes []int, bins int) ([]int, bool) {
	var n [4]int // whole, halves, thirds, quarters
	class := map[int]int{12: 0, 6: 1, 4: 2, 3: 3}
	for _, s := range sizes {
		n[class[s]]++
	}
	if n[0] > bins {
		return nil, false
	}
	type state struct{ a, b, c, left int }
	seen := map[state]bool{}
	var chosen []int
	var dfs func(a, b, c, left int) bool
	dfs = func(a, b, c, left int) bool {
		if a+b+c == 0 {
			return true
		}
		st := state{a, b, c, left}
		if left == 0 || seen[st] || len(seen) > maxStates {
			return false
		}
		seen[st] = true
		for pi, p := range patterns {
			if (p[0] > 0 && a > 0) || (p[1] > 0 && b > 0) || (p[2] > 0 && c > 0) {
				chosen = append(chosen, pi)
				if dfs(max(a-p[0], 0), max(b-p[1], 0), max(c-p[2], 0), left-1) {
					return true
				}
				chosen = chosen[:len(chosen)-1]
			}
		}
		return false
	}
	if !dfs(n[1], n[2], n[3], bins-n[0]) {
		return nil, false
	}
	// room[class][bin]: the slices of each class each bin still takes.
	room := make([][]int, 4)
	for k := range room {
		room[k] = make([]int, bins)
	}
	for b := range n[0] {
		room[0][b] = 1
	}
	for j, pi := range chosen {
		for k := range 3 {
			room[k+1][n[0]+j] = patterns[pi][k]
		}
	}
	binOf := make([]int, len(sizes))
	for i, s := range sizes {
		k := class[s]
		b := 0
		for room[k][b] == 0 {
			b++
		}
		room[k][b]--
		binOf[i] = b
	}
	return binOf, true
}
