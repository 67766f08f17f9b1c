package ppipe

import (
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// stagePlan is a one-model plan whose pipelines have one stage each, on L4 slices of the
// given (vgpu, count) levels, under the given rounding.
func stagePlan(rounding string, levels [][2]int, l4 int) *formats.Plan {
	p := ppipesec.SetPlan(&formats.Plan{
		Cluster: &formats.Cluster{NICGbps: 100, GPUs: []formats.GPUPool{{Type: "L4", Count: l4, PerServer: 2, VGPU: []int{1, 2, 3, 4}}}},
	}, &ppipesec.PPipePlan{Extra: map[string]string{"rounding": rounding}})
	m := ppipesec.PPipeModelPlan{Model: "m", SLO: formats.Duration(100 * time.Millisecond), Weight: 1, ThroughputRPS: 100}
	for _, lv := range levels {
		m.Pipelines = append(m.Pipelines, ppipesec.PPipePipeline{Batch: 1, Partitions: []ppipesec.Partition{
			{FirstBlock: 0, EndBlock: 2, GPU: "L4", VGPU: lv[0], Count: lv[1], StageLatencyUs: 5000, ThroughputRPS: 100},
		}})
	}
	ppipesec.PlanOf(p).Models = []ppipesec.PPipeModelPlan{m}
	return p
}

// TestStageRoundingDeployment: under stage rounding the deployment lays a stage's mixed
// slices on exactly the GPUs ppipesec.PPipePlan.PhysicalGPUs charges, never
// two slices on more than a whole GPU; under pipeline rounding each level keeps its own GPUs.
func TestStageRoundingDeployment(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rounding string
		levels   [][2]int // (vgpu, count) per pipeline
		l4       int
		wantErr  string
	}{
		{"half and two quarters on one GPU", ppipesec.RoundingStage, [][2]int{{2, 1}, {4, 2}}, 1, ""},
		{"half third third third quarter quarter on two", ppipesec.RoundingStage, [][2]int{{2, 1}, {3, 3}, {4, 2}}, 2, ""},
		// Slice i's GPU is its packing's, not i/v: the whole-GPU slice after four
		// quarters is the group's 5th slice on its 2nd GPU (indexing 5/1 overran the group).
		{"four quarters then whole GPUs", ppipesec.RoundingStage, [][2]int{{4, 4}, {1, 2}}, 3, ""},
		{"halves, thirds and whole GPUs", ppipesec.RoundingStage, [][2]int{{2, 3}, {3, 3}, {1, 3}}, 6, ""},
		{"pipeline rounding needs a GPU per level", ppipesec.RoundingPipeline, [][2]int{{2, 1}, {4, 2}}, 1, "needs 2 L4 GPUs"},
		{"stage rounding beyond the cluster", ppipesec.RoundingStage, [][2]int{{1, 2}, {2, 1}}, 2, "needs 3 L4 GPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := stagePlan(tc.rounding, tc.levels, tc.l4)
			_, charged := ppipesec.PlanOf(p).PhysicalGPUs()
			d, err := FromPlan(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromPlan: %v (charged %v)", err, charged)
			}
			share := map[int]float64{}
			for _, w := range d.Topo.Workers {
				share[w.GPU] += 1 / float64(w.VGPU)
			}
			for g, s := range share {
				if s > 1+1e-9 {
					t.Errorf("GPU %d carries %.3f of a GPU", g, s)
				}
			}
			if len(share) != charged["L4"] {
				t.Errorf("slices on %d GPUs, PhysicalGPUs charges %d", len(share), charged["L4"])
			}
		})
	}
}
