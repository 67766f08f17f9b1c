package ppipesys

import (
	"fmt"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
)

// defaultNotes name the defaults a PPipe solve took where the inputs left them unset, one
// line each with its value: without a workload, every profiled model served at weight 1;
// a model with no --slo, no workload slo and no slo_scale planned for PPipe's SLO rule,
// planner.DefaultSLOScale × its batch-1 whole-model latency (the SLO decides each
// pipeline's budget, so which partitions and batches are candidates).
func defaultNotes(in planner.Inputs, s planner.Settings, plan *formats.Plan) []string {
	p := ppipesec.PlanOf(plan)
	if p == nil {
		return nil
	}
	var notes []string
	stated := map[string]ppipesec.ModelWorkload{}
	if in.Workload == nil {
		names := make([]string, len(p.Models))
		for i, m := range p.Models {
			names[i] = m.Model
		}
		notes = append(notes, "no workload: every profiled model served, weight 1: "+strings.Join(names, ", "))
	} else {
		for _, m := range ppipesec.ModelsOf(in.Workload) {
			stated[m.Name] = m
		}
	}
	if s.SLO > 0 {
		return notes
	}
	var slo []string
	for _, m := range p.Models {
		if w := stated[m.Model]; w.SLO == 0 && w.SLOScale == 0 {
			slo = append(slo, fmt.Sprintf("%s %s", m.Model, m.SLO))
		}
	}
	if len(slo) > 0 {
		notes = append(notes, fmt.Sprintf("SLO by default, %g × the batch-1 whole-model latency (no --slo, no slo or slo_scale in the workload): %s",
			planner.DefaultSLOScale, strings.Join(slo, ", ")))
	}
	return notes
}
