package formats

import (
	"math"
	"strings"
	"testing"
)

// TestHeadroomSearchValidated: a stopped search's record says it stopped, why (the time
// limit) and which finite positive loads it tried; a prediction without one (a search that
// finished, or a plan written before it was recorded) is valid.
func TestHeadroomSearchValidated(t *testing.T) {
	stopped := func() *HeadroomSearch {
		return &HeadroomSearch{StoppedEarly: true, Reason: SearchStoppedDeadline, LoadsTried: []float64{0.25, 1, 2}}
	}
	for _, tc := range []struct {
		name string
		edit func(*HeadroomSearch) *HeadroomSearch
		want string
	}{
		{"absent (the search finished)", func(*HeadroomSearch) *HeadroomSearch { return nil }, ""},
		{"stopped at the time limit", func(h *HeadroomSearch) *HeadroomSearch { return h }, ""},
		{"no load but 1's runs", func(h *HeadroomSearch) *HeadroomSearch { h.LoadsTried = nil; return h }, ""},
		{"not stopped", func(h *HeadroomSearch) *HeadroomSearch { h.StoppedEarly = false; return h }, "prediction.headroom_search.stopped_early"},
		{"another reason", func(h *HeadroomSearch) *HeadroomSearch { h.Reason = "bored"; return h }, "prediction.headroom_search.reason"},
		{"a load of 0", func(h *HeadroomSearch) *HeadroomSearch { h.LoadsTried[0] = 0; return h }, "prediction.headroom_search.loads_tried[0]"},
		{"an infinite load", func(h *HeadroomSearch) *HeadroomSearch { h.LoadsTried[2] = math.Inf(1); return h }, "prediction.headroom_search.loads_tried[2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Prediction{Method: PredictionMethodSim, Basis: PredictionBasisStated, DurationS: 20, Rule: VerdictEveryRun, Meets: true,
				Headroom: 1, HeadroomCap: 2, HeadroomSearch: tc.edit(stopped()),
				Apps: []AppPrediction{{Name: "m", Requests: 100, Attainment: 1, Target: 0.99, Meets: true, SustainedRPS: 10}}}
			v := &validator{}
			p.validate(v, "prediction")
			got := ""
			if len(v.errs) > 0 {
				got = v.errs.Error()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("errors %q, want %q", got, tc.want)
			}
		})
	}
}
