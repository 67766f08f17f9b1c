package cli

// The prediction a plan carries: `plan solve` simulates the plan it is about to write at its
// own rates (load factor 1: the workload's rates, or the throughput a plan states), under its
// own runtime policy, and records per application the attainment with its sampling error,
// drops, latency percentiles and the load factor the plan holds its targets up to; `plan
// check` re-runs the same simulation from the plan's own inputs. A plan that misses is an
// error (exit 2) unless the user accepts the miss, and then the miss is in the plan.

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/systems"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
)

// predictSeed seeds the prediction's arrivals (workload.PredictionSeed, the planners' too).
const predictSeed = workload.PredictionSeed

// predictPlan simulates plan at its own rates and returns its prediction.
func predictPlan(ctx context.Context, reg *systems.Registry, plan *formats.Plan) (*formats.Prediction, error) {
	return predictPlanWith(ctx, reg, plan, predictSeed, 1)
}

// predictPlanSeed is predictPlan at the plan's rates only (no headroom search) with other
// arrivals: the property tests' independent re-run of a verdict.
func predictPlanSeed(ctx context.Context, reg *systems.Registry, plan *formats.Plan, seed int64) (*formats.Prediction, error) {
	return predictPlanInput(ctx, reg, plan, sim.PredictInput{Seed: seed, SpanScale: 1, RatesOnly: true})
}

// predictPlanWith is predictPlan with the arrivals' seed and the span times spanScale
// (BenchmarkPredictionVsLongRun's 10× run): the plan deployed by its system, simulated by
// sim.Predict.
func predictPlanWith(ctx context.Context, reg *systems.Registry, plan *formats.Plan, seed int64, spanScale float64) (*formats.Prediction, error) {
	return predictPlanInput(ctx, reg, plan, sim.PredictInput{Seed: seed, SpanScale: spanScale})
}

// predictPlanInput deploys the plan by its system and predicts it with in's settings.
func predictPlanInput(ctx context.Context, reg *systems.Registry, plan *formats.Plan, in sim.PredictInput) (*formats.Prediction, error) {
	dep, pol, err := reg.Deploy(plan)
	if err != nil {
		return nil, fmt.Errorf("predicting the plan: %w", err)
	}
	in.Plan, in.Dep, in.Policies, in.Policy = plan, dep, reg.Policies(), pol
	return sim.Predict(ctx, in)
}

// predictionMisses lists the applications that miss their targets, one phrase each.
func predictionMisses(pr *formats.Prediction) []string {
	var out []string
	for _, a := range pr.Apps {
		if !a.Meets && bindingPhrase(a) != "" {
			out = append(out, fmt.Sprintf("%s at its own rate %.4g req/s (%d dropped of %d); it holds its SLOs up to %.4g req/s", bindingPhrase(a), a.RateRPS, a.Dropped, a.Requests, a.SustainedRPS))
		} else if !a.Meets {
			out = append(out, fmt.Sprintf("%s: predicted attainment %.2f%% ± %.2f at its own rate %.4g req/s, target %.0f%% (p99 %s, %d dropped, %d late of %d); it holds the target up to %.4g req/s",
				a.Name, 100*a.Attainment, 100*a.Margin, a.RateRPS, 100*a.Target, run.FmtMs(a.P99Ms), a.Dropped, a.Late, a.Requests, a.SustainedRPS))
		}
	}
	return out
}

// predictionLine is the one-line summary solve and check print.
func predictionLine(pr *formats.Prediction) string {
	worst := worstApp(pr)
	if worst < 0 {
		return "predicted: no application simulated"
	}
	a := pr.Apps[worst]
	verdict, rates := "meets its targets", "its rates"
	switch {
	case !pr.Meets && pr.Basis == formats.PredictionBasisStated:
		verdict, rates = "its stated rates are past what it serves within its targets", "its stated rates"
	case !pr.Meets:
		verdict = "MISSES ITS TARGET"
	}
	hr := fmt.Sprintf("holds its targets up to %.3g× %s", pr.Headroom, rates)
	switch {
	case pr.Headroom >= pr.HeadroomCap:
		hr = fmt.Sprintf("holds its targets at %.3g× its rates (the most tried)", pr.Headroom)
	case pr.Headroom == 0:
		hr = fmt.Sprintf("misses at every load tried down to %.2g×", sim.PredictLowestLoad)
	}
	if b := bindingPhrase(a); b != "" {
		return fmt.Sprintf("predicted (simulated %s s at its own rates, seed %d): %s; closest %s; %s",
			fmtSecsShort(pr.DurationS), pr.Seed, verdict, b, hr)
	}
	return fmt.Sprintf("predicted (simulated %s s at its own rates, seed %d): %s; lowest %s %.2f%% ± %.2f (target %.0f%%, p99 %s); %s",
		fmtSecsShort(pr.DurationS), pr.Seed, verdict, a.Name, 100*a.Attainment, 100*a.Margin, 100*a.Target, run.FmtMs(a.P99Ms), hr)
}

func fmtSecsShort(s float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", s), "0"), ".")
}

// checkPrediction is plan check's predict stage: the plan simulated again at its own rates,
// from its own inputs. Every application must meet its target at the workload's rates (a
// stated-throughput plan: hold what it recorded), and a recorded prediction must be
// reproduced within its sampling error: a plan that checks ok is one whose verdict still holds.
func checkPrediction(cmd *cobra.Command, app *App, lg *checkLog, plan *formats.Plan) {
	pr, err := predictPlan(cmd.Context(), app.Systems, plan)
	if err != nil {
		lg.add("predict", planner.Check{Line: err.Error(), Name: "prediction"})
		return
	}
	recorded := map[string]formats.AppPrediction{}
	if plan.Prediction != nil {
		for _, a := range plan.Prediction.Apps {
			recorded[a.Name] = a
		}
	}
	for _, a := range pr.Apps {
		val, lim := a.Attainment, a.Target
		line := fmt.Sprintf("%s: predicted attainment %.2f%% ± %.2f at %.4g req/s (%s), target %.0f%%, p99 %s; holds the target up to %.4g req/s",
			a.Name, 100*a.Attainment, 100*a.Margin, a.RateRPS, pr.Basis, 100*a.Target, run.FmtMs(a.P99Ms), a.SustainedRPS)
		if b := bindingPhrase(a); b != "" {
			val, lim, _ = binding(a)
			line = fmt.Sprintf("%s at %.4g req/s (%s); holds its SLOs up to %.4g req/s", b, a.RateRPS, pr.Basis, a.SustainedRPS)
		}
		ok := a.Meets
		rec, had := recorded[a.Name]
		switch {
		case had && rec.RateRPS != a.RateRPS:
			ok, line = false, line+fmt.Sprintf("; the plan recorded its prediction at %.4g req/s", rec.RateRPS)
		case had && a.Attainment < rec.Attainment-math.Max(rec.Margin, a.Margin):
			// The recorded verdict no longer holds (the plan, its inputs or the runtime
			// policy changed since it was written).
			ok, line, lim = false, line+fmt.Sprintf("; recorded %.2f%% ± %.2f", 100*rec.Attainment, 100*rec.Margin), rec.Attainment-math.Max(rec.Margin, a.Margin)
		case !a.Meets && had && !rec.Meets:
			// A miss written with --accept-miss (or a stated throughput past what the plan
			// serves) that has not grown: it was reported when the plan was written.
			ok, line, lim = true, line+fmt.Sprintf("; a miss recorded in the plan (%.2f%%)", 100*rec.Attainment), rec.Attainment-math.Max(rec.Margin, a.Margin)
		case !a.Meets && pr.Basis == formats.PredictionBasisStated:
			// A plan that states its throughput (and recorded no prediction that met it):
			// the rate it does sustain, stated beside it, is what a user sizes by.
			ok = true
			line += fmt.Sprintf("; the plan's stated %.4g req/s is past what it serves within its SLO: size by %.4g req/s", a.RateRPS, a.SustainedRPS)
		}
		lg.add("predict", planner.Check{OK: ok, Line: line, Name: "attainment", Subject: a.Name, Value: &val, Limit: &lim})
	}
}

// worstApp is the index of the application furthest below (or least above) its target, -1
// when there is none.
func worstApp(pr *formats.Prediction) int {
	worst := -1
	for i, a := range pr.Apps {
		share, target, _ := binding(a)
		ws, wt, _ := binding(pr.Apps[max(worst, 0)])
		if worst < 0 || share-target < ws-wt {
			worst = i
		}
	}
	return worst
}

// binding is what an application is judged on: an LLM class's SLO with the least slack over
// its percentile (what says "ttft_slo 600ms met by 95.3%, p90 needed"), else its attainment
// against its target (what "attainment" says).
func binding(a formats.AppPrediction) (share, target float64, what string) {
	share, target, what = a.Attainment, a.Target, "attainment"
	for i, c := range a.SLOs {
		if i == 0 || c.Share-c.Percentile < share-target {
			share, target, what = c.Share, c.Percentile, fmt.Sprintf("%s %s", c.SLO, run.FmtMs(c.LimitMs))
		}
	}
	return share, target, what
}

// bindingPhrase renders binding for summaries: "rag: ttft_slo 600ms met by 95.31% (p90
// needed)", or "" for an application judged on its attainment (callers keep their wording).
func bindingPhrase(a formats.AppPrediction) string {
	share, target, what := binding(a)
	if what == "attainment" {
		return ""
	}
	return fmt.Sprintf("%s: %s met by %.2f%% (p%g needed)", a.Name, what, 100*share, 100*target)
}
