package ppipesec

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
