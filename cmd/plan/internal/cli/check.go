package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/systems"
	"github.com/plan-dev/plan/planner"
)

type checkOptions struct {
	golden    string
	tolerance string
	resolve   bool
	timeLimit time.Duration
}

func newCheckCmd(app *App) *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check PLAN",
		Short: "Verify a plan, compare it with a golden plan, and re-solve it (CI regression gate)",
		Long: `check verifies a plan with its system's verifier, without the solver. PPipe/NP/DART-r:
every partition's stage latency and transfer against the embedded profile and NIC bandwidth,
each pipeline's latency against its planning budget T' = SLO − round(α·SLO), the throughput
arithmetic (stage = X·count, pipeline = slowest stage, model = Σ pipelines), contiguous cuts
covering all blocks, one profiled batch per pipeline, and the GPU budget with physical
rounding. PARD: every module's model and profiled latency, workers covering the rate, Σ2·d ≤
f·SLO on every path, and the GPUs per type. CascadeServe: every gear's models placed, memory
per GPU, shares summing to 1, gears covering [0, qps_max] contiguously, each gear's accuracy
and work against a replay of the validation records, and the latency or accuracy SLO. QLM:
every instance's model profiled on its GPU and fitting its memory, every class's model
hosted or hostable, queued groups naming known classes, expected decode load per instance
below 1. DyOrc: placement GPUs exist and hold their models' memory, every workflow service
placed, replica counts equal to the placement, batches within each service's max_batch. A
cost plan (--objective cost): its fleet record against its sections, cluster and prices.

Then (predict) it simulates the plan at its own rates, as plan solve did before writing it
(its runtime policy, Poisson arrivals, seed 1): every application must meet its target (99%,
or its SLO's percentile) at the workload's rates, and a prediction the plan records must be
reproduced within its sampling error. A miss the plan records (--accept-miss), or a stated
throughput past what the plan serves (a PPipe or cascade plan), passes with the rate it does
sustain; a plan that fails verification is not simulated.

--golden F compares per model (PPipe: every model's throughput, and the max-min objective of
multi-model plans) or per application (PARD: GPUs and provisioned rate) and fails on a loss
beyond --tolerance. --resolve re-solves from the inputs embedded in the plan (same strategy
and options) and fails if the new plan's objective or per-model results are worse by more than
--tolerance; with --golden, the re-solved plan is compared with the golden plan too.
Throughputs are compared, never timings. Exit 0 = all checks pass, 1 = a check failed,
2 = bad input: a plan or golden plan that cannot be read or that 'plan validate' rejects
(every problem is printed, as validate prints it). One line per check, fit for CI logs;
with --output json one object {plan, ok, failed, checks: [{ok, message, stage, name,
subject, value, limit}]}: stage is verify, predict, golden, resolve or resolve_vs_golden; name what
was checked (throughput_rps, gpus, ...); subject the model, application or task ("" = the
whole plan); value the measured number and limit the bound it was held to, the reference
with --tolerance applied (null where no number applies).`,
		Example: `  plan check plan.json
  plan check plan.json --golden testdata/golden/demo-ppipe.json --tolerance 1%
  plan check testdata/golden/demo-ppipe.json --golden testdata/golden/demo-ppipe.json --resolve`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runCheck(cmd, app, o, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&o.golden, "golden", "", "golden plan to compare per-model throughput with")
	f.StringVar(&o.tolerance, "tolerance", "1%", "allowed relative throughput drop: 1% or 0.01")
	f.BoolVar(&o.resolve, "resolve", false, "re-solve from the plan's embedded inputs and compare")
	f.DurationVar(&o.timeLimit, "time-limit", 0, "time limit of the re-solve (default: the plan's recorded limit)")
	return cmd
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
	app    *App
	name   string
	fails  int
	checks []checkLine
}

// checkLine is one check's outcome in `plan check --output json`: beside the verdict and the
// message a person reads, what a CI script needs without parsing prose: the
// stage that ran it (verify, golden, resolve, resolve_vs_golden), the check's name, the model,
// application or task it concerns ("" = the whole plan), the measured value and the limit it
// was held to (null where no number applies).
type checkLine struct {
	OK      bool     `json:"ok"`
	Message string   `json:"message"`
	Stage   string   `json:"stage"`
	Name    string   `json:"name"`
	Subject string   `json:"subject"`
	Value   *float64 `json:"value"`
	Limit   *float64 `json:"limit"`
}

// checkReport is the whole of `plan check --output json`.
type checkReport struct {
	Plan   string      `json:"plan"`
	OK     bool        `json:"ok"`
	Failed int         `json:"failed"`
	Checks []checkLine `json:"checks"`
}

// add records one check of stage; its message is "stage: line" as the text output prints it.
func (c *checkLog) add(stage string, ck planner.Check) { c.addAs(stage, stage, ck) }

// addAs is add with the message's prefix (the golden plan's name) apart from the stage.
func (c *checkLog) addAs(stage, prefix string, ck planner.Check) {
	if !ck.OK {
		c.fails++
	}
	c.line(checkLine{OK: ck.OK, Message: prefix + ": " + ck.Line, Stage: strings.ReplaceAll(stage, " ", "_"),
		Name: ck.Name, Subject: ck.Subject, Value: ck.Value, Limit: ck.Limit})
}

func (c *checkLog) line(cl checkLine) {
	c.checks = append(c.checks, cl)
	if c.app.JSONOutput() {
		return
	}
	tag := "FAIL"
	if cl.OK {
		tag = "ok  "
	}
	fmt.Fprintf(c.app.Out, "%s %s: %s\n", tag, c.name, cl.Message)
}

// report prints the JSON report (--output json) and returns the exit status's error.
func (c *checkLog) report() error {
	if c.app.JSONOutput() {
		if err := c.app.WriteJSON(checkReport{Plan: c.name, OK: c.fails == 0, Failed: c.fails, Checks: c.checks}); err != nil {
			return err
		}
	}
	if c.fails > 0 {
		return run.CheckFailed(fmt.Errorf("%s: %d check(s) failed", c.name, c.fails))
	}
	return nil
}

func runCheck(cmd *cobra.Command, app *App, o *checkOptions, path string) error {
	tol, err := parseTolerance(o.tolerance)
	if err != nil {
		return run.UsageError(err)
	}
	if o.timeLimit < 0 {
		return run.UsageErrorf("--time-limit: %s: must be > 0", o.timeLimit)
	}
	// A plan that validate rejects is bad input here too (exit 2), never a failed check.
	plan, err := formats.ReadIntoWith[*formats.Plan](path, app.Systems.Sections())
	if err != nil {
		return run.UsageError(err)
	}
	sys, err := app.Systems.ForPlan(plan)
	if err != nil {
		return run.UsageErrorf("%s: %v", path, err)
	}
	if sys.Checker == nil {
		return run.UsageErrorf("%s: %s: system %s has no plan checker yet", path, sys.PlanSection, sys.Name)
	}
	var golden *formats.Plan
	if o.golden != "" {
		if golden, err = formats.ReadIntoWith[*formats.Plan](o.golden, app.Systems.Sections()); err != nil {
			return run.UsageError(err)
		}
		if !sys.HasPlan(golden) {
			return run.UsageErrorf("%s: %s: missing: the golden plan is not a %s plan like %s", o.golden, sys.PlanSection, sys.Name, path)
		}
	}
	lg := &checkLog{app: app, name: planName(path)}
	verifyPlan(lg, sys.Checker, plan)
	if lg.fails == 0 { // a plan that fails verification is not deployed, so not simulated
		checkPrediction(cmd, app, lg, plan)
	}
	if golden != nil {
		compare(lg, "golden", "golden "+planName(o.golden), withFleet(sys.Checker.Compare(plan, golden, tol), plan, golden, tol))
	}
	if o.resolve {
		if err := resolvePlan(cmd, app, lg, sys.Checker, plan, golden, o, tol); err != nil {
			return err
		}
	}
	return lg.report()
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
func resolvePlan(cmd *cobra.Command, app *App, lg *checkLog, ck planner.Checker, plan, golden *formats.Plan, o *checkOptions, tol float64) error {
	app.Infof("check %s: re-solving from the embedded inputs…", lg.name)
	re, err := resolveAtMargin(cmd.Context(), ck, plan, o.timeLimit)
	if e, ok := missingSolver(err); ok {
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
