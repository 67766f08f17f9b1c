package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner/ppipe"
)

type checkOptions struct {
	golden    string
	tolerance string
	resolve   bool
	timeLimit time.Duration
}

func init() { register(newCheckCmd) }

func newCheckCmd(app *App) *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check PLAN",
		Short: "Verify a plan, compare it with a golden plan, and re-solve it (CI regression gate)",
		Long: `check verifies a PPipe/NP/DART-r plan without the solver: every partition's stage latency and
transfer against the embedded profile and NIC bandwidth, each pipeline's latency against its
planning budget T' = SLO − round(α·SLO), the throughput arithmetic (stage = X·count, pipeline =
slowest stage, model = Σ pipelines), contiguous cuts covering all blocks, one profiled batch per
pipeline, and the GPU budget with physical rounding.

--golden F fails if any model's throughput fell below the golden plan's by more than
--tolerance. --resolve re-solves from the inputs embedded in the plan (same strategy and
options) and fails if the new plan's objective or per-model throughput is lower by more than
--tolerance; with --golden, the re-solved plan is compared with the golden plan too.
Throughputs are compared, never timings. Exit 0 = all checks pass, 1 = a check failed,
2 = the plan cannot be read. One line per check, fit for CI logs.`,
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

// checkLog prints "check NAME: ..." lines and counts failures.
type checkLog struct {
	app   *App
	name  string
	fails int
}

func (c *checkLog) ok(format string, a ...any) {
	fmt.Fprintf(c.app.Out, "ok   %s: %s\n", c.name, fmt.Sprintf(format, a...))
}

func (c *checkLog) fail(format string, a ...any) {
	c.fails++
	fmt.Fprintf(c.app.Out, "FAIL %s: %s\n", c.name, fmt.Sprintf(format, a...))
}

func runCheck(cmd *cobra.Command, app *App, o *checkOptions, path string) error {
	tol, err := parseTolerance(o.tolerance)
	if err != nil {
		return usageError(err)
	}
	if o.timeLimit < 0 {
		return usageErrorf("--time-limit: %s: must be > 0", o.timeLimit)
	}
	plan, invalid, err := readPlanForCheck(path)
	if err != nil {
		return usageError(err)
	}
	if plan.PPipe == nil {
		return usageErrorf("%s: ppipe: missing: plan check verifies PPipe, NP and DART-r plans", planName(path))
	}
	var golden *formats.Plan
	if o.golden != "" {
		if golden, err = formats.ReadInto[*formats.Plan](o.golden); err != nil {
			return usageError(err)
		}
		if golden.PPipe == nil {
			return usageErrorf("%s: ppipe: missing: not a PPipe plan", planName(o.golden))
		}
	}
	lg := &checkLog{app: app, name: planName(path)}
	for _, fe := range invalid {
		fe.File = ""
		lg.fail("format: %s", fe)
	}
	verifyPlan(lg, plan)
	if golden != nil {
		compareThroughput(lg, "golden "+planName(o.golden), plan, golden, tol)
	}
	if o.resolve {
		if err := resolvePlan(cmd, app, lg, plan, golden, o, tol); err != nil {
			return err
		}
	}
	if lg.fails > 0 {
		return checkFailed(fmt.Errorf("%s: %d check(s) failed", planName(path), lg.fails))
	}
	return nil
}

// readPlanForCheck reads a plan for checking. A file that decodes but breaks the format's
// semantic rules (a budget overrun, non-contiguous cuts, …) is exactly what check must
// report as failed checks (exit 1), so those rules come back as a list instead of an error;
// only unreadable files (syntax, unknown fields, wrong kind) are errors (exit 2).
func readPlanForCheck(path string) (*formats.Plan, formats.ErrorList, error) {
	plan, err := formats.ReadInto[*formats.Plan](path)
	if err == nil {
		return plan, nil, nil
	}
	var list formats.ErrorList
	if errors.Is(err, formats.ErrDecode) || !errors.As(err, &list) {
		return nil, nil, err
	}
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		return nil, nil, rerr
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p formats.Plan
	if derr := dec.Decode(&p); derr != nil || p.Kind != formats.KindPlan {
		return nil, nil, err
	}
	return &p, list, nil
}

func verifyPlan(lg *checkLog, plan *formats.Plan) {
	vs := ppipe.Verify(plan)
	for _, v := range vs {
		lg.fail("verify: %s", v)
	}
	if len(vs) == 0 {
		n := 0
		for _, m := range plan.PPipe.Models {
			n += len(m.Pipelines)
		}
		lg.ok("verify: %s plan, %d model(s), %d pipeline(s): GPU budget, latency ≤ budget, throughput arithmetic, contiguous cuts, batches", plan.PPipe.Strategy, len(plan.PPipe.Models), n)
	}
	if e := plan.Provenance.Embedded; e != nil && plan.Provenance.InputDigest != "" {
		d, err := formats.Digest(e)
		switch {
		case err != nil:
			lg.fail("verify: input digest: %v", err)
		case d != plan.Provenance.InputDigest:
			lg.fail("verify: input digest: embedded inputs hash to %s, the plan records %s (inputs edited after solving)", short(d), short(plan.Provenance.InputDigest))
		}
	}
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}

// compareThroughput fails for each model whose throughput dropped below ref by more than tol.
// Plans of several models are max-min: the weight-normalised worst model is the objective,
// and a model's surplus above it is arbitrary, so those compare the objective instead.
func compareThroughput(lg *checkLog, what string, got, ref *formats.Plan, tol float64) {
	refBy := map[string]formats.PPipeModelPlan{}
	for _, m := range ref.PPipe.Models {
		refBy[m.Model] = m
	}
	gotBy := map[string]formats.PPipeModelPlan{}
	for _, m := range got.PPipe.Models {
		gotBy[m.Model] = m
	}
	names := make([]string, 0, len(refBy))
	for n := range refBy {
		names = append(names, n)
	}
	sort.Strings(names)
	multi := len(ref.PPipe.Models) > 1
	for _, n := range names {
		r := refBy[n]
		g, ok := gotBy[n]
		if !ok {
			lg.fail("%s: model %s: missing from the plan", what, n)
			continue
		}
		if multi {
			continue
		}
		line := fmt.Sprintf("%s: model %s: %.2f rps vs %.2f rps (%+.2f%%, tolerance %.2f%%)", what, n, g.ThroughputRPS, r.ThroughputRPS, pctDiff(g.ThroughputRPS, r.ThroughputRPS), tol*100)
		if g.ThroughputRPS < r.ThroughputRPS*(1-tol) {
			lg.fail("%s", line)
		} else {
			lg.ok("%s", line)
		}
	}
	if multi {
		gz, rz := maxMin(got.PPipe), maxMin(ref.PPipe)
		line := fmt.Sprintf("%s: worst weighted throughput (max-min objective) %.2f vs %.2f (%+.2f%%, tolerance %.2f%%)", what, gz, rz, pctDiff(gz, rz), tol*100)
		if gz < rz*(1-tol) {
			lg.fail("%s", line)
		} else {
			lg.ok("%s", line)
		}
	}
}

func maxMin(pp *formats.PPipePlan) float64 {
	z := math.Inf(1)
	for _, m := range pp.Models {
		w := m.Weight
		if w <= 0 {
			w = 1
		}
		z = math.Min(z, m.ThroughputRPS/w)
	}
	return z
}

func pctDiff(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * (a - b) / b
}

// resolveOptions rebuilds the solve options recorded in a plan's provenance.
func resolveOptions(plan *formats.Plan, timeLimit time.Duration) (ppipe.Options, error) {
	rec := plan.Provenance.Options
	o := ppipe.Options{Strategy: plan.PPipe.Strategy, MaxPartitions: plan.PPipe.MaxPartitions, Alpha: plan.PPipe.SLOMargin, Deterministic: true}
	if o.Alpha == 0 {
		o.Alpha = -1
	}
	var errs []string
	if v, ok := rec["max_partitions"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, "max_partitions: "+v)
		}
		o.MaxPartitions = n
	}
	if v, ok := rec["gap"]; ok {
		g, err := strconv.ParseFloat(v, 64)
		if err != nil {
			errs = append(errs, "gap: "+v)
		}
		o.Gap = g
	}
	if v, ok := rec["time_limit"]; ok && timeLimit == 0 {
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, "time_limit: "+v)
		}
		o.TimeLimit = d
	}
	if timeLimit > 0 {
		o.TimeLimit = timeLimit
	}
	o.Rounding = rec["rounding"]
	o.BatchAllowance = rec["batch_allowance"] == "true"
	o.NoWarmStart = rec["warm_start"] == "false"
	// Plans written before the option existed had no surplus filling.
	o.FillSurplus = rec["fill_surplus"] == "true"
	if v, ok := rec["replicas"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, "replicas: "+v)
		}
		o.Replicas = n
	}
	if len(errs) > 0 {
		return o, fmt.Errorf("provenance.options: unreadable values: %s", strings.Join(errs, ", "))
	}
	return o, nil
}

func resolvePlan(cmd *cobra.Command, app *App, lg *checkLog, plan, golden *formats.Plan, o *checkOptions, tol float64) error {
	e := plan.Provenance.Embedded
	if e == nil || e.Cluster == nil || len(e.Profiles) == 0 {
		lg.fail("resolve: provenance.embedded holds no inputs: cannot re-solve")
		return nil
	}
	opts, err := resolveOptions(plan, o.timeLimit)
	if err != nil {
		return usageErrorf("%s: %v", lg.name, err)
	}
	in := ppipe.Inputs{Cluster: e.Cluster, Workload: e.Workload}
	for i := range e.Profiles {
		in.Profiles = append(in.Profiles, &e.Profiles[i])
	}
	app.Infof("check %s: re-solving (%s, P=%d, time limit %s)…", lg.name, opts.Strategy, opts.MaxPartitions, opts.TimeLimit)
	re, err := ppipe.Solve(cmd.Context(), in, opts)
	if err != nil {
		lg.fail("resolve: %v", strings.ReplaceAll(err.Error(), "\n", "; "))
		return nil
	}
	if re.Provenance.InputDigest != plan.Provenance.InputDigest {
		lg.fail("resolve: input digest %s ≠ recorded %s", short(re.Provenance.InputDigest), short(plan.Provenance.InputDigest))
	}
	pv := re.Provenance
	line := fmt.Sprintf("resolve: objective %.2f vs recorded %.2f (%+.2f%%; %s, gap %.3f%%)", pv.Objective, plan.Provenance.Objective, pctDiff(pv.Objective, plan.Provenance.Objective), pv.Status, pv.Gap*100)
	if pv.Objective < plan.Provenance.Objective*(1-tol) {
		lg.fail("%s", line)
	} else {
		lg.ok("%s", line)
	}
	if vs := ppipe.Verify(re); len(vs) > 0 {
		for _, v := range vs {
			lg.fail("resolve: re-solved plan: %s", v)
		}
	}
	compareThroughput(lg, "resolve", re, plan, tol)
	if golden != nil {
		compareThroughput(lg, "resolve vs golden", re, golden, tol)
	}
	return nil
}
