package export

import (
	"fmt"
	"sort"
	"strings"
)

// twelfths counts GPU slices in twelfths so that 1/1..1/4 slices sum exactly (as the plan's
// rounding does, formats.PPipePlan.PhysicalGPUs).
const twelfths = 12

// tritonLayout pins every unit's instances to GPU indices, numbered per GPU type in the order
// of the units. A unit of its own takes whole GPUs (PoolGroups). Units with the same Share
// (and GPU type) share the GPUs their plan rounds their slices up to together (PPipe's stage
// rounding: the pools of every pipeline at one stage index share GPUs): their slices are
// packed first-fit-decreasing onto exactly that many GPUs, or the export is refused, so
// Triton never starts the pools on more GPUs than the plan counts. It returns each unit's
// groups and a line saying where they go, keyed by the unit's name.
func tritonLayout(gs []Group) (map[string][]TritonGroup, map[string]string, error) {
	groups, where := map[string][]TritonGroup{}, map[string]string{}
	next := map[string]int{}
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
			if u.Share == "" {
				first := next[pl.GPU]
				groups[u.Name], next[pl.GPU] = PoolGroups(pl.Count, pl.VGPU, first)
				where[u.Name] = fmt.Sprintf("%s: %d instance(s), at most %d per %s GPU (1/%d slices), on the server's %s GPUs %d..%d (GPU indices count each type's GPUs in export order).",
					pl.Key, pl.Count, max(pl.VGPU, 1), pl.GPU, max(pl.VGPU, 1), pl.GPU, first, next[pl.GPU]-1)
				continue
			}
			k := u.Share + "\x00" + pl.GPU
			if done[k] {
				continue
			}
			done[k] = true
			n, err := packShared(shared[k], next[pl.GPU], groups, where)
			if err != nil {
				return nil, nil, err
			}
			next[pl.GPU] += n
		}
	}
	return groups, where, nil
}

// packShared lays the slices of units (one share group of one GPU type) onto
// ⌈Σ slices/VGPU⌉ GPUs from first on, the count the plan's rounding gives; it returns that
// count.
func packShared(units []*Unit, first int, groups map[string][]TritonGroup, where map[string]string) (int, error) {
	type slice struct{ unit, size int }
	var slices []slice
	total := 0
	for i, u := range units {
		size := twelfths / min(max(u.Placement.VGPU, 1), 4)
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
	for _, s := range slices {
		b := 0
		for b < bins && free[b] < s.size {
			b++
		}
		if b == bins {
			keys := make([]string, len(units))
			for i, u := range units {
				keys[i] = fmt.Sprintf("%s (%d × 1/%d)", u.Placement.Key, u.Placement.Count, max(u.Placement.VGPU, 1))
			}
			return 0, fmt.Errorf("triton: the plan's stage rounding (ppipe.extra.rounding: stage) counts %d %s GPU(s) for the pools %s, but their slices do not pack onto them: solve with --rounding pipeline to export this plan",
				bins, units[0].Placement.GPU, strings.Join(keys, ", "))
		}
		free[b] -= s.size
		on[s.unit][b]++
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
