package formats

import "fmt"

// LLMCalibration records that an LLM profile's iteration curves were corrected to fit a
// measured run of the real engine (`plan profile --calibrate`): the run, the three factors
// applied and how well one engine replaying the run's requests matched the measured timings
// before and after (LLM engine digest §5: fidelity is judged by replaying the real
// deployment's requests through one instance with its engine settings and profile). The
// profile's iteration curves are already the corrected ones: the engine reads them and
// nothing here.
type LLMCalibration struct {
	// Source is the measured run's file (its base name) and Format its kind ("vllm-bench":
	// the JSON of `vllm bench serve --save-result --save-detailed`, or of `plan load`).
	Source string `json:"source"`
	Format string `json:"format"`
	// Requests is the run's successful requests replayed; the first FitRequests of them (by
	// index) were fitted, the rest held out.
	Requests    int `json:"requests"`
	FitRequests int `json:"fit_requests"`
	// PrefillScale multiplies every point of iteration.prefill; DecodeScale every point of
	// iteration.decode and decode_us_per_context_token; StepOverheadUs is then added to
	// every point of both curves (a fixed cost per engine step: scheduling, sampling, output
	// processing).
	PrefillScale   float64 `json:"prefill_scale"`
	DecodeScale    float64 `json:"decode_scale"`
	StepOverheadUs float64 `json:"step_overhead_us"`
	// Fit and HeldOut are the replay's errors on the fitted and the held-out requests.
	Fit     LLMCalibrationErrors `json:"fit"`
	HeldOut LLMCalibrationErrors `json:"held_out"`
	// HeldAtOne names the factors the runs did not constrain, held at 1 (prefill_scale:
	// prompts too short to tell the prefill scale from the overhead; decode_scale: too few
	// requests of two or more output tokens).
	HeldAtOne []string `json:"held_at_one,omitempty"`
	// Runs are the runs of a joint fit, one by one (Source then lists their files; Requests,
	// FitRequests and the errors are over all of them): each run's first half fitted, its
	// second half held out. Absent for a fit to one run.
	Runs []LLMCalibrationRun `json:"runs,omitempty"`
}

// LLMCalibrationRun is one run of a joint calibration: its file, requests and errors.
type LLMCalibrationRun struct {
	Source      string               `json:"source"`
	Requests    int                  `json:"requests"`
	FitRequests int                  `json:"fit_requests"`
	Fit         LLMCalibrationErrors `json:"fit"`
	HeldOut     LLMCalibrationErrors `json:"held_out"`
}

// CalibrationFactors are the values LLMCalibration.HeldAtOne may hold.
var CalibrationFactors = []string{"prefill_scale", "decode_scale"}

// LLMCalibrationErrors are a replay's errors on one set of requests with the profile as it
// was (Before) and as calibrated (After).
type LLMCalibrationErrors struct {
	Before LLMReplayError `json:"before"`
	After  LLMReplayError `json:"after"`
}

// LLMReplayError is the median, over requests, of the absolute relative error (in percent)
// of the replayed request's TTFT, mean inter-token latency ((E2E − TTFT) / (output tokens
// − 1), vLLM's TPOT; requests of one output token have none) and E2E against the measured
// ones (LLM engine digest §3).
type LLMReplayError struct {
	TTFTPct float64 `json:"ttft_pct"`
	ITLPct  float64 `json:"itl_pct"`
	E2EPct  float64 `json:"e2e_pct"`
}

// Bounds of LLMCalibration's factors, the ranges `plan profile --calibrate` searches.
const (
	// MinCalibrationScale and MaxCalibrationScale bound prefill_scale and decode_scale.
	MinCalibrationScale = 0.25
	MaxCalibrationScale = 4
	// MaxCalibrationOverheadUs bounds step_overhead_us either way (5 ms per step). The search
	// also keeps a negative overhead to at most half of any scaled point, so every corrected
	// point stays > 0.
	MaxCalibrationOverheadUs = 5000
)

// CalibrationFormats are the values LLMCalibration.Format may take.
var CalibrationFormats = []string{"vllm-bench"}

// validate checks a calibration record: a source and a known format, request counts that
// split into a fitted and a held-out half, factors inside the searched ranges, and errors that
// are finite percentages.
func (c *LLMCalibration) validate(v *validator, p string) {
	notEmpty(v, field(p, "source"), c.Source)
	oneOf(v, field(p, "format"), c.Format, CalibrationFormats)
	atLeast(v, field(p, "requests"), int64(c.Requests), 2)
	atLeast(v, field(p, "fit_requests"), int64(c.FitRequests), 1)
	if c.FitRequests >= c.Requests && c.Requests >= 2 {
		v.add(field(p, "fit_requests"), c.FitRequests, "must be < requests (%d): the rest are held out", c.Requests)
	}
	inRange(v, field(p, "prefill_scale"), c.PrefillScale, MinCalibrationScale, MaxCalibrationScale)
	inRange(v, field(p, "decode_scale"), c.DecodeScale, MinCalibrationScale, MaxCalibrationScale)
	if !finite(c.StepOverheadUs) || c.StepOverheadUs > MaxCalibrationOverheadUs || c.StepOverheadUs < -MaxCalibrationOverheadUs {
		v.add(field(p, "step_overhead_us"), c.StepOverheadUs, "must be in [%g, %g] µs", -float64(MaxCalibrationOverheadUs), float64(MaxCalibrationOverheadUs))
	}
	validErrors(v, p, c.Fit, c.HeldOut)
	for i, f := range c.HeldAtOne {
		oneOf(v, fmt.Sprintf("%s[%d]", field(p, "held_at_one"), i), f, CalibrationFactors)
		if f == "prefill_scale" && c.PrefillScale != 1 || f == "decode_scale" && c.DecodeScale != 1 {
			v.add(fmt.Sprintf("%s[%d]", field(p, "held_at_one"), i), f, "is held at 1, but its factor is not 1")
		}
	}
	if len(c.Runs) > 0 {
		requests, fit := 0, 0
		for i, r := range c.Runs {
			rp := fmt.Sprintf("%s[%d]", field(p, "runs"), i)
			notEmpty(v, field(rp, "source"), r.Source)
			atLeast(v, field(rp, "requests"), int64(r.Requests), 2)
			atLeast(v, field(rp, "fit_requests"), int64(r.FitRequests), 1)
			if r.FitRequests >= r.Requests && r.Requests >= 2 {
				v.add(field(rp, "fit_requests"), r.FitRequests, "must be < requests (%d): the rest are held out", r.Requests)
			}
			validErrors(v, rp, r.Fit, r.HeldOut)
			requests, fit = requests+r.Requests, fit+r.FitRequests
		}
		if requests != c.Requests || fit != c.FitRequests {
			v.add(field(p, "runs"), len(c.Runs), "hold %d requests (%d fitted): requests and fit_requests say %d (%d)", requests, fit, c.Requests, c.FitRequests)
		}
	}
}

// validErrors checks a calibration's (or one run's) errors: finite percentages >= 0.
func validErrors(v *validator, p string, fit, heldOut LLMCalibrationErrors) {
	for _, e := range []struct {
		name string
		errs LLMCalibrationErrors
	}{{"fit", fit}, {"held_out", heldOut}} {
		for _, w := range []struct {
			name string
			err  LLMReplayError
		}{{"before", e.errs.Before}, {"after", e.errs.After}} {
			wp := field(field(p, e.name), w.name)
			for _, x := range []struct {
				name string
				pct  float64
			}{{"ttft_pct", w.err.TTFTPct}, {"itl_pct", w.err.ITLPct}, {"e2e_pct", w.err.E2EPct}} {
				if !finite(x.pct) || x.pct < 0 {
					v.add(field(wp, x.name), x.pct, "must be a percentage >= 0")
				}
			}
		}
	}
}
