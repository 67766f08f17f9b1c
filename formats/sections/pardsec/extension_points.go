package pardsec

import (
	"github.com/plan-dev/plan/formats"
)

// rated names an item of the section and its rate field for formats.RatedList.
var rated = formats.RatedList[Pipeline]{Rated: func(x *Pipeline) (string, *float64) { return x.Name, &x.RateRPS }}

// Targets lists the workload's pipelines with their rates (formats.RateTargeter).
func (workloadSection) Targets(w *formats.Workload) []formats.RateTarget {
	return rated.Targets(PipelinesOf(w))
}

// WithRates sets in w a copy of its pipelines with each rate rate(name, rate)
// (formats.RateTargeter).
func (workloadSection) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	SetPipelines(w, rated.WithRates(PipelinesOf(w), rate))
}

// GPUsUsed counts the workers of every app's modules per GPU type, one GPU each (PARD §4
// provisions a module as workers on one GPU type; formats.GPUCounter).
func (s planSection) GPUsUsed(p *formats.Plan) map[string]int {
	return formats.CountGPUs(s.SectionOf, p, func(pd *PARDPlan, used map[string]int) {
		for _, a := range pd.Apps {
			for _, m := range a.Modules {
				used[m.GPU] += m.Workers
			}
		}
	})
}
