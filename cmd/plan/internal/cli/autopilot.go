package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	progressline "github.com/plan-dev/plan/internal/progress"
	"github.com/plan-dev/plan/internal/run"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/systems"
	pap "github.com/plan-dev/plan/planner/autopilot"
	"github.com/plan-dev/plan/serve"
	serveap "github.com/plan-dev/plan/serve/autopilot"
	"github.com/plan-dev/plan/sim"
)

// autopilotFlags are the --autopilot flags of `plan serve` and `plan simulate`.
type autopilotFlags struct {
	mode        string
	window      time.Duration
	history     int
	period      int
	minInterval time.Duration
	loadTime    time.Duration
	headroom    float64
	burst       float64
	budget      int
	steps       int
	objective   string
	solveLimit  time.Duration
	// resolveDelay is --autopilot-resolve-delay: a duration or "measured".
	resolveDelay string
}

func addAutopilotFlags(f *pflag.FlagSet, a *autopilotFlags) {
	f.StringVar(&a.mode, "autopilot", "", "re-plan as the load moves: on (switch plans) or advise (only recommend); off when not given")
	f.Lookup("autopilot").NoOptDefVal = "on"
	f.DurationVar(&a.window, "autopilot-window", 10*time.Second, "autopilot: observation window (one forecast step)")
	f.IntVar(&a.history, "autopilot-history", ap.DefaultHistory, "autopilot: windows of history kept")
	f.IntVar(&a.period, "autopilot-period", 0, "autopilot: season in windows for Holt-Winters (0 = Holt's linear trend, the default); at most --autopilot-history")
	f.DurationVar(&a.minInterval, "autopilot-min-interval", 60*time.Second, "autopilot: least time between two plan switches")
	f.DurationVar(&a.loadTime, "autopilot-load-time", 5*time.Second, "autopilot (simulate): model load time of a new placement; the old plan serves until it passes")
	f.Float64Var(&a.headroom, "autopilot-headroom", ap.DefaultHeadroom, "autopilot: share above the forecast a new plan must serve")
	f.Float64Var(&a.burst, "autopilot-burst", ap.DefaultBurst, "autopilot: quantile of the windows' peak tenth over what Poisson arrivals at their rate would reach, sizing the plan for the bursts a window hides (forecast × it); 0 = follow each window's peak")
	f.IntVar(&a.budget, "autopilot-gpu-budget", 0, "autopilot: most GPUs a new plan may take (0 = the plan's cluster); below what the load needs, the best plan within it is served and the status says so")
	f.IntVar(&a.steps, "autopilot-steps", pap.DefaultSteps, "autopilot: rungs of the cluster ladder the re-solve picks from")
	f.StringVar(&a.objective, "autopilot-objective", "", "autopilot: what a re-solve optimises: throughput (the plan's own objective on the fewest GPUs of a cluster ladder) or cost (the least-cost fleet for the forecast rates: plans solved with --objective cost); default: the plan's own")
	f.DurationVar(&a.solveLimit, "autopilot-solve-limit", 30*time.Second, "autopilot: time limit of one re-solve")
	f.StringVar(&a.resolveDelay, "autopilot-resolve-delay", "0s", "autopilot (simulate): how long a re-solve takes before its plan is switched to: a duration, or measured (each re-solve's wall time here; not deterministic); 0 because plan serve pre-solves the rungs next to the served plan, so a step up usually finds its plan solved")
}

// simResolveDelay parses --autopilot-resolve-delay: the delay, or measured.
func (a *autopilotFlags) simResolveDelay() (delay dataplane.Time, measured bool, err error) {
	if a.resolveDelay == "measured" {
		return 0, true, nil
	}
	d, err := time.ParseDuration(a.resolveDelay)
	if err != nil || d < 0 {
		return 0, false, run.UsageErrorf("--autopilot-resolve-delay %q: want a duration ≥ 0 (e.g. 800ms) or measured", a.resolveDelay)
	}
	return run.Us(d), false, nil
}

// checkFlagsUsed refuses an --autopilot-* flag given without --autopilot (it would do
// nothing), and --autopilot-load-time on serve (real model loads are timed by the reload).
func (a *autopilotFlags) checkFlagsUsed(cmd *cobra.Command, serving bool) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err != nil || !strings.HasPrefix(f.Name, "autopilot-") {
			return
		}
		switch {
		case !a.enabled():
			err = run.UsageErrorf("--%s needs --autopilot", f.Name)
		case serving && f.Name == "autopilot-load-time":
			err = run.UsageErrorf("--autopilot-load-time applies to plan simulate: plan serve loads the new plan's models before it switches")
		case serving && f.Name == "autopilot-resolve-delay":
			err = run.UsageErrorf("--autopilot-resolve-delay applies to plan simulate: plan serve's re-solves take the time they take")
		}
	})
	return err
}

// enabled reports whether --autopilot was given.
func (a *autopilotFlags) enabled() bool { return a.mode != "" }

// config checks the flags (exit 2 naming the flag) and returns the loop's configuration.
func (a *autopilotFlags) config() (ap.Config, error) {
	mode, err := ap.ParseMode(a.mode)
	if err != nil {
		return ap.Config{}, run.UsageError(err)
	}
	switch {
	case a.objective != "" && a.objective != "throughput" && a.objective != "cost":
		return ap.Config{}, run.UsageErrorf("--autopilot-objective %q: want throughput or cost", a.objective)
	case a.window <= 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-window %s: must be > 0", a.window)
	case a.history <= 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-history %d: must be > 0", a.history)
	case a.period < 0 || a.period == 1:
		return ap.Config{}, run.UsageErrorf("--autopilot-period %d: want 0 (Holt) or a season of ≥ 2 windows", a.period)
	case a.period > a.history:
		return ap.Config{}, run.UsageErrorf("--autopilot-period %d: the forecaster's period is longer than the window history (--autopilot-history %d windows)", a.period, a.history)
	case a.minInterval < 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-min-interval %s: must be ≥ 0", a.minInterval)
	case a.loadTime < 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-load-time %s: must be ≥ 0", a.loadTime)
	case !(a.headroom >= 0 && a.headroom < 10):
		return ap.Config{}, run.UsageErrorf("--autopilot-headroom %g: must be in [0, 10)", a.headroom)
	case !(a.burst >= 0 && a.burst <= 1):
		return ap.Config{}, run.UsageErrorf("--autopilot-burst %g: must be in [0, 1]", a.burst)
	case a.budget < 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-gpu-budget %d: must be ≥ 0", a.budget)
	case a.steps < 1 || a.steps > 64:
		return ap.Config{}, run.UsageErrorf("--autopilot-steps %d: must be in [1, 64]", a.steps)
	case a.solveLimit <= 0:
		return ap.Config{}, run.UsageErrorf("--autopilot-solve-limit %s: must be > 0", a.solveLimit)
	}
	return ap.Config{Mode: mode, Window: run.Us(a.window), History: a.history, Period: a.period,
		MinInterval: max(run.Us(a.minInterval), 1), Headroom: a.headroom, GPUBudget: a.budget, Burst: burstQuantile(a.burst)}, nil
}

// burstQuantile maps --autopilot-burst to Config.Burst: 0 (no envelope) is its negative.
func burstQuantile(q float64) float64 {
	if q == 0 {
		return -1
	}
	return q
}

// autopilotSolver is a re-solver that also describes plans for the loop.
type autopilotSolver interface {
	ap.Solver
	Candidate(p *formats.Plan) (ap.Candidate, error)
}

// newLadder is the autopilot's solver for plan: its system's re-solve on shrunken clusters
// (objective throughput), or for the forecast rates (cost: a plan solved with --objective
// cost, whose fleet the re-solve prices). The flag and the plan's objective must agree.
func newLadder(reg *systems.Registry, plan *formats.Plan, dep *dataplane.Deployment, a *autopilotFlags) (autopilotSolver, error) {
	s, err := reg.ForPlan(plan)
	if err != nil {
		return nil, run.UsageError(err)
	}
	if s.Checker == nil {
		return nil, run.UsageErrorf("--autopilot: system %s cannot re-solve its plans", s.Name)
	}
	own := "throughput"
	if plan.Fleet != nil {
		own = "cost"
	}
	if a.objective != "" && a.objective != own {
		return nil, run.UsageErrorf("--autopilot-objective %s conflicts with the plan's objective %s (solve it with --objective %s, or leave --autopilot-objective out)", a.objective, own, a.objective)
	}
	names := make([]string, len(dep.Apps))
	for i, x := range dep.Apps {
		names[i] = x.Name
	}
	resolve := func(ctx context.Context, p *formats.Plan) (*formats.Plan, error) {
		return s.Checker.Resolve(ctx, p, a.solveLimit)
	}
	deploy := func(p *formats.Plan) (*dataplane.Deployment, error) {
		d, _, err := reg.Deploy(p)
		return d, err
	}
	newRateSolver := pap.NewRateSolver
	if pap.HasClasses(plan) {
		// QLM: the demand is the llm_classes' (planner/autopilot classes.go).
		newRateSolver = pap.NewClassRateSolver
		if own != "cost" {
			resolve = pap.ClassResolve(plan, resolve)
		}
	}
	if own == "cost" {
		r, err := newRateSolver(plan, names, resolve, deploy)
		if err != nil {
			return nil, run.UsageErrorf("--autopilot-objective cost: %v", err)
		}
		r.SetCapacity(s.Capacity)
		return r, nil
	}
	l, err := pap.NewLadder(plan, names, a.steps, resolve, deploy)
	if err != nil {
		return nil, run.UsageErrorf("--autopilot: %v", err)
	}
	l.Capacity = s.Capacity
	return l, nil
}

// serveAutopilot adds the autopilot front end to opts when --autopilot is given (nil
// otherwise); the caller starts it once the server runs.
func serveAutopilot(cmd *cobra.Command, app *App, o *serveOptions, plan *formats.Plan, dep *dataplane.Deployment, opts *serve.Options) (*serveap.Autopilot, error) {
	if err := o.autopilot.checkFlagsUsed(cmd, true); err != nil || !o.autopilot.enabled() {
		return nil, err
	}
	cfg, err := o.autopilot.config()
	if err != nil {
		return nil, err
	}
	ladder, err := newLadder(app.Systems, plan, dep, &o.autopilot)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(dep.Apps))
	for i, x := range dep.Apps {
		names[i] = x.Name
	}
	pilot := serveap.New(serveap.Options{Loop: cfg, Solver: ladder, Describe: ladder.Candidate,
		Apps: names, SolveTimeout: 2 * o.autopilot.solveLimit * time.Duration(o.autopilot.steps)})
	opts.Frontends = append(slices.Clone(opts.Frontends), pilot)
	return pilot, nil
}

// autopilotSimReport is `plan simulate --autopilot`'s result: the loop beside the static
// plan and the plan solved for the trace's peak.
type autopilotSimReport struct {
	Trace     string               `json:"trace"`
	Duration  float64              `json:"duration_s"`
	MeanRPS   []float64            `json:"mean_rps"`
	PeakRPS   []float64            `json:"peak_rps"`
	Autopilot *sim.AutopilotResult `json:"autopilot"`
	Static    *sim.AutopilotResult `json:"static"`
	Peak      *sim.AutopilotResult `json:"peak"`
	PeakGPUs  int                  `json:"peak_gpus"`
	// Mean is the plan solved for the trace's mean rate (with the same headroom).
	Mean     *sim.AutopilotResult `json:"mean"`
	MeanGPUs int                  `json:"mean_gpus"`
}

// simulateAutopilotConfig checks `plan simulate --autopilot`'s flags and returns the
// loop's configuration.
func simulateAutopilotConfig(cmd *cobra.Command, o *simulateOptions) (ap.Config, error) {
	if err := o.autopilot.checkFlagsUsed(cmd, false); err != nil {
		return ap.Config{}, err
	}
	cfg, err := o.autopilot.config()
	if err != nil {
		return ap.Config{}, err
	}
	// The autopilot run is one pass over the trace, not a sweep: the sweep's own flags
	// would be silently ignored.
	for _, name := range []string{"fail", "cancel", "reference-plan", "find-limit", "requests-out", "warmup", "parallel", "rate-scale"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return ap.Config{}, run.UsageErrorf("--%s does not apply with --autopilot (one arun over the trace, beside the static, peak and mean plans)", name)
		}
	}
	if err := checkAutopilotReport(cmd, o.report); err != nil {
		return ap.Config{}, err
	}
	return cfg, nil
}

// runSimulateAutopilot is `plan simulate PLAN --autopilot`: one run over the trace at the
// mean rate --load × the plan's rate (per application).
func runSimulateAutopilot(cmd *cobra.Command, app *App, o *simulateOptions, args []string) error {
	cfg, err := simulateAutopilotConfig(cmd, o)
	if err != nil {
		return err
	}
	path, err := run.ResolvePlanArg(args)
	if err != nil {
		return err
	}
	plan, dep, defPolicy, err := run.LoadPlanDeploymentPolicy(app.Systems, path)
	if err != nil {
		return err
	}
	if o.policy == "" {
		o.policy = defPolicy
	}
	params, err := run.ParseParams(o.params)
	if err != nil {
		return err
	}
	spec, err := sim.ParseTraceFlag(o.trace)
	if err != nil {
		return run.UsageError(err)
	}
	loads, err := sim.ParseLoadRange(o.load)
	if err != nil || len(loads) != 1 {
		if !cmd.Flags().Changed("load") {
			loads = []float64{1}
		} else {
			return run.UsageErrorf("--load %q: with --autopilot, one load factor (the trace's mean rate over the plan's)", o.load)
		}
	}
	duration := o.duration
	if spec.Trace != nil && spec.Trace.Counts != nil && !cmd.Flags().Changed("duration") {
		duration = time.Duration(len(spec.Trace.Counts.Counts)) * spec.Trace.Counts.Interval.D()
	}
	if duration <= 0 {
		return run.UsageErrorf("--duration: %s: must be > 0", duration)
	}
	delay, measured, err := o.autopilot.simResolveDelay()
	if err != nil {
		return err
	}
	inner, err := newLadder(app.Systems, plan, dep, &o.autopilot)
	if err != nil {
		return err
	}
	ladder := newRecordingLadder(inner)
	start, err := ladder.Candidate(plan)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	arun := &sim.AutopilotRun{Loop: cfg, Start: start, Solver: ladder, Duration: run.Us(duration),
		LoadTime: run.Us(o.autopilot.loadTime), ResolveDelay: delay, MeasureResolve: measured, Seed: o.seed, Jitter: o.jitter,
		LLM: sim.PlanLLMClasses(plan, dep)}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	// The ladder needs plans whose planned rates are their capacity: refuse the others up
	// front, before any arrival is generated (the loop in serve keeps such a plan and says
	// why). The demand asked is the plan's rates at the load.
	planned := make([]float64, len(dep.Apps))
	for a, x := range dep.Apps {
		planned[a] = x.RateRPS * loads[0]
	}
	if _, err := ladder.Solve(ctx, ap.Demand{Rates: planned}); errors.Is(err, pap.ErrNoCapacityModel) {
		return run.UsageErrorf("--autopilot: %s: %v", path, err)
	}
	rep := &autopilotSimReport{Trace: spec.Name, Duration: duration.Seconds()}
	total := 0 // the arrivals generated so far, held to the sweep's per-point cap
	for a, x := range dep.Apps {
		src, err := spec.New(x.RateRPS*loads[0], x.Name, sim.PointSeed(o.seed, loads[0], a))
		if err != nil {
			return run.UsageErrorf("--trace %s: %v", o.trace, err)
		}
		var ts []dataplane.Time
		for t := src.Next(); t != dataplane.Never && t < arun.Duration; t = src.Next() {
			// Each run replays every arrival and keeps its record: the same memory bound as
			// a sweep's load point (checkSimulationSize), counted on the real arrivals.
			if total++; total > run.MaxRequestsPerPoint {
				return run.UsageErrorf("--autopilot: %s: %s at --load %g over %s: more than %d requests; shorten --duration or lower --load",
					path, spec.Name, loads[0], duration, run.MaxRequestsPerPoint)
			}
			ts = append(ts, t)
		}
		arun.Arrivals = append(arun.Arrivals, ts)
		// The peak is measured as the loop measures it: over slices of a window.
		mean, peak := windowRates(ts, max(cfg.Window/ap.Subwindows, 1), arun.Duration)
		rep.MeanRPS, rep.PeakRPS = append(rep.MeanRPS, mean), append(rep.PeakRPS, peak)
	}
	reg := app.Systems.Policies()
	arun.Deploy = func(c ap.Candidate) (*dataplane.Deployment, dataplane.Policy, error) {
		d, _, err := app.Systems.Deploy(c.Plan.(*formats.Plan))
		if err != nil {
			return nil, nil, err
		}
		pol, err := reg.New(d, dataplane.Config{Policy: o.policy, Params: params}, defPolicy)
		return d, pol, err
	}
	// Four runs (the autopilot, then the static, peak and mean plans), each a task of its
	// own on the progress line: the autopilot's windows decided, then segments replayed.
	pg := &autopilotProgress{app: app, arun: arun}
	stage := pg.stage
	defer pg.finish()
	stage("autopilot")
	if rep.Autopilot, err = sim.RunAutopilot(ctx, arun); err != nil {
		return err
	}
	stage("static plan")
	if rep.Static, err = sim.RunStatic(arun, start); err != nil {
		return err
	}
	stage("plan for the peak")
	if rep.Peak, rep.PeakGPUs, err = runSolvedFor(ctx, arun, ladder, rep.PeakRPS, o.autopilot.headroom); err != nil {
		return fmt.Errorf("the plan solved for the trace's peak: %w", err)
	}
	stage("plan for the mean")
	if rep.Mean, rep.MeanGPUs, err = runSolvedFor(ctx, arun, ladder, rep.MeanRPS, o.autopilot.headroom); err != nil {
		return fmt.Errorf("the plan solved for the trace's mean: %w", err)
	}
	pg.finish()
	if err := writeAutopilotReport(app, o.report, rep, arun, ladder, start, cfg.Window); err != nil {
		return err
	}
	if app.JSONOutput() {
		return app.WriteJSON(rep)
	}
	printAutopilotSim(app, rep)
	return nil
}

// runSolvedFor simulates the run on the ladder's plan for rates × (1 + headroom).
func runSolvedFor(ctx context.Context, arun *sim.AutopilotRun, l autopilotSolver, rates []float64, headroom float64) (*sim.AutopilotResult, int, error) {
	d := ap.Demand{Rates: make([]float64, len(rates))}
	for i, r := range rates {
		d.Rates[i] = r * (1 + headroom)
	}
	c, err := l.Solve(ctx, d)
	if err != nil {
		return nil, 0, err
	}
	res, err := sim.RunStatic(arun, c)
	return res, c.GPUs, err
}

// windowRates returns the mean rate of ts over d and the highest rate over one slice of
// width w.
func windowRates(ts []dataplane.Time, w, d dataplane.Time) (mean, peak float64) {
	if d <= 0 || w <= 0 {
		return 0, 0
	}
	counts := make([]int, int(d/w)+1)
	for _, t := range ts {
		counts[int(t/w)]++
	}
	for i, c := range counts {
		if dataplane.Time(i+1)*w <= d {
			peak = math.Max(peak, float64(c)/(float64(w)/1e6))
		}
	}
	return float64(len(ts)) / (float64(d) / 1e6), peak
}

func printAutopilotSim(app *App, rep *autopilotSimReport) {
	fmt.Fprintf(app.Out, "trace %s over %.0f s: mean %.1f rps, peak %.1f rps (over a tenth of a window)\n", rep.Trace, rep.Duration, run.Sum(rep.MeanRPS), run.Sum(rep.PeakRPS))
	row := func(name string, r *sim.AutopilotResult, gpus string) []string {
		ratio := "-"
		if rep.Peak.GPUHours > 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*r.GPUHours/rep.Peak.GPUHours)
		}
		return []string{name, gpus, run.Pct(r.Attainment), fmt.Sprintf("%.3f", r.GPUHours), ratio, fmt.Sprint(r.Switches), fmt.Sprint(r.Requests)}
	}
	gpus := func(r *sim.AutopilotResult) string {
		lo, hi := math.MaxInt, 0
		for _, s := range r.Segments {
			lo, hi = min(lo, s.GPUs), max(hi, s.GPUs)
		}
		if lo == hi {
			return fmt.Sprint(lo)
		}
		return fmt.Sprintf("%d-%d", lo, hi)
	}
	app.Table([]string{"arun", "GPUs", "attainment", "GPU-hours", "of peak", "switches", "requests"}, [][]string{
		row("autopilot", rep.Autopilot, gpus(rep.Autopilot)),
		row("static", rep.Static, gpus(rep.Static)),
		row("peak", rep.Peak, gpus(rep.Peak)),
		row("mean", rep.Mean, gpus(rep.Mean)),
	})
	for _, d := range rep.Autopilot.Decisions {
		if d.Action == "resolve" {
			continue
		}
		fmt.Fprintf(app.Out, "  %8.1fs %-11s %s → %s (%d GPUs): %s\n", float64(d.At)/1e6, d.Action, run.Short(d.From), run.Short(d.To), d.GPUs, d.Why)
	}
}

// autopilotProgress shows the autopilot simulation's four runs (the autopilot, then the
// static, peak and mean plans) as progress tasks: each run's windows decided, then its
// segments replayed.
type autopilotProgress struct {
	app  *App
	arun *sim.AutopilotRun
	task *progressline.Task
}

// stage starts run name: the next progress the run reports opens its task.
func (p *autopilotProgress) stage(name string) {
	phase := ""
	// The stage's line shows at once; its first phase names what it counts.
	p.task.Finish("")
	p.task = progressline.NewTask(p.app.Err, p.app.Quiet, "simulate --autopilot: "+name, "", 0)
	p.arun.Progress = func(ph string, done, total int) {
		unit := map[string]string{"loop": "windows decided", "replay": "segments replayed"}[ph]
		switch {
		case phase == "":
			p.task.SetUnit(unit)
		case ph != phase:
			p.task.Finish("")
			p.task = progressline.NewTask(p.app.Err, p.app.Quiet, "simulate --autopilot: "+name, unit, total)
		}
		phase = ph
		p.task.Step(done, total, "")
	}
}

func (p *autopilotProgress) finish() {
	p.task.Finish("")
	p.task = nil
}
