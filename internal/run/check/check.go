// Package check is `plan check`: a plan verified by its system's checker without the solver,
// simulated again at its own rates (its recorded prediction must hold), compared with a
// golden plan and re-solved from its embedded inputs: the CI regression gate. One line per
// check, or one JSON report (Report).
package check

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/predict"
	"github.com/plan-dev/plan/internal/run/solve"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/sim"
)

// Args are `plan check PLAN`'s inputs.
type Args struct {
	// Systems is the system registry: the plan's section picks its checker.
	Systems *systems.Registry
	// Plan is the plan file to check.
	Plan string
	// Golden is --golden, a golden plan to compare with ("" = none).
	Golden string
	// Tolerance is --tolerance, the allowed relative loss: "1%" (the default) or a fraction
	// such as "0.01".
	Tolerance string
	// Resolve is --resolve: re-solve from the plan's embedded inputs and compare.
	Resolve bool
	// TimeLimit is --time-limit of the re-solve (0, the default = the plan's recorded limit).
	TimeLimit time.Duration
	// Arrivals is --arrivals, the arrival process the predict stage simulates ("" = the
	// one the plan's prediction records; sim.PredictArrivals).
	Arrivals string
	// AllowMiss is --allow-miss: an application that misses its target at the rate the plan
	// tells a user to size by is reported (MISS) but does not fail the check.
	AllowMiss bool
}

// Run checks the plan: verify, predict, then the golden comparison and the re-solve asked for.
func Run(ctx context.Context, a Args, io *run.IO) error {
	tol, err := parseTolerance(a.Tolerance)
	if err != nil {
		return run.UsageError(err)
	}
	if a.TimeLimit < 0 {
		return run.UsageErrorf("--time-limit: %s: must be > 0", a.TimeLimit)
	}
	arrivals := ""
	if a.Arrivals != "" {
		if _, arrivals, err = sim.PredictArrivals(a.Arrivals); err != nil {
			return run.UsageErrorf("--arrivals %v", err)
		}
	}
	path := a.Plan
	// A plan that validate rejects is bad input here too (exit 2), never a failed check.
	plan, sys, err := run.ReadPlanSystem(a.Systems, path)
	if err != nil {
		return err
	}
	ck := system.CheckerOf(sys)
	if ck == nil {
		return run.UsageErrorf("%s: %s: system %s has no plan checker yet", path, sys.Sections().PlanKey(), sys.Name())
	}
	var golden *formats.Plan
	if a.Golden != "" {
		if golden, err = formats.ReadInto[*formats.Plan](a.Golden, a.Systems.Sections()); err != nil {
			return run.UsageError(err)
		}
		if !sys.Sections().HasPlan(golden) {
			return run.UsageErrorf("%s: %s: missing: the golden plan is not a %s plan like %s", a.Golden, sys.Sections().PlanKey(), sys.Name(), path)
		}
	}
	// The plan's name in messages is the path as given, so that golden/plan.json and
	// plan.json are told apart.
	lg := &checkLog{io: io, name: path}
	verifyPlan(lg, ck, plan)
	deployable := lg.fails == 0 // a plan that fails verification is not deployed, so not simulated
	// A figure stated by an older rule of the system (run.StaleChecks) fails the check, but
	// the plan runs (simulate and serve warn), so it is simulated too.
	for _, c := range run.StaleChecks(ck, plan) {
		lg.add("verify", c)
	}
	if deployable {
		checkPrediction(ctx, a.Systems, lg, plan, arrivals, a.AllowMiss, tol)
	}
	if golden != nil {
		compare(lg, "golden", "golden "+a.Golden, withFleet(ck.Compare(plan, golden, tol), plan, golden, tol))
	}
	if a.Resolve {
		if err := resolvePlan(ctx, io, lg, ck, plan, golden, a.TimeLimit, tol); err != nil {
			return err
		}
	}
	return lg.report()
}

// parseTolerance accepts "1%", "0.5 %" or a fraction "0.01".
func parseTolerance(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSpace(strings.TrimSuffix(t, "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || v < 0 {
		return 0, fmt.Errorf("--tolerance: %q: must be a percentage such as 1%% or a fraction such as 0.01", s)
	}
	if pct {
		v /= 100
	}
	if v >= 1 {
		return 0, fmt.Errorf("--tolerance: %q: must be below 100%%", s)
	}
	return v, nil
}

// checkLog prints "ok|FAIL NAME: ..." lines (or collects them for --output json) and counts
// failures.
type checkLog struct {
	io     *run.IO
	name   string
	fails  int
	checks []Line
}

// Line is one check's outcome in `plan check --output json`: beside the verdict and the
// message a person reads, what a CI script needs without parsing prose: the
// stage that ran it (verify, golden, resolve, resolve_vs_golden), the check's name, the model,
// application or task it concerns ("" = the whole plan), the measured value and the limit it
// was held to (null where no number applies).
type Line struct {
	OK      bool     `json:"ok"`
	Message string   `json:"message"`
	Stage   string   `json:"stage"`
	Name    string   `json:"name"`
	Subject string   `json:"subject"`
	Value   *float64 `json:"value"`
	Limit   *float64 `json:"limit"`
}

// Report is the whole of `plan check --output json`.
type Report struct {
	Plan   string `json:"plan"`
	OK     bool   `json:"ok"`
	Failed int    `json:"failed"`
	Checks []Line `json:"checks"`
}

// add records one check of stage; its message is "stage: line" as the text output prints it.
func (c *checkLog) add(stage string, ck planner.Check) { c.addAs(stage, stage, ck) }

// addAs is add with the message's prefix (the golden plan's name) apart from the stage.
func (c *checkLog) addAs(stage, prefix string, ck planner.Check) {
	if !ck.OK {
		c.fails++
	}
	c.line(Line{OK: ck.OK, Message: prefix + ": " + ck.Line, Stage: strings.ReplaceAll(stage, " ", "_"),
		Name: ck.Name, Subject: ck.Subject, Value: ck.Value, Limit: ck.Limit})
}

func (c *checkLog) line(cl Line) {
	c.checks = append(c.checks, cl)
	if c.io.JSONOutput() {
		return
	}
	tag := "FAIL"
	switch {
	case cl.Name == missCheck:
		tag = "MISS"
	case cl.OK:
		tag = "ok  "
	}
	fmt.Fprintf(c.io.Out, "%s %s: %s\n", tag, c.name, cl.Message)
}

// report prints the JSON report (--output json) and returns the exit status's error.
func (c *checkLog) report() error {
	if c.io.JSONOutput() {
		if err := c.io.WriteJSON(Report{Plan: c.name, OK: c.fails == 0, Failed: c.fails, Checks: c.checks}); err != nil {
			return err
		}
	}
	if c.fails > 0 {
		return run.CheckFailed(fmt.Errorf("%s: %d check(s) failed", c.name, c.fails))
	}
	return nil
}

// verifyPlan runs the checks every plan passes before it runs (systems.VerifyPlan: the
// system's verifier, the fleet record, the input digest): serve and simulate refuse a plan on
// the same list, so a plan check fails is never served.
func verifyPlan(lg *checkLog, ck planner.Checker, plan *formats.Plan) {
	for _, c := range systems.VerifyPlan(ck, plan) {
		lg.add("verify", c)
	}
}

func compare(lg *checkLog, stage, what string, cs []planner.Check) {
	for _, c := range cs {
		lg.addAs(stage, what, c)
	}
}

func pctDiff(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * (a - b) / b
}

// resolvePlan re-solves the plan; its only error is a missing solver (a set-up error, exit 2).
func resolvePlan(ctx context.Context, io *run.IO, lg *checkLog, ck planner.Checker, plan, golden *formats.Plan, limit time.Duration, tol float64) error {
	io.Infof("check %s: re-solving from the embedded inputs…", lg.name)
	re, err := predict.ResolveAtMargin(ctx, ck, plan, limit)
	if e, ok := solve.MissingSolver(err); ok {
		return e
	}
	if err != nil {
		lg.add("resolve", planner.Check{Line: strings.ReplaceAll(err.Error(), "\n", "; "), Name: "resolve"})
		return nil
	}
	if re.Provenance.InputDigest != plan.Provenance.InputDigest {
		lg.add("resolve", planner.Check{Line: fmt.Sprintf("input digest %s ≠ recorded %s", run.Short(re.Provenance.InputDigest), run.Short(plan.Provenance.InputDigest)), Name: "input_digest"})
	}
	pv := re.Provenance
	gap := "no bound" // the re-solve proved none (time limit before its LP finished)
	if pv.Gap != nil {
		gap = fmt.Sprintf("gap %.3f%%", *pv.Gap*100)
	}
	line := fmt.Sprintf("objective %.2f vs recorded %.2f (%+.2f%%; %s, %s)", pv.Objective, plan.Provenance.Objective, pctDiff(pv.Objective, plan.Provenance.Objective), pv.Status, gap)
	// The objective's sense is the system's: compare through Compare below; here a change
	// beyond the tolerance in either direction is reported, a worse one fails via Compare. No
	// limit: the recorded objective is a reference, not a bound.
	obj := pv.Objective
	lg.add("resolve", planner.Check{OK: true, Line: line, Name: "objective", Value: &obj})
	if vs, _ := ck.Verify(re); len(vs) > 0 {
		for _, v := range vs {
			lg.add("resolve", planner.Check{Line: "re-solved plan: " + v, Name: "constraint"})
		}
	}
	compare(lg, "resolve", "resolve", withFleet(ck.Compare(re, plan, tol), re, plan, tol))
	if golden != nil {
		compare(lg, "resolve vs golden", "resolve vs golden", withFleet(ck.Compare(re, golden, tol), re, golden, tol))
	}
	return nil
}

// missCheck names a predict-stage check that found an application missing its target at
// the rate the plan tells a user to size by: a MISS line (failed unless --allow-miss).
const missCheck = "miss"

// checkPrediction is plan check's predict stage: the plan simulated again at its own rates,
// from its own inputs, and every application held to its target at the rate the plan tells
// a user to size by (predict.SizeBy): the workload's rate for a plan sized to rates, the
// rate it sustains (sustained_rps) for a plan that states its throughput, whose stated rate
// is a capacity, past which attainment falls. An application that misses there is a MISS
// line and fails the check (--allow-miss reports it and passes), whatever the plan records:
// a plan written with --accept-miss misses. A recorded prediction must be reproduced within
// its sampling error, and a stated-throughput plan's sustained rate within tol, or, where
// this search stops lower, the recorded rate must hold again as the solve's search ran it
// (sim.Prediction.HoldsAt: searches over other loads part where attainment is not monotone
// in the rate).
// arrivals other than the recorded ones ("" = those) ask a new question: the recorded
// prediction answered another, so it is not compared.
func checkPrediction(ctx context.Context, reg *systems.Registry, lg *checkLog, plan *formats.Plan, arrivals string, allowMiss bool, tol float64) {
	recordedArrivals := predict.RecordedArrivals(plan)
	if arrivals == "" {
		arrivals = recordedArrivals
	}
	sp, err := predict.Start(ctx, reg, plan, arrivals, time.Time{})
	var pr *formats.Prediction
	if err == nil {
		pr, err = sp.Complete(ctx)
	}
	if err != nil {
		lg.add("predict", planner.Check{Line: err.Error(), Name: "prediction"})
		return
	}
	recorded := map[string]formats.AppPrediction{}
	if plan.Prediction != nil && pr.Arrivals == canonicalArrivals(recordedArrivals) {
		for _, a := range plan.Prediction.Apps {
			recorded[a.Name] = a
		}
	}
	basis := predict.BasisPhrase(pr)
	if n := predict.ArrivalsName(pr); n != "" {
		basis += ", " + n
	}
	for i, a := range pr.Apps {
		val, lim := a.Attainment, a.Target
		p99 := run.FmtLatencyMs(a.P99Ms)
		if e := a.LatencyError; e != nil {
			p99 += " " + e.P99.String()
		}
		line := fmt.Sprintf("%s: predicted attainment %.2f%% ± %.2f at %.4g req/s (%s), target %.0f%%, p99 %s; holds the target up to %.4g req/s",
			a.Name, 100*a.Attainment, 100*a.Margin, a.RateRPS, basis, 100*a.Target, p99, a.SustainedRPS)
		if b := predict.BindingPhrase(a); b != "" {
			val, lim, _ = predict.Binding(a)
			line = fmt.Sprintf("%s at %.4g req/s (%s); holds its SLOs up to %.4g req/s", b, a.RateRPS, basis, a.SustainedRPS)
			if e := predict.ExpectedErrorPhrase(a); e != "" {
				line += "; " + e
			}
		}
		if !a.Meets && a.Attainment >= a.Target && predict.BindingPhrase(a) == "" {
			line += "; below the target in a replication with other arrivals"
		}
		name, ok := "attainment", true
		rec, had := recorded[a.Name]
		stated := pr.Basis == formats.PredictionBasisStated
		switch {
		case had && rec.RateRPS != a.RateRPS:
			ok, line = false, line+fmt.Sprintf("; the plan recorded its prediction at %.4g req/s", rec.RateRPS)
		case had && a.Attainment < rec.Attainment-math.Max(rec.Margin, a.Margin):
			// The recorded verdict no longer holds (the plan, its inputs or the runtime
			// policy changed since it was written).
			ok, line, lim = false, line+fmt.Sprintf("; recorded %.2f%% ± %.2f", 100*rec.Attainment, 100*rec.Margin), rec.Attainment-math.Max(rec.Margin, a.Margin)
		case !stated && !a.Meets:
			name, ok = missCheck, allowMiss
			line = fmt.Sprintf("%s at %.4g req/s, the rate the plan is sized for: attainment %.2f%%, target %.0f%%: %s", a.Name, a.RateRPS, 100*a.Attainment, 100*a.Target, line)
		case stated && a.SustainedRPS <= 0:
			name, ok = missCheck, allowMiss
			line = fmt.Sprintf("%s at every rate tried down to %.4g req/s: attainment %.2f%% at its planned %.4g req/s, target %.0f%%: %s", a.Name, sim.PredictLowestLoad*a.RateRPS, 100*a.Attainment, a.RateRPS, 100*a.Target, line)
		case stated && had && rec.SustainedRPS > 0 && a.SustainedRPS < rec.SustainedRPS*(1-tol):
			// This search stopped below the recorded rate. Where the recorded rate holds
			// again as the solve's search ran it, the two searches parted over loads the
			// other did not try; where it does not, what a user sized by is no longer what
			// the plan sustains.
			load := math.Round(rec.SustainedRPS/a.RateRPS*1e4) / 1e4
			held, err := sp.HoldsAt(ctx, load, i)
			switch {
			case err != nil:
				ok, name = false, "sustained_rps"
				line += fmt.Sprintf("; it recorded sustaining %.4g req/s, which could not be run again: %v", rec.SustainedRPS, err)
			case held:
				line += fmt.Sprintf("; at the %.4g req/s it recorded sustaining every run holds the target again (this search's other loads found a miss between: attainment this close to the target is not monotone in the rate)", rec.SustainedRPS)
			default:
				ok, name = false, "sustained_rps"
				val, lim = a.SustainedRPS, rec.SustainedRPS*(1-tol)
				line += fmt.Sprintf("; it recorded sustaining %.4g req/s (tolerance %.2f%%), where a run now misses the target", rec.SustainedRPS, tol*100)
			}
		case stated && !a.Meets:
			line += fmt.Sprintf("; %.4g req/s, the rate it was simulated at, is a capacity past what it serves within its SLO: size by %.4g req/s", a.RateRPS, a.SustainedRPS)
		}
		if name == missCheck && allowMiss {
			line += " (--allow-miss)"
		}
		lg.add("predict", planner.Check{OK: ok, Line: line, Name: name, Subject: a.Name, Value: &val, Limit: &lim})
	}
}

// withFleet adds the cost comparison to a system's golden or re-solve comparison when the
// reference is a cost plan: the cost per hour may not rise above the reference's by more
// than the tolerance (and a plan without a fleet against one with it fails).
func withFleet(cs []planner.Check, got, ref *formats.Plan, tol float64) []planner.Check {
	if ref.Fleet == nil {
		return cs
	}
	if got.Fleet == nil {
		return append(cs, planner.Check{Line: "fleet: the reference is a cost plan (fleet), this plan has none", Name: "cost_per_hour"})
	}
	g, r := got.Fleet.CostPerHour, ref.Fleet.CostPerHour
	return append(cs, planner.AtMost("cost_per_hour", "", g, r, tol, run.AbsTol,
		fmt.Sprintf("fleet cost %.4g %s/h vs %.4g (tolerance %.2f%%): %s", g, got.Fleet.Currency, r, tol*100, fleet.Describe(got.Fleet))))
}

// canonicalArrivals is a recorded arrival process in the spelling a prediction records
// ("" and plans from before --arrivals: poisson); an unreadable one is returned as it is
// (then the new prediction, which failed on it, is not compared with it).
func canonicalArrivals(s string) string {
	if _, c, err := sim.PredictArrivals(s); err == nil {
		return c
	}
	return s
}
