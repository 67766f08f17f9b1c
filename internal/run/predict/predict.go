// Package predict is the prediction a plan carries: `plan solve` simulates the plan it is
// about to write at its own rates (load factor 1: the workload's rates, or the throughput a
// plan states), under its own runtime policy, and records per application the attainment
// with its sampling error, drops, latency percentiles and the load factor the plan holds its
// targets up to; `plan check` re-runs the same simulation from the plan's own inputs. A plan
// that misses is an error (exit 2) unless the user accepts the miss, and then the miss is in
// the plan. The lever (lever.go) is how solve sizes a plan that misses: again for its rates
// times a margin.
package predict

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/sim"
)

// arrivalSeed seeds the prediction's arrivals (workload.PredictionSeed, the planners' too).
const arrivalSeed = workload.PredictionSeed

// Plan simulates plan at its own rates, under the arrival process its prediction records
// (Poisson where it records none), and returns its prediction: `plan check` re-runs a
// verdict as it was made.
func Plan(ctx context.Context, reg *systems.Registry, plan *formats.Plan) (*formats.Prediction, error) {
	return PlanArrivals(ctx, reg, plan, RecordedArrivals(plan))
}

// PlanArrivals is Plan under the arrival process arrivals (sim.PredictArrivals: "" is
// Poisson).
func PlanArrivals(ctx context.Context, reg *systems.Registry, plan *formats.Plan, arrivals string) (*formats.Prediction, error) {
	return planInput(ctx, reg, plan, sim.PredictInput{Seed: arrivalSeed, SpanScale: 1, Arrivals: arrivals})
}

// Start starts plan's prediction under arrivals as PlanArrivals does: the runs at the plan's
// rates are done, and sim.Prediction.Complete adds the headroom search (see Solve). A
// deadline (zero: none) ends those runs: past it Start returns sim.ErrPredictionDeadline.
func Start(ctx context.Context, reg *systems.Registry, plan *formats.Plan, arrivals string, deadline time.Time) (*sim.Prediction, error) {
	in, err := deploy(reg, plan, sim.PredictInput{Seed: arrivalSeed, SpanScale: 1, Arrivals: arrivals, Deadline: deadline})
	if err != nil {
		return nil, err
	}
	return sim.StartPrediction(ctx, in)
}

// RecordedArrivals is the arrival process plan's prediction was made under ("" without one:
// Poisson).
func RecordedArrivals(plan *formats.Plan) string {
	if plan.Prediction == nil {
		return ""
	}
	return plan.Prediction.Arrivals
}

// PlanSeed is Plan at the plan's rates only (no headroom search) with other
// arrivals: the property tests' independent re-run of a verdict.
func PlanSeed(ctx context.Context, reg *systems.Registry, plan *formats.Plan, seed int64) (*formats.Prediction, error) {
	return planInput(ctx, reg, plan, sim.PredictInput{Seed: seed, SpanScale: 1, RatesOnly: true, Arrivals: RecordedArrivals(plan)})
}

// PlanWith is Plan with the arrivals' seed and the span times spanScale
// (BenchmarkPredictionVsLongRun's 10× run): the plan deployed by its system, simulated by
// sim.Predict.
func PlanWith(ctx context.Context, reg *systems.Registry, plan *formats.Plan, seed int64, spanScale float64) (*formats.Prediction, error) {
	return planInput(ctx, reg, plan, sim.PredictInput{Seed: seed, SpanScale: spanScale, Arrivals: RecordedArrivals(plan)})
}

// planInput deploys the plan by its system and predicts it with in's settings.
func planInput(ctx context.Context, reg *systems.Registry, plan *formats.Plan, in sim.PredictInput) (*formats.Prediction, error) {
	in, err := deploy(reg, plan, in)
	if err != nil {
		return nil, err
	}
	return sim.Predict(ctx, in)
}

// deploy is in with plan deployed by its system.
func deploy(reg *systems.Registry, plan *formats.Plan, in sim.PredictInput) (sim.PredictInput, error) {
	dep, pol, err := reg.Deploy(plan)
	if err != nil {
		return in, fmt.Errorf("predicting the plan: %w", err)
	}
	in.Plan, in.Dep, in.Policies, in.Policy = plan, dep, reg.Policies(), pol
	return in, nil
}

// SearchNote says that pr's headroom search stopped before it finished, what it tried and
// what that makes of its numbers ("" where it finished).
func SearchNote(pr *formats.Prediction) string {
	h := pr.HeadroomSearch
	if h == nil {
		return ""
	}
	loads := make([]string, len(h.LoadsTried))
	for i, l := range h.LoadsTried {
		loads[i] = strconv.FormatFloat(l, 'g', 4, 64) + "×"
	}
	tried := "no load but 1"
	if len(loads) > 0 {
		tried = "loads " + strings.Join(loads, ", ")
	}
	return fmt.Sprintf("the prediction's headroom search stopped early at the %s (it simulated %s): headroom %.3g× and each sustained_rps are what it established by then, lower bounds, not a complete search (plan check runs one; a longer --time-limit completes it)",
		h.Reason, tried, pr.Headroom)
}

// holdsUpTo is "up to R req/s", or "at least up to R req/s" where the headroom search
// stopped early (R is then a lower bound).
func holdsUpTo(pr *formats.Prediction, rps float64) string {
	if pr.HeadroomSearch != nil {
		return fmt.Sprintf("at least up to %.4g req/s (the search stopped early)", rps)
	}
	return fmt.Sprintf("up to %.4g req/s", rps)
}

// Misses lists the applications that miss their targets, one phrase each.
func Misses(pr *formats.Prediction) []string {
	var out []string
	for _, a := range pr.Apps {
		if !a.Meets && BindingPhrase(a) != "" {
			out = append(out, fmt.Sprintf("%s at its own rate %.4g req/s (%d dropped of %d); it holds its SLOs %s", BindingPhrase(a), a.RateRPS, a.Dropped, a.Requests, holdsUpTo(pr, a.SustainedRPS)))
		} else if !a.Meets {
			scatter := ""
			if a.Attainment >= a.Target {
				scatter = ", below it in a replication with other arrivals"
			}
			out = append(out, fmt.Sprintf("%s: predicted attainment %.2f%% ± %.2f at its own rate %.4g req/s, target %.0f%%%s (p99 %s, %d dropped, %d late of %d); it holds the target %s",
				a.Name, 100*a.Attainment, 100*a.Margin, a.RateRPS, 100*a.Target, scatter, run.FmtLatencyMs(a.P99Ms), a.Dropped, a.Late, a.Requests, holdsUpTo(pr, a.SustainedRPS)))
		}
	}
	return out
}

// BasisPhrase names a prediction's load factor 1 for a reader: the workload's rates, or a
// throughput plan's planned rates (formats.PredictionBasisStated, whose stored name predates
// the rule that a PPipe plan states what it serves: the rate simulated is the model's
// target_rps, the formulation's, and throughput_rps is what it sustains).
func BasisPhrase(pr *formats.Prediction) string {
	if pr.Basis == formats.PredictionBasisStated {
		return "its planned rate"
	}
	return pr.Basis
}

// Line is the one-line summary solve and check print.
func Line(pr *formats.Prediction) string {
	worst := worstApp(pr)
	if worst < 0 {
		return "predicted: no application simulated"
	}
	a := pr.Apps[worst]
	verdict, rates := "meets its targets", "its rates"
	switch {
	case !pr.Meets && pr.Basis == formats.PredictionBasisStated:
		verdict, rates = "its planned rates are past what it serves within its targets", "its planned rates"
	case !pr.Meets:
		verdict = "MISSES ITS TARGET"
	}
	hr := fmt.Sprintf("holds its targets up to %.3g× %s", pr.Headroom, rates)
	switch {
	case pr.HeadroomSearch != nil && pr.Headroom == 0:
		hr = "the headroom search stopped at the time limit before it established a load the plan holds"
	case pr.HeadroomSearch != nil:
		hr = fmt.Sprintf("holds its targets at least up to %.3g× %s (the headroom search stopped at the time limit)", pr.Headroom, rates)
	case pr.Headroom >= pr.HeadroomCap:
		hr = fmt.Sprintf("holds its targets at %.3g× its rates (the most tried)", pr.Headroom)
	case pr.Headroom == 0:
		hr = fmt.Sprintf("misses at every load tried down to %.2g×", sim.PredictLowestLoad)
	}
	arrivals := ""
	if n := ArrivalsName(pr); n != "" {
		arrivals = " of " + n
	}
	if sb := SizeByPhrase(pr); sb != "" {
		hr += "; " + sb
	}
	if b := BindingPhrase(a); b != "" {
		if e := ExpectedErrorPhrase(a); e != "" {
			b += " (" + e + ")"
		}
		return fmt.Sprintf("predicted (simulated %s s%s at its own rates, seed %d): %s; closest %s; %s",
			fmtSecsShort(pr.DurationS), arrivals, pr.Seed, verdict, b, hr)
	}
	p99 := run.FmtLatencyMs(a.P99Ms)
	if e := a.LatencyError; e != nil {
		p99 += " " + e.P99.String()
	}
	return fmt.Sprintf("predicted (simulated %s s%s at its own rates, seed %d): %s; lowest %s %.2f%% ± %.2f (target %.0f%%, p99 %s); %s",
		fmtSecsShort(pr.DurationS), arrivals, pr.Seed, verdict, a.Name, 100*a.Attainment, 100*a.Margin, 100*a.Target, p99, hr)
}

// SizeBy is the rate the plan tells a user to size application a by: the workload's rate
// for a plan sized to rates (load 1), and for a plan that maximises throughput (simulated at
// its planned rates, a capacity past which attainment falls) the rate it sustains within its
// target in every run, capped at the planned rate. `plan check` holds each application to its target there.
func SizeBy(pr *formats.Prediction, a formats.AppPrediction) float64 {
	if pr.Basis == formats.PredictionBasisStated && a.SustainedRPS < a.RateRPS {
		return a.SustainedRPS
	}
	return a.RateRPS
}

// SizeByPhrase says what rate to size a throughput plan by ("size by m0 1773 req/s
// (planned 2117)": a PPipe plan states the first as the model's throughput_rps, the second
// is its target_rps, the formulation's), "" for a plan sized to the workload's rates (its rates are the
// answer) or one predicted without a headroom search.
func SizeByPhrase(pr *formats.Prediction) string {
	if pr.Basis != formats.PredictionBasisStated {
		return ""
	}
	var parts []string
	for _, a := range pr.Apps {
		if a.SustainedRPS == 0 && a.Meets {
			return "" // no search ran (a rates-only prediction)
		}
		switch {
		case pr.HeadroomSearch != nil && a.SustainedRPS == 0:
			// The search stopped before it established a rate: none is known, not 0.
			parts = append(parts, fmt.Sprintf("%s not established (planned %.4g)", a.Name, a.RateRPS))
		case pr.HeadroomSearch != nil && a.SustainedRPS < a.RateRPS:
			parts = append(parts, fmt.Sprintf("%s %.4g req/s or more (planned %.4g)", a.Name, SizeBy(pr, a), a.RateRPS))
		default:
			parts = append(parts, fmt.Sprintf("%s %.4g req/s (planned %.4g)", a.Name, SizeBy(pr, a), a.RateRPS))
		}
	}
	return "size by " + strings.Join(parts, ", ")
}

// ArrivalsName is the arrival process a prediction simulated, for messages ("bursty:2
// arrivals"), or "" for Poisson, which every message otherwise assumes.
func ArrivalsName(pr *formats.Prediction) string {
	if pr == nil || pr.Arrivals == "" || pr.Arrivals == "poisson" {
		return ""
	}
	return pr.Arrivals + " arrivals"
}

func fmtSecsShort(s float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", s), "0"), ".")
}

// worstApp is the index of the application furthest below (or least above) its target, -1
// when there is none.
func worstApp(pr *formats.Prediction) int {
	worst := -1
	for i, a := range pr.Apps {
		share, target, _ := Binding(a)
		ws, wt, _ := Binding(pr.Apps[max(worst, 0)])
		if worst < 0 || share-target < ws-wt {
			worst = i
		}
	}
	return worst
}

// Binding is what an application is judged on: an LLM class's SLO with the least slack over
// its percentile (what says "ttft_slo 600ms met by 95.3%, p90 needed"), else its attainment
// against its target (what "attainment" says).
func Binding(a formats.AppPrediction) (share, target float64, what string) {
	share, target, what = a.Attainment, a.Target, "attainment"
	for i, c := range a.SLOs {
		if i == 0 || c.Share-c.Percentile < share-target {
			share, target, what = c.Share, c.Percentile, fmt.Sprintf("%s %s", c.SLO, run.FmtMs(c.LimitMs))
		}
	}
	return share, target, what
}

// BindingPhrase renders Binding for summaries: "rag: ttft_slo 600ms met by 95.31% (p90
// needed)", or "" for an application judged on its attainment (callers keep their wording).
func BindingPhrase(a formats.AppPrediction) string {
	share, target, what := Binding(a)
	if what == "attainment" {
		return ""
	}
	return fmt.Sprintf("%s: %s met by %.2f%% (p%g needed)", a.Name, what, 100*share, 100*target)
}

// ExpectedErrorPhrase is an LLM class's expected-error band on the simulated means, for
// summaries ("means expected within ttft −12/+30%, tpot −5/+8%, e2e −9/+20%"), or "" where
// the prediction records none (other applications, plans written before it was recorded).
func ExpectedErrorPhrase(a formats.AppPrediction) string {
	e := a.ExpectedError
	if e == nil {
		return ""
	}
	return fmt.Sprintf("means expected within ttft %s, tpot %s, e2e %s", e.TTFTMean, e.TPOTMean, e.E2EMean)
}
