package formats

import (
	"strings"
	"testing"
)

// TestVerdictRule: AppMeets is the one rule (every run holds), and a prediction is valid
// exactly when its meets says what the rule says of its runs — the first run at 99.036%
// against a replication at 98.9% is a miss, and the writer's check agrees.
func TestVerdictRule(t *testing.T) {
	run := func(a float64) RunOutcome { return RunOutcome{Requests: 10000, Attainment: a} }
	llm := []PredictedSLO{{SLO: "ttft_slo", Percentile: 0.9, Share: 0.95, Meets: true}}
	for _, tc := range []struct {
		name string
		app  AppPrediction
		want bool
	}{
		{"every run holds", AppPrediction{Attainment: 0.995, Target: 0.99, Runs: []RunOutcome{run(0.995), run(0.992), run(0.991)}}, true},
		{"first run holds, a replication misses", AppPrediction{Attainment: 0.99036, Target: 0.99, Runs: []RunOutcome{run(0.99036), run(0.989), run(0.993)}}, false},
		{"a run at the target holds", AppPrediction{Attainment: 0.99, Target: 0.99, Runs: []RunOutcome{run(0.99)}}, true},
		{"a stopped run misses", AppPrediction{Attainment: 0.995, Target: 0.99, Runs: []RunOutcome{run(0.995), {Requests: 5, Attainment: 1, Stopped: true}}}, false},
		{"a run without requests holds", AppPrediction{Attainment: 0.995, Target: 0.99, Runs: []RunOutcome{run(0.995), {}}}, true},
		{"LLM shares at their percentiles", AppPrediction{Attainment: 0.5, Target: 0.99, SLOs: llm,
			Runs: []RunOutcome{{Requests: 100, Attainment: 0.5, SLOShares: []float64{0.95}}, {Requests: 100, Attainment: 0.4, SLOShares: []float64{0.9}}}}, true},
		{"LLM share below its percentile in a replication", AppPrediction{Attainment: 0.5, Target: 0.99, SLOs: llm,
			Runs: []RunOutcome{{Requests: 100, Attainment: 0.5, SLOShares: []float64{0.95}}, {Requests: 100, Attainment: 0.5, SLOShares: []float64{0.89}}}}, false},
		{"no runs recorded: the first run alone", AppPrediction{Attainment: 0.991, Target: 0.99}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AppMeets(&tc.app); got != tc.want {
				t.Fatalf("AppMeets = %t, want %t", got, tc.want)
			}
			for _, meets := range []bool{true, false} {
				a := tc.app
				a.Name, a.Meets, a.Requests = "m", meets, 10000
				if len(a.Runs) > 0 {
					a.Requests = a.Runs[0].Requests
				}
				pr := &Prediction{Method: PredictionMethodSim, Basis: PredictionBasisStated, DurationS: 20, Rule: VerdictEveryRun,
					Meets: meets, Apps: []AppPrediction{a}}
				v := &validator{}
				pr.validate(v, "prediction")
				if bad := len(v.errs) > 0; bad != (meets != tc.want) {
					t.Errorf("meets %t: validation errors %v", meets, v.errs)
				}
			}
		})
	}
}

// TestVerdictRunsValidated: runs are checked: the first must be the one the summary is of,
// shares in range and one per SLO, the rule a known one, and a bursty CV in range.
func TestVerdictRunsValidated(t *testing.T) {
	base := func() *Prediction {
		return &Prediction{Method: PredictionMethodSim, Basis: PredictionBasisRates, DurationS: 20, Rule: VerdictEveryRun, Meets: true,
			Apps: []AppPrediction{{Name: "m", Requests: 100, Attainment: 1, Target: 0.99, Meets: true,
				Runs: []RunOutcome{{Requests: 100, Attainment: 1}, {Requests: 90, Attainment: 1}}}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*Prediction)
		want string
	}{
		{"valid", func(*Prediction) {}, ""},
		{"first run not the summary's", func(p *Prediction) { p.Apps[0].Runs[0].Requests = 99 }, "prediction.apps[0].runs[0]"},
		{"attainment out of range", func(p *Prediction) { p.Apps[0].Runs[1].Attainment = 1.5 }, "prediction.apps[0].runs[1].attainment"},
		{"shares without SLOs", func(p *Prediction) { p.Apps[0].Runs[1].SLOShares = []float64{1} }, "prediction.apps[0].runs[1].slo_shares"},
		{"unknown rule", func(p *Prediction) { p.Rule = "majority" }, "prediction.rule"},
		// check re-runs a plan under its recorded arrivals: a CV whose Gamma shape overflows
		// ran the generator without end.
		{"bursty CV too small", func(p *Prediction) { p.Arrivals = "bursty:1e-200" }, "prediction.arrivals"},
		{"bursty CV not a number", func(p *Prediction) { p.Arrivals = "bursty:x" }, "prediction.arrivals"},
		{"bursty CV in range", func(p *Prediction) { p.Arrivals = "bursty:2" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.edit(p)
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
