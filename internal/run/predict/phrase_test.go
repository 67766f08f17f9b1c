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

// TestStoppedSearchPhrases: a prediction whose headroom search the time limit stopped says
// so in solve's line and its note, and never reads as a complete search ("misses at every
// load tried", a rate of 0 to size by).
func TestStoppedSearchPhrases(t *testing.T) {
	for _, tc := range []struct {
		name     string
		headroom float64
		tried    []float64
		want     []string
	}{
		{"load 1 alone", 0, []float64{1}, []string{"the headroom search stopped at the time limit before it established a load the plan holds", "(it simulated loads 1×)"}},
		{"part way", 2, []float64{1, 2}, []string{"holds its targets at least up to 2× its rates (the headroom search stopped at the time limit)", "(it simulated loads 1×, 2×)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := &formats.Prediction{Method: formats.PredictionMethodSim, Basis: formats.PredictionBasisRates, DurationS: 20, Seed: 1, Headroom: tc.headroom, HeadroomCap: 8, Meets: true,
				HeadroomSearch: &formats.HeadroomSearch{StoppedEarly: true, Reason: formats.SearchStoppedDeadline, LoadsTried: tc.tried},
				Apps:           []formats.AppPrediction{{Name: "m0", Attainment: 1, Target: 0.99, Meets: true, RateRPS: 10, P99Ms: 12}}}
			got := Line(pr) + "\n" + SearchNote(pr)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, not := range []string{"misses at every load tried", " 0 req/s"} {
				if strings.Contains(got, not) {
					t.Errorf("%q in:\n%s", not, got)
				}
			}
			if !strings.Contains(SearchNote(pr), "stopped early at the time limit") {
				t.Errorf("note %q: does not name the time limit", SearchNote(pr))
			}
		})
	}
}

// TestPlannedRatePhrases: a throughput plan's lines call the rate it was simulated at its
// planned rate and the sustained one the rate to size by, never the "stated" rate (a PPipe
// plan states the sustained rate as its throughput_rps); a plan sized to the workload's
// rates names those.
func TestPlannedRatePhrases(t *testing.T) {
	for _, tc := range []struct {
		name      string
		basis     string
		meets     bool
		want, not []string
	}{
		{"throughput plan past what it serves", formats.PredictionBasisStated, false,
			[]string{"its planned rates are past what it serves within its targets", "holds its targets up to 0.5× its planned rates", "size by m0 50 req/s (planned 100)"},
			[]string{"stated"}},
		{"plan sized to rates", formats.PredictionBasisRates, true, []string{"meets its targets", "holds its targets up to 1.5× its rates"},
			[]string{"planned", "size by"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := 0.5
			if tc.meets {
				h = 1.5
			}
			pr := &formats.Prediction{Method: formats.PredictionMethodSim, Basis: tc.basis, DurationS: 20, Seed: 1, Headroom: h, HeadroomCap: 2, Meets: tc.meets,
				Apps: []formats.AppPrediction{{Name: "m0", Attainment: 0.9, Target: 0.99, Meets: tc.meets, RateRPS: 100, SustainedRPS: 50, P99Ms: 12}}}
			if tc.meets {
				pr.Apps[0].Attainment, pr.Apps[0].SustainedRPS = 1, 150
			}
			got := Line(pr)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q in:\n%s", n, got)
				}
			}
			if want := map[string]string{formats.PredictionBasisStated: "its planned rate", formats.PredictionBasisRates: "workload rates"}[tc.basis]; BasisPhrase(pr) != want {
				t.Errorf("BasisPhrase = %q, want %q", BasisPhrase(pr), want)
			}
		})
	}
}
