package ppipesys

import (
	"slices"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
)

// TestDefaultNotes: a PPipe solve names the defaults it took, with their values: the
// implicit workload, and each model's SLO from PPipe's rule where neither --slo, the
// workload's slo nor its slo_scale set it; nothing where the inputs set them.
func TestDefaultNotes(t *testing.T) {
	plan := ppipesec.SetPlan(&formats.Plan{}, &ppipesec.PPipePlan{Models: []ppipesec.PPipeModelPlan{
		{Model: "a", SLO: formats.Duration(14 * time.Millisecond)}, {Model: "b", SLO: formats.Duration(30 * time.Millisecond)}}})
	w := func(ms ...ppipesec.ModelWorkload) *formats.Workload {
		return ppipesec.SetModels(&formats.Workload{}, ms)
	}
	const rule = "SLO by default, 5 × the batch-1 whole-model latency (no --slo, no slo or slo_scale in the workload): "
	for _, tc := range []struct {
		name string
		in   planner.Inputs
		slo  time.Duration
		want []string
	}{
		{"no workload", planner.Inputs{}, 0, []string{"no workload: every profiled model served, weight 1: a, b", rule + "a 14ms, b 30ms"}},
		{"no workload, --slo", planner.Inputs{}, time.Second, []string{"no workload: every profiled model served, weight 1: a, b"}},
		{"one slo stated", planner.Inputs{Workload: w(ppipesec.ModelWorkload{Name: "a", SLO: formats.Duration(time.Second)}, ppipesec.ModelWorkload{Name: "b"})}, 0, []string{rule + "b 30ms"}},
		{"slo_scale stated", planner.Inputs{Workload: w(ppipesec.ModelWorkload{Name: "a", SLO: formats.Duration(time.Second)}, ppipesec.ModelWorkload{Name: "b", SLOScale: 3})}, 0, nil},
	} {
		if got := defaultNotes(tc.in, planner.Settings{SLO: tc.slo}, plan); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
