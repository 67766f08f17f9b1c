package qlmsys

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
)

// defaultNotes name the defaults a QLM plan's placement or cost solve took where the inputs
// left them unset, one line each with its value: the percentile its classes' SLOs are
// judged at (the prediction's verdict and any re-solve at a rate margin follow it), and the
// engine budgets each instance's profile leaves to vLLM's defaults for its GPU (they size
// what an instance serves). The deployment search names its own (llmdeploy.Result.Defaults).
func defaultNotes(in planner.Inputs, plan *formats.Plan) []string {
	notes := llmspec.DefaultPercentileNotes(in.Workload)
	q := qlmsec.PlanOf(plan)
	if q == nil {
		return notes
	}
	var seen []string
	for _, inst := range q.Instances {
		pr := instanceProfile(in.Profiles, inst)
		if pr == nil {
			continue
		}
		m := llm.NewModel(pr)
		var d []string
		for _, s := range []struct {
			name string
			v    int
		}{{llm.SetMaxSeqs, m.MaxSeqs}, {llm.SetMaxBatched, m.MaxBatched}} {
			if m.SourceOf(s.name) == llm.SourceDefault {
				d = append(d, fmt.Sprintf("%s %d", s.name, s.v))
			}
		}
		if len(d) == 0 {
			continue
		}
		key := fmt.Sprintf("%s on %d×%s", pr.Model, max(pr.GPUCount, 1), pr.GPU)
		if slices.Contains(seen, key) {
			continue
		}
		seen = append(seen, key)
		notes = append(notes, fmt.Sprintf("engine budgets at vLLM's defaults for %s (the profile sets none): %s: %s",
			pr.GPU, key, strings.Join(d, ", ")))
	}
	return notes
}

// instanceProfile is the LLM profile an instance runs: its model on its GPU type and count.
func instanceProfile(profs []*formats.Profile, inst qlmsec.QLMInstance) *formats.LLMProfile {
	for _, p := range profs {
		for i := range p.LLMs {
			if l := &p.LLMs[i]; l.Model == inst.Model && l.GPU == inst.GPU && max(l.GPUCount, 1) == max(inst.GPUCount, 1) {
				return l
			}
		}
	}
	return nil
}
