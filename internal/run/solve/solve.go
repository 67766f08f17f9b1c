// Package solve is `plan solve`: the workload planned with the planner of the system its
// sections belong to, the plan predicted in simulation at its own rates (and solved again
// for a margin on its rates where it misses, internal/run/predict), then written; or, with
// --trace and --window, a schedule of least-cost plans, one per window. It also holds what
// plan frontier shares with it: the inputs' loading, the cost objective with --spot, and the
// planners' own options.
package solve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/onformats/demo"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/importval"
	"github.com/plan-dev/plan/internal/run/predict"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
)

// Inputs are the files a solve plans (plan solve's and plan frontier's --profile, --cluster,
// --workload and --profile-fit).
type Inputs struct {
	// Profiles are the profile files (nil = the embedded demo profile).
	Profiles []string
	// Cluster is the cluster file ("" = the embedded demo cluster, 4×L4 + 12×P4).
	Cluster string
	// Workload is the workload file ("" = every profiled model, weight 1, PPipe).
	Workload string
	// ProfileFit is --profile-fit: outliers (the default; "" where a command has no such
	// flag, which fits outliers too) or none.
	ProfileFit string
}

// Args are `plan solve`'s inputs.
type Args struct {
	// Systems is the system registry: the workload's sections pick its planner.
	Systems *systems.Registry
	Inputs
	// SLO is --slo, overriding the workload's (0 = the workload's or 5 × batch-1 L4 latency).
	SLO time.Duration
	// SLOSet says --slo was given (then 0 is refused).
	SLOSet bool
	// Strategy is --strategy ("" = the system's own).
	Strategy string
	// TimeLimit is --time-limit (default planner.DefaultTimeLimit).
	TimeLimit time.Duration
	// Gap is --gap, the relative MIP gap (0: the planner's own default, planner.Settings).
	Gap float64
	// GapSet says --gap was given (then 0 is refused).
	GapSet bool
	// Out is --out, where the plan (or schedule) is written (default plan.json).
	Out string
	// Deterministic is --deterministic: solve_ms recorded as 0.
	Deterministic bool
	// Objective is --objective: ObjectiveDefault (the default) or cost.
	Objective string
	// Spot is --spot SHARE (nil = not given).
	Spot *float64
	// AcceptMiss is --accept-miss: write a plan that misses in simulation, the miss recorded.
	AcceptMiss bool
	// Arrivals is --arrivals, the arrival process the prediction simulates
	// (sim.PredictArrivals: poisson, the default, bursty[:CV] or mmpp).
	Arrivals string
	// Window is --trace, --window, --peak-quantile and --margin.
	Window Window
	// PlannerFlags are the planner flags given (every flag but the common ones), in the
	// order the command line's flag set visits them (sorted by name).
	PlannerFlags []Flag
	// ToolVersion is the plan binary's version, recorded in the plan's provenance.
	ToolVersion string
}

// Run solves, predicts and writes the plan (or the schedule, with Window.Given).
func Run(ctx context.Context, a Args, io *run.IO) error {
	// --time-limit bounds the whole command from here: loading the inputs, the solve, the
	// prediction of its plan, any re-solve at a rate margin and the writing
	// (planner.Settings.Deadline).
	began := time.Now()
	if a.Out == "" {
		return run.UsageErrorf("--out: must not be empty")
	}
	if a.Out == "json" || a.Out == "table" {
		// -o is --out, the plan's file; --output (-O) is the output format.
		return run.UsageErrorf("--out %q: names the plan's file, not a format: did you mean --output %s (-O %s)? Name a file such as plan.json", a.Out, a.Out, a.Out)
	}
	if a.TimeLimit <= 0 {
		return run.UsageErrorf("--time-limit: %s: must be > 0", a.TimeLimit)
	}
	if a.GapSet && a.Gap == 0 {
		return run.UsageErrorf("--gap: 0: must be in (0, 1)")
	}
	if a.SLOSet && a.SLO <= 0 {
		// Every system's planner, not only those that check it: an LLM workload took -1s
		// and ignored it.
		return run.UsageErrorf("--slo: %s: must be > 0 (leave it out for the workload's or the default SLO)", a.SLO)
	}
	if _, _, err := sim.PredictArrivals(a.Arrivals); err != nil {
		return run.UsageErrorf("--arrivals %v", err)
	}
	if err := formats.CheckWritable(a.Out); err != nil {
		return run.UsageErrorf("--out: %q: %v", a.Out, err)
	}
	in, err := LoadInputs(a.Inputs, a.Systems.Sections(), func(s string) { fmt.Fprintf(io.Err, "warning: %s\n", s) })
	if err != nil {
		return err
	}
	sys, err := a.Systems.ForWorkload(in.Workload)
	if err != nil {
		name := "workload"
		if a.Workload != "" {
			name = a.Workload
		}
		return run.UsageErrorf("%s: %v", name, err)
	}
	if err := CheckStrategy("strategy", a.Strategy, sys); err != nil {
		return err
	}
	pl, opts := NewPlanner(sys)
	for _, f := range a.PlannerFlags {
		if !opts.Takes(f.Name) {
			return run.UsageErrorf("--%s: the %s planner (chosen by the workload's sections) does not take it; it takes %s", f.Name, sys.Name(), strings.Join(opts.Names(), ", "))
		}
		if err := opts.Set(f.Name, f.Value); err != nil {
			return run.UsageErrorf("--%s: %v", f.Name, err)
		}
	}
	settings := planner.Settings{AcceptMiss: a.AcceptMiss, SLO: a.SLO, Strategy: a.Strategy, TimeLimit: a.TimeLimit, Gap: a.Gap,
		Deterministic: a.Deterministic, ToolVersion: a.ToolVersion, Deadline: began.Add(a.TimeLimit)}
	if err := ApplyObjective(io, a.Objective, a.Spot, a.Cluster, in, &settings); err != nil {
		return err
	}
	if a.Window.Given { // a schedule of plans, one per window
		return runWindows(ctx, a, io, sys, pl, in, settings)
	}
	// On a terminal a status line shows at once (a MILP may report nothing for seconds) and
	// the solver's lines go above it; piped, the solver's lines as they come and the summary
	// on stdout; --quiet, none (internal/base/progress).
	task := progressline.NewStatus(io.Err, io.Quiet, "solve "+sys.Name())
	pr := &progressPrinter{io: io, task: task}
	if !io.Quiet {
		settings.Progress = pr.report
		settings.Status = task.Note
	}
	task.Note("solving")
	plan, err := predict.Solve(ctx, a.Systems, pl, in, settings, a.Arrivals, func(s string) {
		if !io.Quiet {
			task.Println("solve: " + s)
		}
	})
	task.Clear()
	reportPlanner(io, pl)
	if err != nil {
		err = withFileNames(err, a.Inputs, sys)
		if refusedTarget(ctx, err) {
			return explainFailure(ctx, a, io, sys, in, settings, err, nil)
		}
		return solveError(err)
	}
	if settings.Objective == planner.ObjectiveCost && plan.Fleet == nil {
		return run.UsageErrorf("--objective cost: the %s planner has no cost objective yet (nothing written)", sys.Name())
	}
	stated := ""
	if ps, ok := pl.(predictionStater); ok {
		if stated, err = ps.StatePrediction(plan, a.AcceptMiss); err != nil {
			return solveError(withFileNames(err, a.Inputs, sys))
		}
	}
	if pr := plan.Prediction; !pr.Meets && pr.Basis == formats.PredictionBasisRates && !a.AcceptMiss {
		of := ""
		if n := predict.ArrivalsName(pr); n != "" {
			of = " of " + n
		}
		return explainFailure(ctx, a, io, sys, in, settings, fmt.Errorf("the plan misses its target at the workload's rates, in simulation%s: %s (nothing written; --accept-miss writes it with the miss recorded)",
			of, strings.Join(predict.Misses(pr), "; ")), plan)
	}
	if err := formats.WriteFile(a.Out, plan, a.Systems.Sections()); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	reportFleet(io, plan)
	return report(io, a.Out, sys, plan, stated)
}

// predictionStater is a planner whose plan states what it serves by its own prediction
// (PPipe: each model's throughput_rps is what it serves within its SLO, the formulation's
// capacity past that is no claim), applied once the prediction is complete, before the plan
// is written. note is its summary line ("" = none); an error refuses the plan.
type predictionStater interface {
	StatePrediction(plan *formats.Plan, acceptMiss bool) (note string, err error)
}

// report prints the written plan: its system's tables, the prediction and the summary line
// on stdout (or the plan as JSON), a miss or a stated throughput past what the plan serves
// on stderr.
func report(io *run.IO, out string, sys system.Planning, plan *formats.Plan, stated string) error {
	pv := plan.Provenance
	if n := predict.SearchNote(plan.Prediction); n != "" {
		// A stopped search's numbers are lower bounds: said whatever the output format.
		fmt.Fprintf(io.Err, "note: %s\n", io.Bold(n))
	}
	if pv.Solver != "" && statusClaim(pv) != "optimal" {
		fmt.Fprintf(io.Err, "plan: %s: wrote the best plan found; objective %.4g, %s\n", pv.Status, pv.Objective, boundGap(pv, "%.2f"))
	}
	if io.JSONOutput() {
		return io.WriteJSON(plan)
	}
	for i, t := range sys.Render(plan) {
		if i > 0 {
			fmt.Fprintln(io.Out)
		}
		io.Table(t.Header, t.Rows)
	}
	fmt.Fprintf(io.Out, "\n%s\n", predict.Line(plan.Prediction))
	fmt.Fprintln(io.Out, summaryLine(sys.Name(), pv))
	if stated != "" {
		// The planner stated what the plan serves (predictionStater): that is the plan's
		// claim, with the formulation's objective beside it.
		fmt.Fprintln(io.Out, stated)
	}
	switch pr := plan.Prediction; {
	case pr.Meets:
	case stated != "" && pr.Basis == formats.PredictionBasisStated:
	case pr.Basis == formats.PredictionBasisStated:
		// The plan states what its pipelines carry; what it serves within the SLO is less,
		// and both are in the plan (a note, not a miss: no rate was asked of it).
		io.Infof("%s", io.Bold("note: the plan's stated throughput is past what it serves within its SLO: "+strings.Join(predict.Misses(pr), "; ")))
	default:
		fmt.Fprintf(io.Err, "warning: %s\n", io.Bold("MISS written with --accept-miss: "+strings.Join(predict.Misses(pr), "; ")))
	}
	io.Infof("wrote %s", out)
	return nil
}

// LoadInputs reads the input files (or the embedded demo); every problem is a usage error.
// Every profile file is planned on its measured values but for the outliers formats.FitProfile
// replaces (none with --profile-fit none): the plan embeds the values used
// with the measured ones beside them, and warn reports each point off the fit (file, model,
// GPU, batch, measured → used). The input's digest is the file's, as measured. The embedded
// demo is a roofline estimate, not a measurement: it is planned as it is.
func LoadInputs(o Inputs, secs *formats.SectionSet, warn func(string)) (planner.Inputs, error) {
	var in planner.Inputs
	if o.ProfileFit != "" && o.ProfileFit != formats.FitOutliers && o.ProfileFit != formats.FitNone {
		return in, run.UsageErrorf("--profile-fit: %q: must be %s or %s", o.ProfileFit, formats.FitOutliers, formats.FitNone)
	}
	ref := func(kind, path string, doc any) error {
		d, err := formats.Digest(doc)
		if err != nil {
			return err
		}
		in.Refs = append(in.Refs, formats.InputRef{Kind: kind, Path: path, Digest: d})
		return nil
	}
	if len(o.Profiles) == 0 {
		p, err := demo.Profile()
		if err != nil {
			return in, err
		}
		in.Profiles = append(in.Profiles, p)
		if err := ref(formats.KindProfile, "demo:profile", p); err != nil {
			return in, err
		}
	}
	for _, path := range o.Profiles {
		p, err := formats.ReadInto[*formats.Profile](path, nil)
		if err != nil {
			return in, run.UsageError(err)
		}
		if err := ref(formats.KindProfile, path, p); err != nil {
			return in, err
		}
		if o.ProfileFit == formats.FitNone {
			formats.PlanAsMeasured(p)
		} else {
			for _, w := range formats.FitProfile(p) {
				warn(fmt.Sprintf("%s: %s", path, w))
			}
		}
		in.Profiles = append(in.Profiles, p)
	}
	if o.Cluster == "" {
		c, err := demo.Cluster()
		if err != nil {
			return in, err
		}
		in.Cluster = c
		if err := ref(formats.KindCluster, "demo:cluster", c); err != nil {
			return in, err
		}
	} else {
		c, err := formats.ReadInto[*formats.Cluster](o.Cluster, nil)
		if err != nil {
			return in, run.UsageError(err)
		}
		in.Cluster = c
		if err := ref(formats.KindCluster, o.Cluster, c); err != nil {
			return in, err
		}
	}
	if o.Workload != "" {
		w, err := formats.ReadInto[*formats.Workload](o.Workload, secs)
		if err != nil {
			return in, run.UsageError(err)
		}
		if err := importval.LoadRecordFiles(w, o.Workload, secs); err != nil { // a cascade's validation_file, test_file
			return in, err
		}
		in.Workload = w
		if err := ref(formats.KindWorkload, o.Workload, w); err != nil {
			return in, err
		}
	}
	return in, nil
}

// progressPrinter prints one progress line per new incumbent and at most one per second
// otherwise, as plain lines (fit for CI logs as well as terminals).
type progressPrinter struct {
	io      *run.IO
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
		fmt.Fprintln(p.io.Err, line)
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
// or one that proved no bound says "heuristic", with the bound and gap a heuristic search
// did prove (DyOrc's and QLM's least-cost fleets) or "no bound"; a bound with a gap above
// the tolerance says "best found, gap G%". The solver's version closes the line
// only where the plan records one, so no line ends in an empty "()".
func summaryLine(sysName string, pv formats.Provenance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s plan (strategy %s): ", sysName, pv.Strategy)
	switch claim := statusClaim(pv); {
	case claim == "heuristic":
		fmt.Fprintf(&b, "heuristic, objective %.4g, %s, ", pv.Objective, boundGap(pv, "%.3f"))
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

// CheckStrategy refuses a --strategy or --baseline value the system's planner does not take
// ("" = the system's own), naming the flag, the value and the values it takes.
func CheckStrategy(flag, value string, sys system.Planning) error {
	if value != "" && !slices.Contains(sys.Strategies(), value) {
		return run.UsageErrorf("--%s %q: the %s planner takes %s", flag, value, sys.Name(), strings.Join(sys.Strategies(), ", "))
	}
	return nil
}
