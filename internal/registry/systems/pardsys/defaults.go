package pardsys

import (
	"fmt"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/planner/pard"
)

// defaultNotes name the defaults a PARD provisioning took that decide its result, one line
// each with its value: the provisioning rule's SLO fraction (every module's batch is chosen
// within it, PARD §4.2) and, where a module runs at it, the largest batch tried.
func defaultNotes(f pard.Flags, plan *formats.Plan) []string {
	p := pardsec.PlanOf(plan)
	if p == nil {
		return nil
	}
	var notes []string
	if f.SLOFraction == pard.DefaultSLOFraction {
		notes = append(notes, fmt.Sprintf("--slo-fraction %g (default): every pipeline provisioned so that Σ 2·d(b) ≤ %g × its SLO along each path",
			f.SLOFraction, f.SLOFraction))
	}
	if f.MaxBatch == pard.DefaultMaxBatch {
		var at []string
		for _, a := range p.Apps {
			for _, m := range a.Modules {
				if m.Batch >= f.MaxBatch {
					at = append(at, a.Name+"/"+m.Name)
				}
			}
		}
		if len(at) > 0 {
			notes = append(notes, fmt.Sprintf("--max-batch %d (default) bounds the batch of %s", f.MaxBatch, strings.Join(at, ", ")))
		}
	}
	return notes
}
