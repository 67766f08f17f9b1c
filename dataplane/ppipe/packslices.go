package ppipe

// sliceTwelfths is a whole GPU in twelfths, the least common multiple of the vGPU levels
// 1..4 (formats counts slices the same way), so levels can be summed exactly.
const sliceTwelfths = 12

// PackSlices lays slices of GPUs out on whole GPUs: levels[i] is slice i's vGPU level (it is
// 1/levels[i] of a GPU; levels outside 1..4 count as whole GPUs), and gpus[g] lists the slices
// GPU g holds. It uses exactly ceil(Σ 1/level) GPUs — the count PhysicalGPUs charges a stage
// group under RoundingStage — which is always enough for levels 1..4: whole GPUs, pairs of
// halves, triples of thirds and quadruples of quarters fill GPUs exactly, and what remains
// (at most one half, two thirds and three quarters) packs into ceil of its own sum, found by
// trying every split. First-fit decreasing is not enough: ½ ⅓ ⅓ ⅓ ¼ ¼ fits two GPUs as
// (½ ¼ ¼)(⅓ ⅓ ⅓), first fit takes three.
func PackSlices(levels []int) (gpus [][]int) {
	by := map[int][]int{} // level → slice indices
	for i, v := range levels {
		if v < 1 || v > 4 {
			v = 1
		}
		by[v] = append(by[v], i)
	}
	for _, v := range []int{1, 2, 3, 4} {
		for len(by[v]) >= v {
			gpus = append(gpus, by[v][:v:v])
			by[v] = by[v][v:]
		}
	}
	// The rest: ≤ 1 half, ≤ 2 thirds, ≤ 3 quarters, at most six slices; try every assignment
	// of them to GPUs in order of first use and keep one with the fewest GPUs.
	var rest []int
	for _, v := range []int{2, 3, 4} {
		rest = append(rest, by[v]...)
	}
	if len(rest) == 0 {
		return gpus
	}
	size := func(i int) int { return sliceTwelfths / max(min(levels[i], 4), 1) }
	best := len(rest) + 1
	var bestAssign []int
	assign := make([]int, len(rest))
	var load []int
	var try func(k int)
	try = func(k int) {
		if len(load) >= best {
			return
		}
		if k == len(rest) {
			best, bestAssign = len(load), append([]int(nil), assign...)
			return
		}
		for g := 0; g <= len(load); g++ {
			if g == len(load) {
				load = append(load, 0)
			}
			if load[g]+size(rest[k]) <= sliceTwelfths {
				load[g] += size(rest[k])
				assign[k] = g
				try(k + 1)
				load[g] -= size(rest[k])
			}
			if load[g] == 0 {
				load = load[:g]
				break
			}
		}
	}
	try(0)
	tail := make([][]int, best)
	for k, g := range bestAssign {
		tail[g] = append(tail[g], rest[k])
	}
	return append(gpus, tail...)
}
