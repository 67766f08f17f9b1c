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
	"github.com/plan-dev/plan/dataplane/workload"
	"math"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/systems"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
)

const (
	// predictSeed seeds the prediction's arrivals, and the rest of its simulation rule is
	// planner's (PredictionSpan, PredictionReplications): the planners that size by
	// simulation judge their capacity on the same runs.
	predictSeed = planner.PredictionSeed
	// predictHeadroomCap is the highest load factor the headroom search tries.
	predictHeadroomCap = 2.0
)

// predictBelow are the load factors tried when a plan misses at load 1, to say what it does
// sustain (its headroom below 1).
var predictBelow = []float64{0.25, 0.5, 0.7, 0.8, 0.9, 0.95}

// predictPlan simulates plan at its own rates and returns its prediction.
func predictPlan(ctx context.Context, reg *systems.Registry, plan *formats.Plan) (*formats.Prediction, error) {
	return predictPlanWith(ctx, reg, plan, predictSeed, 1)
}

// predictPlanSeed is predictPlan with other arrivals (the property tests' independent re-run).
func predictPlanSeed(ctx context.Context, reg *systems.Registry, plan *formats.Plan, seed int64) (*formats.Prediction, error) {
	return predictPlanWith(ctx, reg, plan, seed, 1)
}

// predictPlanWith is predictPlan with the arrivals' seed and the span times spanScale
// (BenchmarkPredictionVsLongRun's 10× run).
func predictPlanWith(ctx context.Context, reg *systems.Registry, plan *formats.Plan, seed int64, spanScale float64) (*formats.Prediction, error) {
	dep, pol, err := reg.Deploy(plan)
	if err != nil {
		return nil, fmt.Errorf("predicting the plan: %w", err)
	}
	// Load 1 is the workload's rate of every application that has one (what the plan was
	// sized for: a cost plan's pipelines carry more than that); where the workload gives
	// none (a PPipe throughput plan, a cascade's QPS range), the plan's stated rate.
	basis, rates := formats.PredictionBasisStated, make([]float64, len(dep.Apps))
	var wl *formats.Workload
	if e := plan.Provenance.Embedded; e != nil {
		wl = e.Workload
	}
	for i, a := range dep.Apps {
		rates[i] = a.RateRPS
		if r := workloadRate(wl, a.Name); r > 0 {
			rates[i], basis = r, formats.PredictionBasisRates
		}
	}
	spec, err := sim.ParseTraceFlag("poisson")
	if err != nil {
		return nil, err
	}
	secs := predictSpan(rates) * spanScale
	d := dataplane.Time(secs * float64(dataplane.Second))
	cfg := &sim.SweepConfig{
		Dep: dep, Policies: reg.Policies(), Policy: dataplane.Config{Policy: pol}, Arrival: spec, BaseRPS: rates,
		Loads: []float64{1}, Duration: d, Seed: uint64(seed), Warmup: sim.DefaultWarmup(dep, d),
		FindLimit: true, LimitCap: predictHeadroomCap, PlanName: "prediction", Strategy: plan.Provenance.Strategy,
	}
	cfg.LLM = planLLMClasses(plan, dep)
	rep, err := sim.Sweep(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("predicting the plan: %w", err)
	}
	points := rep.Points
	at1 := pointAt(points, 1)
	if at1 == nil {
		return nil, fmt.Errorf("predicting the plan: no load point 1 in the simulation")
	}
	j := judge{targets: appTargets(at1), llm: cfg.LLM, dep: dep}
	for i, c := range cfg.LLM {
		if c.Model != "" && i < len(j.targets) {
			j.targets[i] = c.E2EP // an LLM class's attainment line: its E2E percentile
		}
	}
	targets := j.targets
	if !j.all(at1) {
		// Where it does hold: the loads below 1 (the search above 1 found nothing).
		c := *cfg
		c.Loads, c.FindLimit = predictBelow, false
		low, err := sim.Sweep(ctx, &c)
		if err != nil {
			return nil, fmt.Errorf("predicting the plan: %w", err)
		}
		points = append(points, low.Points...)
	}
	// Replications: the same span twice more with other arrivals. Misses come in bursts
	// (a queue that builds holds many requests late at once), so a run's attainment
	// scatters more than the binomial of its request count says; the spread of independent
	// replications measures it (PARD at 20 s: 99.29% ± 0.26 binomial, another seed 97.79%).
	reps := make([][]float64, len(at1.Apps))
	for i, a := range at1.Apps {
		reps[i] = []float64{a.Attainment}
	}
	for r := int64(1); r <= predictReplications; r++ {
		c := *cfg
		c.Loads, c.FindLimit, c.Seed = []float64{1}, false, uint64(seed)+uint64(r)*replicationSeedStride
		c.Progress = nil
		rp, err := sim.Sweep(ctx, &c)
		if err != nil {
			return nil, fmt.Errorf("predicting the plan: %w", err)
		}
		for i := range reps {
			if p := pointAt(rp.Points, 1); p != nil && i < len(p.Apps) && p.Apps[i].Requests > 0 {
				reps[i] = append(reps[i], p.Apps[i].Attainment)
			}
		}
	}
	pr := &formats.Prediction{
		Method: formats.PredictionMethodSim, Basis: basis, Policy: pol, Arrivals: "poisson", Seed: seed,
		DurationS: secs, Headroom: headroom(points, j), HeadroomCap: predictHeadroomCap, Meets: true,
	}
	for i, a := range at1.Apps {
		ap := formats.AppPrediction{
			Name: a.Name, RateRPS: a.OfferedRPS, Requests: a.Requests, Target: targets[i],
			Attainment: a.Attainment, Margin: min(1, max(samplingMargin(a.Attainment, a.Requests), replicationMargin(reps[i]))),
			Dropped: a.Dropped + a.Cancelled, Late: a.Late,
			P50Ms: usToMs(a.Latency.P50Us), P90Ms: usToMs(a.Latency.P90Us), P99Ms: usToMs(a.Latency.P99Us),
		}
		if a.LLM != nil {
			ttft, tpot := usToMs(a.LLM.TTFT.P99Us), usToMs(a.LLM.TPOT.P99Us)
			ap.TTFTP99Ms, ap.TPOTP99Ms = &ttft, &tpot
		}
		ap.Meets = ap.Attainment >= ap.Target
		if cs := j.checks(&at1.Apps[i], i); cs != nil {
			ap.Meets = workload.AllMet(cs)
			for _, c := range cs {
				ap.SLOs = append(ap.SLOs, formats.PredictedSLO{SLO: c.SLO, LimitMs: c.LimitUs / 1000, Percentile: c.Percentile, Share: c.Share, Meets: c.Met})
			}
		}
		ap.SustainedRPS = math.Round(appHeadroom(points, i, j)*a.OfferedRPS*1e4) / 1e4
		pr.Meets = pr.Meets && ap.Meets
		pr.Apps = append(pr.Apps, ap)
	}
	if len(pr.Apps) == 0 {
		pr.Meets = false
	}
	return pr, nil
}

// workloadRate is the rate (requests/s) the workload gives the application named name: a
// model's, pipeline's, LLM class's or workflow app's rate_rps (0 = none given).
func workloadRate(w *formats.Workload, name string) float64 {
	if w == nil {
		return 0
	}
	for _, m := range w.Models {
		if m.Name == name {
			return m.RateRPS
		}
	}
	for _, p := range w.Pipelines {
		if p.Name == name {
			return p.RateRPS
		}
	}
	for _, c := range w.LLMClasses {
		if c.Name == name {
			return c.RateRPS
		}
	}
	if w.Workflows != nil {
		if a, ok := w.Workflows.Apps[name]; ok {
			return a.RateRPS
		}
	}
	return 0
}

// predictSpan is the simulated span in seconds (planner.PredictionSpan).
func predictSpan(base []float64) float64 { return planner.PredictionSpan(base) }

// appTargets are the applications' attainment targets: the percentile an application's SLO
// is stated at (a cascade's p95), else sim.MaxLoadTarget.
func appTargets(p *sim.Point) []float64 {
	t := make([]float64, len(p.Apps))
	for i, a := range p.Apps {
		t[i] = sim.MaxLoadTarget
		if a.SLOPercentile != nil && a.SLOPercentile.Percentile > 0 && a.SLOPercentile.Percentile < 1 {
			t[i] = a.SLOPercentile.Percentile
		}
	}
	return t
}

// judge decides whether an application meets its targets at a simulated point: an LLM
// class each SLO at its own percentile (workload.LLMChecks), any other application its
// attainment target.
type judge struct {
	targets []float64
	llm     []sim.LLMClass
	dep     *dataplane.Deployment
}

// checks are application i's SLO checks at metrics a (nil: not an LLM class).
func (j judge) checks(a *workload.AppMetrics, i int) []workload.SLOCheck {
	if i >= len(j.llm) || j.llm[i].Model == "" || i >= len(j.dep.Apps) {
		return nil
	}
	return workload.LLMChecks(j.llm[i].SLOs(j.dep.Apps[i].SLO), a)
}

func (j judge) app(p *sim.Point, i int) bool {
	a := &p.Apps[i]
	if a.Requests == 0 {
		return true
	}
	if cs := j.checks(a, i); cs != nil {
		return workload.AllMet(cs)
	}
	return a.Attainment >= j.targets[i]
}

func (j judge) all(p *sim.Point) bool {
	for i := range p.Apps {
		if !j.app(p, i) {
			return false
		}
	}
	return true
}

// headroom is the highest load factor at which every application meets its target and every
// lower load tried does too (0 when the lowest load tried misses).
func headroom(points []sim.Point, j judge) float64 {
	ps := append([]sim.Point(nil), points...)
	sort.SliceStable(ps, func(i, k int) bool { return ps[i].Load < ps[k].Load })
	h := 0.0
	for i := range ps {
		if !j.all(&ps[i]) {
			break
		}
		h = ps[i].Load
	}
	return math.Round(h*1e4) / 1e4
}

// appHeadroom is headroom for application a alone.
func appHeadroom(points []sim.Point, a int, j judge) float64 {
	ps := append([]sim.Point(nil), points...)
	sort.SliceStable(ps, func(i, k int) bool { return ps[i].Load < ps[k].Load })
	h := 0.0
	for i := range ps {
		if !j.app(&ps[i], a) {
			break
		}
		h = ps[i].Load
	}
	return h
}

func pointAt(points []sim.Point, load float64) *sim.Point {
	for i := range points {
		if points[i].Load == load {
			return &points[i]
		}
	}
	return nil
}

// predictReplications are the runs beside the first whose spread bounds a prediction's
// margin (replicationMargin); replicationSeedStride spaces their seeds (planner's rule).
const (
	predictReplications   = planner.PredictionReplications
	replicationSeedStride = planner.ReplicationSeedStride
)

// replicationMargin is the 95% range of one run's attainment from independent replications:
// 1.96 × their sample standard deviation (0 with fewer than two).
func replicationMargin(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var mean, ss float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Round(1.96*math.Sqrt(ss/float64(len(xs)-1))*1e6) / 1e6
}

// samplingMargin is the 95% sampling error of an attainment a measured on n requests (the
// normal approximation of the binomial, at least one request's share).
func samplingMargin(a float64, n int64) float64 {
	if n <= 0 {
		return 1
	}
	m := 1.96 * math.Sqrt(a*(1-a)/float64(n))
	return math.Round(max(m, 1/float64(n))*1e6) / 1e6
}

func usToMs(us int64) float64 { return math.Round(float64(us)) / 1e3 }

// predictionMisses lists the applications that miss their targets, one phrase each.
func predictionMisses(pr *formats.Prediction) []string {
	var out []string
	for _, a := range pr.Apps {
		if !a.Meets && bindingPhrase(a) != "" {
			out = append(out, fmt.Sprintf("%s at its own rate %.4g req/s (%d dropped of %d); it holds its SLOs up to %.4g req/s", bindingPhrase(a), a.RateRPS, a.Dropped, a.Requests, a.SustainedRPS))
		} else if !a.Meets {
			out = append(out, fmt.Sprintf("%s: predicted attainment %.2f%% ± %.2f at its own rate %.4g req/s, target %.0f%% (p99 %s, %d dropped, %d late of %d); it holds the target up to %.4g req/s",
				a.Name, 100*a.Attainment, 100*a.Margin, a.RateRPS, 100*a.Target, fmtMs(a.P99Ms), a.Dropped, a.Late, a.Requests, a.SustainedRPS))
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
		hr = fmt.Sprintf("misses at every load tried down to %.2g×", predictBelow[0])
	}
	if b := bindingPhrase(a); b != "" {
		return fmt.Sprintf("predicted (simulated %s s at its own rates, seed %d): %s; closest %s; %s",
			fmtSecsShort(pr.DurationS), pr.Seed, verdict, b, hr)
	}
	return fmt.Sprintf("predicted (simulated %s s at its own rates, seed %d): %s; lowest %s %.2f%% ± %.2f (target %.0f%%, p99 %s); %s",
		fmtSecsShort(pr.DurationS), pr.Seed, verdict, a.Name, 100*a.Attainment, 100*a.Margin, 100*a.Target, fmtMs(a.P99Ms), hr)
}

func fmtSecsShort(s float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", s), "0"), ".")
}

// bold is s in bold on a terminal (ANSI escapes), plain elsewhere (logs keep no escapes;
// the callers' prefix is in capitals there).
func bold(app *App, s string) string {
	if isTerminal(app.Err) {
		return "\x1b[1m" + s + "\x1b[0m"
	}
	return s
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
			a.Name, 100*a.Attainment, 100*a.Margin, a.RateRPS, pr.Basis, 100*a.Target, fmtMs(a.P99Ms), a.SustainedRPS)
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
			share, target, what = c.Share, c.Percentile, fmt.Sprintf("%s %s", c.SLO, fmtMs(c.LimitMs))
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
