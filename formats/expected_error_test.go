package formats

import (
	"math"
	"strings"
	"testing"
)

// TestExpectedErrorValidated: an LLM class's recorded band is finite, brackets zero on each
// mean and says where it comes from; a prediction without one (an old plan) is valid.
func TestExpectedErrorValidated(t *testing.T) {
	band := func() *ExpectedError {
		return &ExpectedError{E2EMean: ErrorBand{-7.5, 14.3}, TTFTMean: ErrorBand{-9.6, 49.8}, TPOTMean: ErrorBand{-7.6, 14.2}, Basis: "validation set"}
	}
	for _, tc := range []struct {
		name string
		edit func(*ExpectedError) *ExpectedError
		want string
	}{
		{"absent (a plan written before it was recorded)", func(*ExpectedError) *ExpectedError { return nil }, ""},
		{"valid", func(e *ExpectedError) *ExpectedError { return e }, ""},
		{"zero-width band", func(e *ExpectedError) *ExpectedError { e.TPOTMean = ErrorBand{}; return e }, ""},
		{"lower above zero", func(e *ExpectedError) *ExpectedError { e.E2EMean.LowerPct = 3; return e }, "prediction.apps[0].expected_error.e2e_mean.lower_pct"},
		{"upper below zero", func(e *ExpectedError) *ExpectedError { e.TTFTMean.UpperPct = -1; return e }, "prediction.apps[0].expected_error.ttft_mean.upper_pct"},
		{"NaN", func(e *ExpectedError) *ExpectedError { e.TPOTMean.LowerPct = math.NaN(); return e }, "prediction.apps[0].expected_error.tpot_mean.lower_pct"},
		{"infinite", func(e *ExpectedError) *ExpectedError { e.TPOTMean.UpperPct = math.Inf(1); return e }, "prediction.apps[0].expected_error.tpot_mean.upper_pct"},
		{"no basis", func(e *ExpectedError) *ExpectedError { e.Basis = " "; return e }, "prediction.apps[0].expected_error.basis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Prediction{Method: PredictionMethodSim, Basis: PredictionBasisRates, DurationS: 20, Rule: VerdictEveryRun, Meets: true,
				Apps: []AppPrediction{{Name: "chat", Requests: 100, Attainment: 1, Target: 0.99, Meets: true, ExpectedError: tc.edit(band())}}}
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

// TestExpectedErrorWidest: a class served on several GPUs is expected within the widest
// band on each mean (the lowest lower, the highest upper), with both bases, each once.
func TestExpectedErrorWidest(t *testing.T) {
	a := ExpectedError{E2EMean: ErrorBand{-5, 10}, TTFTMean: ErrorBand{-20, 30}, TPOTMean: ErrorBand{-4, 8}, Basis: "A100 runs"}
	b := ExpectedError{E2EMean: ErrorBand{-8, 6}, TTFTMean: ErrorBand{-10, 50}, TPOTMean: ErrorBand{-3, 9}, Basis: "roofline"}
	want := ExpectedError{E2EMean: ErrorBand{-8, 10}, TTFTMean: ErrorBand{-20, 50}, TPOTMean: ErrorBand{-4, 9}, Basis: "A100 runs; roofline"}
	if got := a.Widest(b); got != want {
		t.Fatalf("Widest = %+v, want %+v", got, want)
	}
	if got := a.Widest(b).Widest(b).Widest(a); got != want {
		t.Fatalf("Widest repeated = %+v, want %+v (each basis once)", got, want)
	}
	if got, want := a.E2EMean.String(), "−5/+10%"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}

// TestLatencyErrorValidated: any other application's latency band follows the same rules.
func TestLatencyErrorValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		band *LatencyError
		want string
	}{
		{"absent", nil, ""},
		{"valid", &LatencyError{P50: ErrorBand{-2, 3}, P99: ErrorBand{-5, 9}, Basis: "seeds"}, ""},
		{"upper below zero", &LatencyError{P50: ErrorBand{-2, 3}, P99: ErrorBand{-5, -1}, Basis: "seeds"}, "prediction.apps[0].latency_error.p99.upper_pct"},
		{"NaN", &LatencyError{P50: ErrorBand{math.NaN(), 3}, Basis: "seeds"}, "prediction.apps[0].latency_error.p50.lower_pct"},
		{"no basis", &LatencyError{}, "prediction.apps[0].latency_error.basis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Prediction{Method: PredictionMethodSim, Basis: PredictionBasisRates, DurationS: 20, Rule: VerdictEveryRun, Meets: true,
				Apps: []AppPrediction{{Name: "m0", Requests: 100, Attainment: 1, Target: 0.99, Meets: true, LatencyError: tc.band}}}
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
