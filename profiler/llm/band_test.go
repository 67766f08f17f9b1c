package llm

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/profiler/roofline"
)

// TestBandCoverage holds the expected-error bands to what they claim, leave one run out:
// each validation run's real value must lie inside the band built from the other runs for
// at least 80% of the runs, on each of the E2E, TTFT and ITL means, and the bands must not
// be wider than that needs: their median half-width at most maxWidth × the narrowest one
// that holds 80% of the held-out errors (the 80th percentile of their distance from the
// median error). Twice the median absolute error, the width the real runs outside the set
// are judged at, is logged: it fits an 80% band only where the 80th-percentile error is
// under twice the median one (normal errors: 1.9×), and the validation set's are not (the
// step model is within 4% on most runs and 9–18% off on the long-output ones, 48, 66, 67).
// maxWidth is 1.75: the band is a normal interval scaled from the median absolute
// deviation, which holds 80% of normal errors at 1.24× the narrowest band (the t quantile,
// the new-observation term and robustIntervalFactor); the set's errors are flat in their
// bulk (the 80th-percentile deviation is 1.3× the median one, 1.9× for normal errors), which
// widens it to 1.5–1.7× here while it holds 85–92% of the held-out runs.
func TestBandCoverage(t *testing.T) {
	runs := ValidationRuns()
	if len(runs) < 10 {
		t.Fatalf("%d validation runs stored, want the whole set (regenerate: go test ./bench/vllmruns -run TestFitCorrections -update)", len(runs))
	}
	metrics := []struct {
		name string
		err  func(ValidationRun) float64
		band func(Bands) Band
	}{
		{"E2E mean", func(v ValidationRun) float64 { return v.E2E }, func(b Bands) Band { return b.E2E }},
		{"TTFT mean", func(v ValidationRun) float64 { return v.TTFT }, func(b Bands) Band { return b.TTFT }},
		{"ITL mean", func(v ValidationRun) float64 { return v.ITL }, func(b Bands) Band { return b.ITL }},
	}
	// minCover is the share of runs that must lie inside; maxWidth the widest median
	// half-width, in the narrowest 80% band's.
	const minCover, maxWidth = 0.8, 1.75
	for _, m := range metrics {
		var inside int
		var halves, errs []float64
		for i, v := range runs {
			others := slices.Delete(slices.Clone(runs), i, i+1)
			r := Regime{Model: v.Model, GPU: v.GPU, Measured: true, TP: v.TP, MoE: v.MoE, WeightDType: v.WeightDType,
				Version: (*formats.LLMEngine)(nil).Version(), Utilisation: v.Utilisation}
			b := m.band(BandsFor(r, others))
			// The real value relative to the prediction: real = predicted / (1 + e).
			rel := (1/(1+m.err(v)/100) - 1) * 100
			if rel >= b.LowerPct-1e-9 && rel <= b.UpperPct+1e-9 {
				inside++
			} else {
				t.Logf("%s: run %s real at %+.1f%% of the prediction, band %s", m.name, v.ID, rel, b)
			}
			halves = append(halves, (b.UpperPct-b.LowerPct)/2)
			errs = append(errs, math.Abs(m.err(v)))
		}
		cover := float64(inside) / float64(len(runs))
		hw, me := quantile.Percentile(quantile.Sorted(halves), 50), quantile.Percentile(quantile.Sorted(errs), 50)
		signed := make([]float64, len(runs))
		for i, v := range runs {
			signed[i] = m.err(v)
		}
		mid := quantile.Median(signed)
		dev := make([]float64, len(runs))
		for i, e := range signed {
			dev[i] = math.Abs(e - mid)
		}
		need := quantile.Percentile(quantile.Sorted(dev), 100*minCover)
		t.Logf("%s: %d of %d inside (%.0f%%), median half-width %.1f%% (%.2f× the median error %.1f%%; the narrowest 80%% band %.1f%%)",
			m.name, inside, len(runs), cover*100, hw, hw/me, me, need)
		if cover < minCover {
			t.Errorf("%s: %.0f%% of held-out runs inside their band, want ≥ %.0f%%", m.name, cover*100, minCover*100)
		}
		if hw > maxWidth*need {
			t.Errorf("%s: median half-width %.1f%% wider than %g× the narrowest 80%% band %.1f%%", m.name, hw, maxWidth, need)
		}
	}
}

// TestBandsWiden: a regime the validation set does not cover gets a wider band and says
// why, once; a calibrated profile takes its band from its held-out requests.
func TestBandsWiden(t *testing.T) {
	runs := ValidationRuns()
	v15 := (*formats.LLMEngine)(nil).Version()
	base := BandsFor(Regime{Model: "llama-3.1-70b", GPU: "H100", Measured: true, TP: 4, WeightDType: "bf16", Version: v15}, runs)
	if len(base.Warnings) != 0 || len(base.Widened) != 0 {
		t.Errorf("validated regime: warnings %q, widened %q; want none", base.Warnings, base.Widened)
	}
	wider := func(a, b Band) bool { return a.LowerPct < b.LowerPct && a.UpperPct > b.UpperPct }
	for _, tc := range []struct {
		name string
		r    Regime
		warn string
	}{
		{"estimated GPU", Regime{Model: "llama-3.1-70b", GPU: "V100", TP: 4, WeightDType: "bf16", Version: v15}, "estimated GPU"},
		{"unvalidated GPU", Regime{Model: "llama-3.1-70b", GPU: "A100", Measured: true, TP: 4, WeightDType: "bf16", Version: v15}, "GPU not validated"},
		{"older engine", Regime{Model: "llama-3.1-70b", GPU: "H100", Measured: true, TP: 4, WeightDType: "bf16", Version: formats.VLLMVersion{Minor: 6}}, "engine version"},
		{"other MoE", Regime{Model: "mixtral-8x7b", GPU: "H100", Measured: true, TP: 2, MoE: true, WeightDType: "bf16", Version: v15}, "model not validated"},
	} {
		b := BandsFor(tc.r, runs)
		if !wider(b.E2E, base.E2E) && tc.name != "other MoE" {
			t.Errorf("%s: E2E band %s not wider than the validated regime's %s", tc.name, b.E2E, base.E2E)
		}
		if !slices.ContainsFunc(b.Warnings, func(w string) bool { return strings.Contains(w, tc.warn) }) {
			t.Errorf("%s: warnings %q, want one naming %q", tc.name, b.Warnings, tc.warn)
		}
	}
	sat := BandsFor(Regime{Model: "llama-3.1-70b", GPU: "H100", Measured: true, TP: 4, WeightDType: "bf16", Version: v15, Utilisation: 5}, runs)
	if !wider(sat.TTFT, base.TTFT) || !slices.ContainsFunc(sat.Warnings, func(w string) bool { return strings.Contains(w, "near saturation") }) {
		t.Errorf("near saturation: TTFT band %s (validated %s), warnings %q", sat.TTFT, base.TTFT, sat.Warnings)
	}
	cal := &formats.LLMCalibration{Source: "run.json", Requests: 100, FitRequests: 50,
		HeldOut: formats.LLMCalibrationErrors{After: formats.LLMReplayError{TTFTPct: 4, ITLPct: 2, E2EPct: 3}}}
	cb := BandsFor(Regime{GPU: "H100", Measured: true, TP: 1, WeightDType: "bf16", Version: v15, Calibration: cal}, runs)
	if cb.ITL.UpperPct != 2.44*2 || !strings.Contains(cb.Basis, "held-out") {
		t.Errorf("calibrated: ITL %s, basis %q; want ±4.88%% from the held-out requests", cb.ITL, cb.Basis)
	}
}

// TestErrorBand: a prediction 10% high means the real value is 9.1% below it.
func TestErrorBand(t *testing.T) {
	for _, tc := range []struct{ lo, hi, wantLo, wantHi float64 }{
		{-10, 10, -9.09, 11.11},
		{5, 10, -9.09, 0},
		{-20, -5, 0, 25},
	} {
		b := errorBand(tc.lo, tc.hi)
		if math.Abs(b.LowerPct-tc.wantLo) > 0.01 || math.Abs(b.UpperPct-tc.wantHi) > 0.01 {
			t.Errorf("errors [%g, %g]: band [%.2f, %.2f], want [%.2f, %.2f]", tc.lo, tc.hi, b.LowerPct, b.UpperPct, tc.wantLo, tc.wantHi)
		}
	}
}

// TestPredictionBand: the band is a normal prediction interval around the errors' median,
// sized by their scaled MAD; one wild error barely moves it; a bias makes it asymmetric.
func TestPredictionBand(t *testing.T) {
	// m = 0, MAD = 1, σ = 1.4826; t(4 df) at 0.9 = 1.5332; √(1 + 1/5) = 1.0954: h = 2.4900,
	// times robustIntervalFactor.
	h := robustIntervalFactor * 1.4826 * 1.5332 * math.Sqrt(1.2)
	for _, tc := range []struct {
		name string
		xs   []float64
		// loErr, hiErr: the range of errors the band must span.
		loErr, hiErr float64
	}{
		{"symmetric", []float64{-2, -1, 0, 1, 2}, -h, h},
		{"one wild error", []float64{-2, -1, 0, 1, 60}, -h, h},
		{"biased", []float64{8, 9, 10, 11, 12}, 10 - h, 10 + h},
	} {
		got, want := predictionBand(tc.xs, 0.8), errorBand(tc.loErr, tc.hiErr)
		if math.Abs(got.LowerPct-want.LowerPct) > 0.01 || math.Abs(got.UpperPct-want.UpperPct) > 0.01 {
			t.Errorf("%s: band [%.3f, %.3f], want [%.3f, %.3f]", tc.name, got.LowerPct, got.UpperPct, want.LowerPct, want.UpperPct)
		}
	}
	if b := predictionBand([]float64{8, 9, 10, 11, 12}, 0.8); -b.LowerPct <= b.UpperPct {
		t.Errorf("a prediction 10%% high: band %s, want more room below than above", b)
	}
}

// TestPredictionBandCalibrated: for runs like the validation set's (13 errors, normal about
// a bias), the band built from 12 holds the 13th about as often as it claims — the claim is
// for the runs to come, not fitted to the stored 13 (seeded). It measures 76%, not 80%: the
// median and MAD are noisier than the mean and standard deviation (which reach 80% here but
// let the set's two long-output runs set TTFT's width, 26%). A band widened to 80% for
// normal errors (×1.12) would break the width target on TTFT: for unbiased normal errors
// twice the median |error| is 1.35σ, which holds 82% with σ known and less with σ taken
// from a dozen runs. The floor guards the band from narrowing further.
func TestPredictionBandCalibrated(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 20000
	var inside int
	for range trials {
		xs := make([]float64, 12)
		for i := range xs {
			xs[i] = 3 + 6*rng.NormFloat64()
		}
		b := predictionBand(xs, 0.8)
		e := 3 + 6*rng.NormFloat64()
		if rel := (1/(1+e/100) - 1) * 100; rel >= b.LowerPct && rel <= b.UpperPct {
			inside++
		}
	}
	if got := float64(inside) / trials; got < 0.78 || got > 0.82 {
		t.Errorf("a new run inside the band %.1f%% of the time, want about 80%%", got*100)
	}
}

// TestRegimeOfUserModel: a profile's routed_experts tells a mixture-of-experts model's
// regime; a profile written without it still names a catalogue model, or a model a user
// brought by its folder whose engine id tells it.
func TestRegimeOfUserModel(t *testing.T) {
	for _, tc := range []struct {
		model, hf string
		experts   int
		moe       bool
	}{
		{"llama-4-scout", "", 0, true},
		{"scout-fp8", "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", 0, true},
		{"my-llama", "meta-llama/Llama-3.1-8B-Instruct", 0, false},
		{"my-model", "", 0, false},
		{"olmoe", "", 64, true}, // a config.json of a model the catalogue does not hold
		{"scout-fp8", "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", 16, true},
	} {
		if got := RegimeOf(&formats.LLMProfile{Model: tc.model, HFModel: tc.hf, GPU: "H100", GPUCount: 2, RoutedExperts: tc.experts}).MoE; got != tc.moe {
			t.Errorf("%s (%q, %d experts): MoE %v, want %v", tc.model, tc.hf, tc.experts, got, tc.moe)
		}
	}
}

// TestProfileRoutedExperts: a profile of a mixture-of-experts config the catalogue does not
// name carries its routed experts, so its band is the mixture-of-experts regime's; a dense
// model's carries none.
func TestProfileRoutedExperts(t *testing.T) {
	for _, tc := range []struct {
		config  string
		experts int
	}{
		{"testdata/configs-moe/Mixtral-8x7B/config.json", 8},
		{"testdata/configs/Qwen3-14B/config.json", 0},
	} {
		m, err := ReadConfigFile(tc.config)
		if err != nil {
			t.Fatal(err)
		}
		m.Name = "user-model" // named by its folder, as --llm-config names it: no catalogue entry
		p, err := EstimateModel(m, "H100", 2, roofline.LinkAuto, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.RoutedExperts != tc.experts {
			t.Errorf("%s: routed_experts %d, want %d", tc.config, p.RoutedExperts, tc.experts)
		}
		if got := RegimeOf(p).MoE; got != (tc.experts > 0) {
			t.Errorf("%s: regime MoE %v, want %v", tc.config, got, tc.experts > 0)
		}
	}
}
