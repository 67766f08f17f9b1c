package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/demo"
	progressline "github.com/plan-dev/plan/internal/progress"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

type solveOptions struct {
	profiles      []string
	cluster       string
	workload      string
	slo           time.Duration
	strategy      string
	timeLimit     time.Duration
	gap           float64
	out           string
	deterministic bool
	objective     string
	// profileFit is --profile-fit: outliers (the default; "" where a command has no such
	// flag) or none.
	profileFit string
	win        windowOptions
	acceptMiss bool
	// spot is --spot SHARE (with --objective cost).
	spot spotFlag
}

// commonSolveFlags are the flags every planner takes; the rest belong to one planner each.
var commonSolveFlags = append([]string{"profile", "cluster", "workload", "slo", "strategy", "time-limit", "gap", "out", "deterministic", "objective", "spot", "profile-fit", "accept-miss"}, windowSolveFlags...)

func newSolveCmd(app *App) *cobra.Command {
	o := &solveOptions{}
	cmd := &cobra.Command{
		Use:   "solve",
		Short: "Solve for a serving plan with the planner of the workload's system",
		Long: `solve plans the workload with the planner of the system its sections belong to (the
systems table of plan --help and plan systems), solving MILPs with HiGHS, and writes plan.json
atomically:

` + plannersHelp(app.Systems) + `
Without --profile/--cluster it uses the embedded demo (a small CNN on 4×L4 + 12×P4). Without
--workload every profiled model is served with weight 1 (PPipe). The SLO of a model is --slo
if given, else its workload slo, else 5 × its batch-1 whole-model latency on L4.

Each planner takes the flags of every planner and its own (listed below per system, with that
system's defaults); a flag the workload's planner does not take is an error (exit 2). The plan
records the options it was solved with (provenance.options), which plan check --resolve
re-uses. When the time limit is reached the best plan found so far is written together with
its proven gap. An SLO no plan can meet exits 2 and names the smallest feasible SLO; so does
a plan that would miss its target on the GPUs given (an accuracy or latency SLO, a model's
rate_rps, a load the cluster cannot carry), naming the best attainable value and what would
reach the target. Profiles are planned on their measured latencies: a point more than 25%
out of monotone order with its neighbours (a dip below the batch before it, a spike above the
batch after it) is an outlier, named on stderr (file, model, GPU, batch, measured → used) and
planned on at its neighbours' curve; the plan keeps the measured value beside it (raw_block_us,
raw_total_us) and records fit: outliers, or fit: none when every value is as measured.
--profile-fit none plans on every measured value, outliers included.

Before writing, solve simulates the plan at its own rates (its runtime policy, Poisson
arrivals, seed 1, long enough for 2,000 requests of each application) and records the
prediction in the plan: per application the attainment and its sampling error, drops, late
answers, p50/p90/p99 latency (TTFT and TPOT for LLM classes) and the rate up to which it holds
its target. Load 1 is the workload's rate where it gives one, else the throughput the plan
states (a PPipe throughput plan, a cascade's QPS range: a miss there is reported with the rate
the plan does sustain). A plan sized for the workload's rates that misses an application's
target (99%, or the percentile its SLO is stated at) is solved again for 1.1, 1.25, 1.5 and 2×
the rates (provenance.rate_margin); if none meets, solve exits 2 naming the application, its
predicted and target attainment and the rate it does sustain; --accept-miss writes it anyway,
the miss in its prediction. plan check re-runs the prediction.`,
		Example: `  plan solve --slo 200ms
  plan solve --profile profile.json --cluster cluster.yaml --workload workload.yaml -o plan.json
  plan solve --strategy np -o np.json          # PPipe's baselines: np, dart-r
  plan solve --max-partitions 2 --time-limit 30s --gap 0.01
  plan solve --profile testdata/pard/profile.json --cluster testdata/pard/cluster.json --workload testdata/pard/workload.json -o pard.json
  plan solve --profile testdata/qlm/profile.json --cluster testdata/qlm/cluster.yaml --workload testdata/qlm/workload.yaml -o qlm.json
  plan solve --cluster testdata/dyorc/cluster-small.json --workload testdata/dyorc/small.json -o dyorc.json
  plan solve --output json | jq .ppipe.models[0].throughput_rps
  plan solve --objective cost --profile profile.json --workload w.yaml --cluster c.yaml --trace day.csv --window 1h -o schedule.json   # a least-cost plan per hour
  plan solve --objective cost --spot 0.5 --profile testdata/cost/llm-profile.json --cluster testdata/cost/cluster-llm-spot.yaml --workload testdata/cost/workload-llm-busy.yaml -o spot.json   # up to half of each type's GPUs on spot`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSolve(cmd, app, o) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.profiles, "profile", nil, "profile file (repeatable; default: the embedded demo profile)")
	f.StringVar(&o.cluster, "cluster", "", "cluster file (default: the embedded demo cluster, 4×L4 + 12×P4)")
	f.StringVar(&o.workload, "workload", "", "workload file; its sections pick the planner (default: every profiled model, weight 1, PPipe)")
	f.DurationVar(&o.slo, "slo", 0, "SLO for every model, overriding the workload (default: 5 × batch-1 L4 latency)")
	f.StringVar(&o.strategy, "strategy", "", "the planner's algorithm or baseline (default: the system's own; PPipe: ppipe, np, dart-r)")
	f.DurationVar(&o.timeLimit, "time-limit", planner.DefaultTimeLimit, "solver time limit; the best plan so far is written on expiry")
	f.Float64Var(&o.gap, "gap", planner.DefaultGap, "relative MIP gap at which to stop (0.001 = 0.1%)")
	f.StringVarP(&o.out, "out", "o", "plan.json", "where to write the plan")
	addObjectiveFlag(f, &o.objective)
	addSpotFlag(f, &o.spot)
	addWindowFlags(f, &o.win)
	f.StringVar(&o.profileFit, "profile-fit", formats.FitOutliers, "outliers: replace measured points more than 25% out of monotone order by their neighbours' curve; none: plan on every measured value")
	f.BoolVar(&o.deterministic, "deterministic", false, "record solve_ms as 0 so identical inputs give byte-identical plans (golden files)")
	f.BoolVar(&o.acceptMiss, "accept-miss", false, "write the plan even when its simulation at its own rates misses an application's target (the miss is recorded in the plan's prediction)")
	// Every planner's own flags, each defined once for parsing; after parsing, the chosen
	// planner gets the values given (its own defaults otherwise). The usage lists them per
	// system with each system's defaults.
	for _, s := range app.Systems.Systems() {
		plannerFlagSet(s).VisitAll(func(fl *pflag.Flag) {
			if f.Lookup(fl.Name) == nil {
				c := *fl
				f.AddFlag(&c)
			}
		})
	}
	cmd.SetUsageFunc(func(c *cobra.Command) error { return solveUsage(c, app.Systems) })
	return cmd
}

// loadSolveInputs reads the input files (or the embedded demo); every problem is a usage error.
// Every profile file is planned on its measured values but for the outliers formats.FitProfile
// replaces (none with --profile-fit none): the plan embeds the values used
// with the measured ones beside them, and warn reports each point off the fit (file, model,
// GPU, batch, measured → used). The input's digest is the file's, as measured. The embedded
// demo is a roofline estimate, not a measurement: it is planned as it is.
func loadSolveInputs(o *solveOptions, secs *formats.SectionSet, warn func(string)) (planner.Inputs, error) {
	var in planner.Inputs
	if o.profileFit != "" && o.profileFit != formats.FitOutliers && o.profileFit != formats.FitNone {
		return in, run.UsageErrorf("--profile-fit: %q: must be %s or %s", o.profileFit, formats.FitOutliers, formats.FitNone)
	}
	ref := func(kind, path string, doc any) error {
		d, err := formats.Digest(doc)
		if err != nil {
			return err
		}
		in.Refs = append(in.Refs, formats.InputRef{Kind: kind, Path: path, Digest: d})
		return nil
	}
	if len(o.profiles) == 0 {
		p, err := demo.Profile()
		if err != nil {
			return in, err
		}
		in.Profiles = append(in.Profiles, p)
		if err := ref(formats.KindProfile, "demo:profile", p); err != nil {
			return in, err
		}
	}
	for _, path := range o.profiles {
		p, err := formats.ReadInto[*formats.Profile](path)
		if err != nil {
			return in, run.UsageError(err)
		}
		if err := ref(formats.KindProfile, path, p); err != nil {
			return in, err
		}
		if o.profileFit == formats.FitNone {
			formats.PlanAsMeasured(p)
		} else {
			for _, w := range formats.FitProfile(p) {
				warn(fmt.Sprintf("%s: %s", path, w))
			}
		}
		in.Profiles = append(in.Profiles, p)
	}
	if o.cluster == "" {
		c, err := demo.Cluster()
		if err != nil {
			return in, err
		}
		in.Cluster = c
		if err := ref(formats.KindCluster, "demo:cluster", c); err != nil {
			return in, err
		}
	} else {
		c, err := formats.ReadInto[*formats.Cluster](o.cluster)
		if err != nil {
			return in, run.UsageError(err)
		}
		in.Cluster = c
		if err := ref(formats.KindCluster, o.cluster, c); err != nil {
			return in, err
		}
	}
	if o.workload != "" {
		w, err := formats.ReadIntoWith[*formats.Workload](o.workload, secs)
		if err != nil {
			return in, run.UsageError(err)
		}
		if err := loadRecordFiles(w, o.workload, secs); err != nil { // a cascade's validation_file, test_file
			return in, err
		}
		in.Workload = w
		if err := ref(formats.KindWorkload, o.workload, w); err != nil {
			return in, err
		}
	}
	return in, nil
}

func runSolve(cmd *cobra.Command, app *App, o *solveOptions) error {
	if o.out == "" {
		return run.UsageErrorf("--out: must not be empty")
	}
	if o.timeLimit <= 0 {
		return run.UsageErrorf("--time-limit: %s: must be > 0", o.timeLimit)
	}
	fl := cmd.Flags()
	if fl.Changed("gap") && o.gap == 0 {
		return run.UsageErrorf("--gap: 0: must be in (0, 1)")
	}
	if fl.Changed("slo") && o.slo == 0 {
		return run.UsageErrorf("--slo: 0s: must be > 0 (leave it out for the workload's or the default SLO)")
	}
	if err := formats.CheckWritable(o.out); err != nil {
		return run.UsageErrorf("--out: %q: %v", o.out, err)
	}
	in, err := loadSolveInputs(o, app.Systems.Sections(), func(s string) { fmt.Fprintf(app.Err, "warning: %s\n", s) })
	if err != nil {
		return err
	}
	sys, err := app.Systems.ForWorkload(in.Workload)
	if err != nil {
		name := "workload"
		if o.workload != "" {
			name = o.workload
		}
		return run.UsageErrorf("%s: %v", name, err)
	}
	if err := checkStrategy("strategy", o.strategy, sys); err != nil {
		return err
	}
	pl := sys.NewPlanner()
	pfs := pflag.NewFlagSet(sys.Name, pflag.ContinueOnError)
	pl.Flags(pfs)
	var ferr error
	fl.Visit(func(f *pflag.Flag) {
		if ferr != nil || slices.Contains(commonSolveFlags, f.Name) || cmd.InheritedFlags().Lookup(f.Name) != nil {
			return
		}
		if pfs.Lookup(f.Name) == nil {
			var takes []string
			pfs.VisitAll(func(x *pflag.Flag) { takes = append(takes, "--"+x.Name) })
			ferr = run.UsageErrorf("--%s: the %s planner (chosen by the workload's sections) does not take it; it takes %s", f.Name, sys.Name, strings.Join(takes, ", "))
			return
		}
		if err := pfs.Set(f.Name, f.Value.String()); err != nil {
			ferr = run.UsageErrorf("--%s: %v", f.Name, err)
		}
	})
	if ferr != nil {
		return ferr
	}
	settings := planner.Settings{SLO: o.slo, Strategy: o.strategy, TimeLimit: o.timeLimit, Gap: o.gap,
		Deterministic: o.deterministic, ToolVersion: buildVersion().Version}
	if err := applyObjective(app, o, in, &settings); err != nil {
		return err
	}
	if o.win.windowed(fl) { // a schedule of plans, one per window
		return runSolveWindows(cmd, app, o, sys, pl, in, settings)
	}
	// On a terminal a status line shows at once (a MILP may report nothing for seconds) and
	// the solver's lines go above it; piped, the solver's lines as they come and the summary
	// on stdout; --quiet, none (internal/progress).
	task := progressline.NewStatus(app.Err, app.Quiet, "solve "+sys.Name)
	pr := &progressPrinter{app: app, task: task}
	if !app.Quiet {
		settings.Progress = pr.report
	}
	task.Note("solving")
	plan, err := solvePredicted(cmd.Context(), app.Systems, pl, in, settings, func(s string) {
		if !app.Quiet {
			task.Println("solve: " + s)
		}
	})
	task.Clear()
	reportPlanner(app, pl)
	if err != nil {
		return solveError(withFileNames(err, o, sys))
	}
	if settings.Objective == planner.ObjectiveCost && plan.Fleet == nil {
		return run.UsageErrorf("--objective cost: the %s planner has no cost objective yet (nothing written)", sys.Name)
	}
	if pr := plan.Prediction; !pr.Meets && pr.Basis == formats.PredictionBasisRates && !o.acceptMiss {
		return run.UsageErrorf("the plan misses its target at the workload's rates, in simulation: %s (nothing written; --accept-miss writes it with the miss recorded)",
			strings.Join(predictionMisses(pr), "; "))
	}
	if err := formats.WriteFileWith(o.out, plan, app.Systems.Sections()); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	reportFleet(app, plan)
	pv := plan.Provenance
	if pv.Solver != "" && statusClaim(pv) != "optimal" {
		fmt.Fprintf(app.Err, "plan: %s: wrote the best plan found; objective %.4g, %s\n", pv.Status, pv.Objective, boundGap(pv, "%.2f"))
	}
	if app.JSONOutput() {
		return app.WriteJSON(plan)
	}
	if sys.Render != nil {
		for i, t := range sys.Render(plan) {
			if i > 0 {
				fmt.Fprintln(app.Out)
			}
			app.Table(t.Header, t.Rows)
		}
	}
	fmt.Fprintf(app.Out, "\n%s\n", predictionLine(plan.Prediction))
	fmt.Fprintln(app.Out, summaryLine(sys.Name, pv))
	switch pr := plan.Prediction; {
	case pr.Meets:
	case pr.Basis == formats.PredictionBasisStated:
		// The plan states what its pipelines carry; what it serves within the SLO is less,
		// and both are in the plan (a note, not a miss: no rate was asked of it).
		app.Infof("%s", app.Bold("note: the plan's stated throughput is past what it serves within its SLO: "+strings.Join(predictionMisses(pr), "; ")))
	default:
		fmt.Fprintf(app.Err, "warning: %s\n", app.Bold("MISS written with --accept-miss: "+strings.Join(predictionMisses(pr), "; ")))
	}
	app.Infof("wrote %s", o.out)
	return nil
}

// solveError maps planner errors onto the exit-code contract: bad input or an infeasible
// SLO exit 2, anything else (no solution in time, solver failure) exits 1.
func solveError(err error) error {
	if e, ok := missingSolver(fmt.Errorf("%w (nothing written)", err)); ok {
		return e
	}
	switch {
	case errors.Is(err, planner.ErrInput), errors.Is(err, planner.ErrInfeasible):
		return run.UsageError(err)
	case errors.Is(err, solver.ErrCanceled):
		return run.CheckFailed(fmt.Errorf("interrupted: %w (nothing written)", err))
	default:
		return run.CheckFailed(fmt.Errorf("%w (nothing written)", err))
	}
}

// withFileNames replaces the planner's "cluster:", "workload:" and "profile:" prefixes with
// the files the user gave, so messages read `cluster.yaml: gpus: ...: rule`.
func withFileNames(err error, o *solveOptions, sys system.System) error {
	var ie *planner.InputError
	if !errors.As(err, &ie) {
		return systemFileNames(err, o, sys)
	}
	names := map[string]string{"cluster": "demo cluster", "workload": "workload", "profile": "demo profile"}
	if o.cluster != "" {
		names["cluster"] = o.cluster
	}
	if o.workload != "" {
		names["workload"] = o.workload
	}
	if len(o.profiles) == 1 {
		names["profile"] = o.profiles[0]
	} else if len(o.profiles) > 1 {
		names["profile"] = "profiles"
	}
	for i, f := range o.profiles {
		names[fmt.Sprintf("profile[%d]", i)] = fmt.Sprintf("%s (--profile #%d)", f, i+1)
	}
	out := &planner.InputError{}
	for _, p := range ie.Problems {
		for k, v := range names {
			if rest, ok := strings.CutPrefix(p, k+": "); ok {
				p = v + ": " + rest
				break
			}
		}
		out.Problems = append(out.Problems, p)
	}
	return out
}

// progressPrinter prints one progress line per new incumbent and at most one per second
// otherwise, as plain lines (fit for CI logs as well as terminals).
type progressPrinter struct {
	app     *App
	task    *progressline.Task
	mu      sync.Mutex
	last    time.Time
	lastInc float64
	phase   string
}

func (p *progressPrinter) report(pr planner.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	improved := pr.HasIncumbent && pr.Incumbent != p.lastInc
	if !improved && pr.Phase == p.phase && now.Sub(p.last) < time.Second {
		return
	}
	p.last, p.phase = now, pr.Phase
	inc := "-"
	if pr.HasIncumbent {
		inc = fmt.Sprintf("%.4g", pr.Incumbent)
		p.lastInc = pr.Incumbent
	}
	gap := "-"
	if !math.IsInf(pr.Gap, 0) && !math.IsNaN(pr.Gap) {
		gap = fmt.Sprintf("%.2f%%", pr.Gap*100)
	}
	line := fmt.Sprintf("solve %-10s %6.1fs  incumbent %-9s bound %-9.4g gap %-8s nodes %d", pr.Phase, pr.Elapsed.Seconds(), inc, pr.Bound, gap, pr.Nodes)
	if p.task == nil {
		fmt.Fprintln(p.app.Err, line)
		return
	}
	p.task.Println(line)
	p.task.Note(fmt.Sprintf("%s, incumbent %s, gap %s", pr.Phase, inc, gap))
}

// boundGap is "bound B, gap G%" (G in the format gapFmt), or "no bound" where the solver
// proved none: a time limit hit before the LP relaxation finished leaves the plan without
// bound and gap, and the line says so rather than printing +Inf or NaN.
func boundGap(pv formats.Provenance, gapFmt string) string {
	if pv.Bound == nil {
		return "no bound"
	}
	s := fmt.Sprintf("bound %.4g", *pv.Bound)
	if pv.Gap != nil {
		s += fmt.Sprintf(", gap "+gapFmt+"%%", *pv.Gap*100)
	}
	return s
}

// summaryLine is solve's last line. It says "optimal" only where the plan proves it
// (statusClaim): a plan no solver produced (QLM's placement is a greedy heuristic, QLM §5)
// or one that proved no bound says "heuristic" and prints no bound or gap; a bound with a
// gap above the tolerance says "best found, gap G%". The solver's version closes the line
// only where the plan records one, so no line ends in an empty "()".
func summaryLine(system string, pv formats.Provenance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s plan (strategy %s): ", system, pv.Strategy)
	switch claim := statusClaim(pv); {
	case claim == "heuristic":
		fmt.Fprintf(&b, "heuristic, objective %.4g, no bound, ", pv.Objective)
		if pv.Solver != "" {
			fmt.Fprintf(&b, "%d nodes, ", pv.Nodes)
		}
		b.WriteString(run.FmtMs(pv.SolveMs))
	case claim == "optimal":
		fmt.Fprintf(&b, "optimal, objective %.4g, %s, %d nodes, %s", pv.Objective, boundGap(pv, "%.3f"), pv.Nodes, run.FmtMs(pv.SolveMs))
	default:
		fmt.Fprintf(&b, "%s, objective %.4g, bound %.4g, %d nodes, %s", claim, pv.Objective, *pv.Bound, pv.Nodes, run.FmtMs(pv.SolveMs))
	}
	switch {
	case pv.SolverVersion != "":
		fmt.Fprintf(&b, " (%s)", pv.SolverVersion)
	case pv.Solver != "":
		fmt.Fprintf(&b, " (%s)", pv.Solver)
	}
	return b.String()
}

// defaultGapTolerance is the relative gap a plan that records none was solved to (solve's
// --gap default).
const defaultGapTolerance = 0.01

// statusClaim is what a plan may say of its optimality (DESIGN.md, Evidence: "Optimal" is
// said only with a proven gap): "optimal" where its status is and it records a bound and a
// gap within the tolerance it was solved to (its options' gap, else solve's default);
// "best found, gap G%" where it records a bound and a gap above that; "heuristic" where no
// solver proved a bound.
func statusClaim(pv formats.Provenance) string {
	if pv.Solver == "" || pv.Bound == nil || pv.Gap == nil || pv.Status == "heuristic" {
		return "heuristic"
	}
	tol := defaultGapTolerance
	var o struct {
		Gap *float64 `json:"gap"`
	}
	if len(pv.Options) > 0 && json.Unmarshal(pv.Options, &o) == nil && o.Gap != nil && *o.Gap > 0 {
		tol = *o.Gap
	}
	if pv.Status == "optimal" && *pv.Gap <= tol*(1+1e-9) {
		return "optimal"
	}
	return fmt.Sprintf("best found, gap %.3f%%", *pv.Gap*100)
}

// planName is the file name used in messages: the path as given, so that golden/plan.json
// and plan.json are told apart.
func planName(path string) string { return path }

// checkStrategy refuses a --strategy or --baseline value the system's planner does not take
// ("" = the system's own), naming the flag, the value and the values it takes.
func checkStrategy(flag, value string, sys system.System) error {
	if value != "" && !slices.Contains(sys.Strategies, value) {
		return run.UsageErrorf("--%s %q: the %s planner takes %s", flag, value, sys.Name, strings.Join(sys.Strategies, ", "))
	}
	return nil
}
