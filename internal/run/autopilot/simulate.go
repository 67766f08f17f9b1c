package autopilot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	pap "github.com/plan-dev/plan/planner/autopilot"
	"github.com/plan-dev/plan/sim"
)

// Args are `plan simulate PLAN --autopilot`'s inputs.
type Args struct {
	// Systems is the registry the plan's system is looked up in.
	Systems *systems.Registry
	// PlanArgs are the positional arguments: PLAN, or none for ./plan.json.
	PlanArgs []string
	// Trace is --trace: the arrival process or trace file (default poisson).
	Trace string
	// Load is --load: one load factor, the trace's mean rate over the plan's (default 1
	// when not given).
	Load string
	// Duration is --duration; a counts trace's own length when not given.
	Duration time.Duration
	// Seed is --seed; Jitter --jitter (relative execution-time noise, default 0).
	Seed   uint64
	Jitter float64
	// Policy is --policy ("" = the plan's own); Params --param KEY=VALUE.
	Policy string
	Params []string
	// Report is --report DIR ("" = none): autopilot-report.json and the GPUs-over-time plot.
	Report string
	// Autopilot are the --autopilot options.
	Autopilot Flags
	// Given are the names of the flags set on the command line (cobra's Changed), in the
	// order the flag set visits them: the cross-checks of --load, --duration, --report, the
	// --autopilot-* flags and the sweep's flags read them.
	Given []string
}

// SimReport is `plan simulate --autopilot`'s result: the loop beside the static plan and
// the plan solved for the trace's peak.
type SimReport struct {
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

// sweepOnly are simulate's flags for a sweep of load points, which an autopilot run (one
// pass over the trace) would silently ignore.
var sweepOnly = []string{"fail", "cancel", "reference-plan", "find-limit", "requests-out", "warmup", "parallel", "rate-scale"}

// config checks the flags and returns the loop's configuration.
func (a *Args) config() (ap.Config, error) {
	if err := a.Autopilot.CheckGiven(a.Given, false); err != nil {
		return ap.Config{}, err
	}
	cfg, err := a.Autopilot.Config()
	if err != nil {
		return ap.Config{}, err
	}
	for _, name := range sweepOnly {
		if given(a.Given, name) {
			return ap.Config{}, run.UsageErrorf("--%s does not apply with --autopilot (one arun over the trace, beside the static, peak and mean plans)", name)
		}
	}
	if given(a.Given, "report") || a.Report != "" {
		if err := formats.CheckOutputDir(a.Report); err != nil {
			return ap.Config{}, run.UsageErrorf("--report: %q: %v", a.Report, err)
		}
	}
	return cfg, nil
}

// Run is `plan simulate PLAN --autopilot`: one run over the trace at the mean rate --load ×
// the plan's rate (per application), then the static plan, the plan solved for the trace's
// peak and the one for its mean over the same arrivals.
func Run(ctx context.Context, a Args, io *run.IO) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	path, err := run.ResolvePlanArg(a.PlanArgs)
	if err != nil {
		return err
	}
	plan, dep, defPolicy, err := run.LoadPlanDeploymentPolicy(a.Systems, path)
	if err != nil {
		return err
	}
	policy := a.Policy
	if policy == "" {
		policy = defPolicy
	}
	params, err := run.ParseParams(a.Params)
	if err != nil {
		return err
	}
	spec, err := sim.ParseTraceFlag(a.Trace)
	if err != nil {
		return run.UsageError(err)
	}
	loads, err := sim.ParseLoadRange(a.Load)
	if err != nil || len(loads) != 1 {
		if !given(a.Given, "load") {
			loads = []float64{1}
		} else {
			return run.UsageErrorf("--load %q: with --autopilot, one load factor (the trace's mean rate over the plan's)", a.Load)
		}
	}
	duration := a.Duration
	if spec.Trace != nil && spec.Trace.Counts != nil && !given(a.Given, "duration") {
		duration = time.Duration(len(spec.Trace.Counts.Counts)) * spec.Trace.Counts.Interval.D()
	}
	if duration <= 0 {
		return run.UsageErrorf("--duration: %s: must be > 0", duration)
	}
	delay, measured, err := a.Autopilot.simResolveDelay()
	if err != nil {
		return err
	}
	inner, err := newLadder(a.Systems, plan, dep, &a.Autopilot)
	if err != nil {
		return err
	}
	ladder := newRecordingLadder(inner)
	start, err := ladder.Candidate(plan)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	arun := &sim.AutopilotRun{Loop: cfg, Start: start, Solver: ladder, Duration: run.Us(duration),
		LoadTime: run.Us(a.Autopilot.LoadTime), ResolveDelay: delay, MeasureResolve: measured, Seed: a.Seed, Jitter: a.Jitter,
		LLM: sim.PlanLLMClasses(plan, dep)}
	// The ladder needs plans whose planned rates are their capacity: refuse the others up
	// front, before any arrival is generated (the loop in serve keeps such a plan and says
	// why). The demand asked is the plan's rates at the load.
	planned := make([]float64, len(dep.Apps))
	for i, x := range dep.Apps {
		planned[i] = x.RateRPS * loads[0]
	}
	if _, err := ladder.Solve(ctx, ap.Demand{Rates: planned}); errors.Is(err, pap.ErrNoCapacityModel) {
		return run.UsageErrorf("--autopilot: %s: %v", path, err)
	}
	rep := &SimReport{Trace: spec.Name, Duration: duration.Seconds()}
	total := 0 // the arrivals generated so far, held to the sweep's per-point cap
	for i, x := range dep.Apps {
		src, err := spec.New(x.RateRPS*loads[0], x.Name, sim.PointSeed(a.Seed, loads[0], i))
		if err != nil {
			return run.UsageErrorf("--trace %s: %v", a.Trace, err)
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
	reg := a.Systems.Policies()
	arun.Deploy = func(c ap.Candidate) (*dataplane.Deployment, dataplane.Policy, error) {
		d, _, err := a.Systems.Deploy(c.Plan.(*formats.Plan))
		if err != nil {
			return nil, nil, err
		}
		pol, err := reg.New(d, dataplane.Config{Policy: policy, Params: params}, defPolicy)
		return d, pol, err
	}
	// Four runs (the autopilot, then the static, peak and mean plans), each a task of its
	// own on the progress line: the autopilot's windows decided, then segments replayed.
	pg := &progress{io: io, arun: arun}
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
	if rep.Peak, rep.PeakGPUs, err = runSolvedFor(ctx, arun, ladder, rep.PeakRPS, a.Autopilot.Headroom); err != nil {
		return fmt.Errorf("the plan solved for the trace's peak: %w", err)
	}
	stage("plan for the mean")
	if rep.Mean, rep.MeanGPUs, err = runSolvedFor(ctx, arun, ladder, rep.MeanRPS, a.Autopilot.Headroom); err != nil {
		return fmt.Errorf("the plan solved for the trace's mean: %w", err)
	}
	pg.finish()
	if err := writeReport(io, a.Report, rep, arun, ladder, start, cfg.Window); err != nil {
		return err
	}
	if io.JSONOutput() {
		return io.WriteJSON(rep)
	}
	printSim(io, rep)
	return nil
}

// runSolvedFor simulates the run on the ladder's plan for rates × (1 + headroom).
func runSolvedFor(ctx context.Context, arun *sim.AutopilotRun, l solver, rates []float64, headroom float64) (*sim.AutopilotResult, int, error) {
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

func printSim(io *run.IO, rep *SimReport) {
	fmt.Fprintf(io.Out, "trace %s over %.0f s: mean %.1f rps, peak %.1f rps (over a tenth of a window)\n", rep.Trace, rep.Duration, run.Sum(rep.MeanRPS), run.Sum(rep.PeakRPS))
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
	io.Table([]string{"arun", "GPUs", "attainment", "GPU-hours", "of peak", "switches", "requests"}, [][]string{
		row("autopilot", rep.Autopilot, gpus(rep.Autopilot)),
		row("static", rep.Static, gpus(rep.Static)),
		row("peak", rep.Peak, gpus(rep.Peak)),
		row("mean", rep.Mean, gpus(rep.Mean)),
	})
	for _, d := range rep.Autopilot.Decisions {
		if d.Action == "resolve" {
			continue
		}
		fmt.Fprintf(io.Out, "  %8.1fs %-11s %s → %s (%d GPUs): %s\n", float64(d.At)/1e6, d.Action, run.Short(d.From), run.Short(d.To), d.GPUs, d.Why)
	}
}

// progress shows the autopilot simulation's four runs (the autopilot, then the static,
// peak and mean plans) as progress tasks: each run's windows decided, then its segments
// replayed.
type progress struct {
	io   *run.IO
	arun *sim.AutopilotRun
	task *progressline.Task
}

// stage starts run name: the next progress the run reports opens its task.
func (p *progress) stage(name string) {
	phase := ""
	// The stage's line shows at once; its first phase names what it counts.
	p.task.Finish("")
	p.task = progressline.NewTask(p.io.Err, p.io.Quiet, "simulate --autopilot: "+name, "", 0)
	p.arun.Progress = func(ph string, done, total int) {
		unit := map[string]string{"loop": "windows decided", "replay": "segments replayed"}[ph]
		switch {
		case phase == "":
			p.task.SetUnit(unit)
		case ph != phase:
			p.task.Finish("")
			p.task = progressline.NewTask(p.io.Err, p.io.Quiet, "simulate --autopilot: "+name, unit, total)
		}
		phase = ph
		p.task.Step(done, total, "")
	}
}

func (p *progress) finish() {
	p.task.Finish("")
	p.task = nil
}
