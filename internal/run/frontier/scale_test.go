package frontier

import (
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestScaleRates: every system's rate in the copy is multiplied by the factor, the original
// workload keeps its own, and a section the workload lacks stays absent.
func TestScaleRates(t *testing.T) {
	w := &formats.Workload{}
	ppipesec.SetModels(w, []ppipesec.ModelWorkload{{Name: "m", RateRPS: 2}})
	pardsec.SetPipelines(w, []pardsec.Pipeline{{Name: "p", RateRPS: 3}})
	llmspec.SetClasses(w, []llmspec.LLMClass{{Name: "c", RateRPS: 4}})
	cascadesec.SetCascades(w, []cascadesec.Cascade{{Name: "s", QPSMax: 5}})
	dyorcsec.SetWorkflows(w, &dyorcsec.Workflows{Apps: map[string]dyorcsec.App{"a": {RateRPS: 6}}})
	c := scaleRates(w, 1.5)
	for _, tc := range []struct {
		name      string
		got, orig float64
		want      float64
	}{
		{"ppipe", ppipesec.ModelsOf(c)[0].RateRPS, ppipesec.ModelsOf(w)[0].RateRPS, 3},
		{"pard", pardsec.PipelinesOf(c)[0].RateRPS, pardsec.PipelinesOf(w)[0].RateRPS, 4.5},
		{"qlm", llmspec.ClassesOf(c)[0].RateRPS, llmspec.ClassesOf(w)[0].RateRPS, 6},
		{"cascade", cascadesec.CascadesOf(c)[0].QPSMax, cascadesec.CascadesOf(w)[0].QPSMax, 7.5},
		{"dyorc", dyorcsec.WorkflowsOf(c).Apps["a"].RateRPS, dyorcsec.WorkflowsOf(w).Apps["a"].RateRPS, 9},
	} {
		if tc.got != tc.want || tc.orig != tc.want/1.5 {
			t.Errorf("%s: scaled %g (want %g), original %g (want %g)", tc.name, tc.got, tc.want, tc.orig, tc.want/1.5)
		}
	}
	only := scaleRates(ppipesec.SetModels(&formats.Workload{}, []ppipesec.ModelWorkload{{Name: "m", RateRPS: 1}}), 2)
	if len(only.Sections) != 1 || pardsec.PipelinesOf(only) != nil {
		t.Errorf("sections of a ppipe-only workload after scaling: %v", only.Sections)
	}
}
