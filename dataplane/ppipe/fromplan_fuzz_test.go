package ppipe

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// ppipeSections decodes PPipe plans and workloads (the registry's, for this system alone).
var ppipeSections = &formats.SectionSet{Systems: []string{"ppipe"}, Plan: []formats.Section{ppipesec.PlanSection},
	Workload: []formats.Section{ppipesec.WorkloadSection}}

// FuzzFromPlan: a plan file, however malformed past the decoder's structural checks, is an
// error from FromPlan, never a panic: deploy, simulate, serve and the prediction all build
// their deployment with it. Seeds are the golden PPipe, NP and DART-r plans and a
// stage-rounded plan of mixed vGPU levels.
func FuzzFromPlan(f *testing.F) {
	seeds, _ := filepath.Glob("../../testdata/golden/demo-*.json")
	seeds = append(seeds, "../../testdata/golden/ppipe-2models.json", "testdata/stage-rounded-plan.json")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := formats.Parse("plan.json", data, ppipeSections)
		if err != nil {
			return
		}
		p, ok := doc.(*formats.Plan)
		if !ok || ppipesec.PlanOf(p) == nil {
			return
		}
		d, err := FromPlan(p)
		if err == nil && d == nil {
			t.Fatal("FromPlan returned neither a deployment nor an error")
		}
	})
}
