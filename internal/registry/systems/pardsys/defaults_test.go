package pardsys

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/planner/pard"
)

// TestDefaultNotes: the provisioning rule's fraction is named when it is the default, and
// the batch bound only where a module runs at it.
func TestDefaultNotes(t *testing.T) {
	plan := func(batches ...int) *formats.Plan {
		p := &formats.Plan{}
		app := pardsec.PARDApp{Name: "video"}
		for i, b := range batches {
			app.Modules = append(app.Modules, pardsec.ModulePlan{Name: string(rune('a' + i)), Batch: b})
		}
		return pardsec.SetPlan(p, &pardsec.PARDPlan{Apps: []pardsec.PARDApp{app}})
	}
	def := pard.DefaultFlags()
	set := def
	set.SLOFraction, set.MaxBatch = 0.7, 16
	cases := []struct {
		name string
		f    pard.Flags
		plan *formats.Plan
		want []string
	}{
		{"defaults, none at the bound", def, plan(4, 8), []string{"--slo-fraction 0.8 (default)"}},
		{"defaults, one at the bound", def, plan(32, 8), []string{"--slo-fraction 0.8 (default)", "--max-batch 32 (default) bounds the batch of video/a"}},
		{"both given", set, plan(16), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := defaultNotes(c.f, c.plan)
			if len(got) != len(c.want) {
				t.Fatalf("notes %q, want %d starting %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("note %d %q, want it to start %q", i, got[i], w)
				}
			}
		})
	}
}
