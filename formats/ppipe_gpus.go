package formats

// GPU rounding modes of a PPipe plan, recorded in ppipe.extra.rounding.
const (
	// RoundingPipeline (the default) rounds up per pool: ceil(count/vgpu) whole GPUs for each
	// partition of each pipeline.
	RoundingPipeline = "pipeline"
	// RoundingStage sums the slices of every pool at one (model, stage index, GPU type) as
	// fractions of a GPU (1/vgpu each, levels may mix) and rounds up once per group, as
	// PPipe's code does: pools of different pipelines at the same stage share GPUs.
	RoundingStage = "stage"
)

// Roundings lists the rounding modes.
var Roundings = []string{RoundingPipeline, RoundingStage}

// Rounding is the plan's GPU rounding mode: ppipe.extra.rounding, else RoundingPipeline.
func (pp *PPipePlan) Rounding() string {
	if r := pp.Extra["rounding"]; r != "" {
		return r
	}
	return RoundingPipeline
}

// lcmLevels is the least common multiple of the vGPU levels 1..4: slices are counted in
// twelfths of a GPU so that levels can be summed exactly.
const lcmLevels = 12

// PhysicalGPUs counts the whole GPUs the plan's pipelines occupy per GPU type under its
// rounding mode (Rounding). This one rule is what the solver budgets, what Validate and the
// verifier check against the cluster, and what a deployment must lay out. Levels outside
// 1..4 count as whole GPUs and negative counts as none, so it is defined on any plan. The
// types come back in the order the plan first uses them.
func (pp *PPipePlan) PhysicalGPUs() (types []string, used map[string]int) {
	return physicalGPUs(pp, pp.Rounding())
}

// PhysicalGPUsWith is PhysicalGPUs under an explicit rounding mode.
func (pp *PPipePlan) PhysicalGPUsWith(rounding string) (types []string, used map[string]int) {
	return physicalGPUs(pp, rounding)
}

func physicalGPUs(pp *PPipePlan, rounding string) ([]string, map[string]int) {
	type key struct {
		model, pipeline, stage int
		gpu                    string
	}
	twelfths := map[key]int{}
	var order []key
	for mi := range pp.Models {
		for pi := range pp.Models[mi].Pipelines {
			for d, pt := range pp.Models[mi].Pipelines[pi].Partitions {
				k := key{mi, pi, d, pt.GPU}
				if rounding == RoundingStage {
					k.pipeline = 0 // one group for every pipeline's pool at this stage index
				}
				if _, ok := twelfths[k]; !ok {
					order = append(order, k)
				}
				v := pt.VGPU
				if v < 1 || v > 4 {
					v = 1
				}
				twelfths[k] += max(pt.Count, 0) * (lcmLevels / v)
			}
		}
	}
	var types []string
	used := map[string]int{}
	for _, k := range order {
		if _, ok := used[k.gpu]; !ok {
			types = append(types, k.gpu)
		}
		used[k.gpu] += (twelfths[k] + lcmLevels - 1) / lcmLevels
	}
	return types, used
}

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
	size := func(i int) int { return lcmLevels / max(min(levels[i], 4), 1) }
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
			if load[g]+size(rest[k]) <= lcmLevels {
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
