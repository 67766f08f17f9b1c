package predict

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestExpectedErrorPhrase: an LLM class's recorded band is one clause of solve's and check's
// lines; an application without one (not an LLM class, or an old plan) adds nothing.
func TestExpectedErrorPhrase(t *testing.T) {
	e := &formats.ExpectedError{E2EMean: formats.ErrorBand{LowerPct: -7.49, UpperPct: 14.27}, TTFTMean: formats.ErrorBand{LowerPct: -9.55, UpperPct: 49.77},
		TPOTMean: formats.ErrorBand{LowerPct: -7.63, UpperPct: 14.24}, Basis: "validation set"}
	for _, tc := range []struct {
		name string
		app  formats.AppPrediction
		want string
	}{
		{"LLM class", formats.AppPrediction{Name: "chat", ExpectedError: e}, "means expected within ttft −10/+50%, tpot −8/+14%, e2e −7/+14%"},
		{"no band recorded", formats.AppPrediction{Name: "m0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExpectedErrorPhrase(tc.app); got != tc.want {
				t.Fatalf("ExpectedErrorPhrase = %q, want %q", got, tc.want)
			}
		})
	}
	// Solve's line carries it beside the binding SLO of the closest LLM class.
	pr := &formats.Prediction{Method: formats.PredictionMethodSim, Basis: formats.PredictionBasisRates, DurationS: 500, Seed: 1, Headroom: 1.5, HeadroomCap: 8, Meets: true,
		Apps: []formats.AppPrediction{{Name: "chat", Attainment: 1, Target: 0.99, Meets: true, ExpectedError: e,
			SLOs: []formats.PredictedSLO{{SLO: "slo", LimitMs: 20000, Percentile: 0.99, Share: 1, Meets: true}}}}}
	if line := Line(pr); !strings.Contains(line, "(p99 needed) (means expected within ttft −10/+50%") {
		t.Fatalf("Line = %q: no expected-error clause after the binding SLO", line)
	}
}
