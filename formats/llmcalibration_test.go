package formats

import (
	"math"
	"strings"
	"testing"
)

// TestLLMCalibrationValidate: a calibration record validates with its factors in the searched
// ranges, and each bad field is refused by its path and value.
func TestLLMCalibrationValidate(t *testing.T) {
	good := func() LLMCalibration {
		e := LLMReplayError{TTFTPct: 12.5, ITLPct: 3, E2EPct: 4}
		return LLMCalibration{Source: "run.json", Format: "vllm-bench", Requests: 10, FitRequests: 5,
			PrefillScale: 1.3, DecodeScale: 0.8, StepOverheadUs: -20,
			Fit: LLMCalibrationErrors{Before: e, After: e}, HeldOut: LLMCalibrationErrors{Before: e, After: e}}
	}
	for _, c := range []struct {
		name       string
		edit       func(*LLMCalibration)
		path, vals string
	}{
		{"good", func(*LLMCalibration) {}, "", ""},
		{"no source", func(c *LLMCalibration) { c.Source = "" }, "calibration.source", `""`},
		{"format", func(c *LLMCalibration) { c.Format = "csv" }, "calibration.format", `"csv"`},
		{"one request", func(c *LLMCalibration) { c.Requests, c.FitRequests = 1, 1 }, "calibration.requests", "1"},
		{"nothing held out", func(c *LLMCalibration) { c.FitRequests = 10 }, "calibration.fit_requests", "10"},
		{"prefill scale", func(c *LLMCalibration) { c.PrefillScale = 5 }, "calibration.prefill_scale", "5"},
		{"decode scale NaN", func(c *LLMCalibration) { c.DecodeScale = math.NaN() }, "calibration.decode_scale", "NaN"},
		{"overhead", func(c *LLMCalibration) { c.StepOverheadUs = 6000 }, "calibration.step_overhead_us", "6000"},
		{"error", func(c *LLMCalibration) { c.HeldOut.After.ITLPct = -1 }, "calibration.held_out.after.itl_pct", "-1"},
		{"held prefill", func(c *LLMCalibration) { c.PrefillScale, c.HeldAtOne = 1, []string{"prefill_scale"} }, "", ""},
		{"held but fitted", func(c *LLMCalibration) { c.HeldAtOne = []string{"decode_scale"} }, "calibration.held_at_one[0]", `"decode_scale"`},
		{"held unknown", func(c *LLMCalibration) { c.HeldAtOne = []string{"overhead"} }, "calibration.held_at_one[0]", `"overhead"`},
		{"two runs", func(c *LLMCalibration) { c.Runs = twoRuns() }, "", ""},
		{"runs miscounted", func(c *LLMCalibration) { c.Runs = twoRuns(); c.Runs[1].Requests = 7 }, "calibration.runs", "2"},
		{"run nothing held out", func(c *LLMCalibration) {
			c.Runs = twoRuns()
			c.Runs[0].FitRequests, c.Runs[1].FitRequests = 4, 1
		}, "calibration.runs[0].fit_requests", "4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cal := good()
			c.edit(&cal)
			v := &validator{}
			cal.validate(v, "calibration")
			if c.path == "" {
				if len(v.errs) > 0 {
					t.Fatalf("refused: %v", v.errs)
				}
				return
			}
			if len(v.errs) != 1 || v.errs[0].Path != c.path || v.errs[0].Value != c.vals {
				t.Fatalf("errors %v, want one at %s with value %s", v.errs, c.path, c.vals)
			}
			if !strings.Contains(v.errs[0].Error(), c.path) {
				t.Errorf("error %q does not name %s", v.errs[0], c.path)
			}
		})
	}
}

// twoRuns are the runs of a joint calibration of 10 requests, 5 fitted.
func twoRuns() []LLMCalibrationRun {
	e := LLMCalibrationErrors{Before: LLMReplayError{TTFTPct: 1}, After: LLMReplayError{TTFTPct: 1}}
	return []LLMCalibrationRun{{Source: "a.json", Requests: 4, FitRequests: 2, Fit: e, HeldOut: e}, {Source: "b.json", Requests: 6, FitRequests: 3, Fit: e, HeldOut: e}}
}
