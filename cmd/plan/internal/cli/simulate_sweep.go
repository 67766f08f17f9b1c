package cli

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/progress"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/systems"
	"github.com/plan-dev/plan/sim"
)

// runSimulateSweep is `plan simulate PLAN`: the plan at a sweep of load factors.
func runSimulateSweep(cmd *cobra.Command, app *App, o *simulateOptions, path string) error {
	cfg, err := newSweepConfig(cmd, app, o, path)
	if err != nil {
		return err
	}
	// The bar shows before the first load point ends (one may take seconds).
	task := progressline.NewTask(app.Err, app.Quiet, "simulate", "load points", len(cfg.Loads))
	cfg.Progress = func(done, total int, p *sim.Point) {
		task.Step(done, total, fmt.Sprintf("last: %.2f → %.2f%%", p.Load, 100*p.Total.Attainment))
	}
	rep, err := sim.Sweep(cmd.Context(), cfg)
	task.Finish("")
	if err != nil {
		return err
	}
	remedy := fewRequestsRemedy(cmd, cfg.Arrival)
	warnFewRequests(app, rep, remedy)
	warnFewForPercentile(app, rep, remedy)
	if err := writeRequestsOut(o.requestsOut, rep); err != nil {
		return err
	}
	if o.report != "" {
		if err := writeSimReport(app, cfg, rep, o.report); err != nil {
			return err
		}
	}
	if app.JSONOutput() {
		return app.WriteJSON(rep)
	}
	printSimTable(app, rep)
	return nil
}

// newSweepConfig reads the plan and builds its sweep from the flags, refusing bad input
// (exit 2) before any load point runs, and warns where the sweep leaves the plan's range.
func newSweepConfig(cmd *cobra.Command, app *App, o *simulateOptions, path string) (*sim.SweepConfig, error) {
	plan, dep, defPolicy, err := run.LoadPlanDeploymentPolicy(app.Systems, path)
	if err != nil {
		return nil, err
	}
	if o.policy == "" {
		o.policy = defPolicy // the plan's own policy (a PARD plan names its dropper)
	}
	spec, err := sim.ParseTraceFlag(o.trace)
	if err != nil {
		return nil, run.UsageError(err)
	}
	if spec.Trace != nil {
		// The trace must name what the plan serves (the cross-file check of plan validate).
		if errs := formats.CheckSetWith(map[string]formats.Document{path: plan, o.trace: spec.Trace}, app.Systems.Sections()); len(errs) > 0 {
			return nil, run.UsageError(errs)
		}
	}
	loads, traceBase, err := simLoads(cmd, o, spec, dep)
	if err != nil {
		return nil, err
	}
	if err := checkSimulateFlags(cmd, o); err != nil {
		return nil, err
	}
	warmup, err := simWarmup(cmd, o, dep)
	if err != nil {
		return nil, err
	}
	if err := checkRequestsOut(o.requestsOut); err != nil {
		return nil, err
	}
	findLimit := !cmd.Flags().Changed("load") && traceBase == nil
	if cmd.Flags().Changed("find-limit") {
		findLimit = o.findLimit
	}
	pcfg, reg, failures, err := sweepPolicy(app, o, path, dep, defPolicy)
	if err != nil {
		return nil, err
	}
	base, err := baseRates(app.Systems, dep, o.reference)
	if err != nil {
		return nil, err
	}
	if traceBase != nil {
		base = traceBase // load factor 1.0 = the trace as recorded
	}
	strategy := plan.Provenance.Strategy
	cfg := &sim.SweepConfig{
		Dep: dep, Policies: reg, Policy: pcfg, Arrival: spec, BaseRPS: base, Loads: loads,
		Duration: dataplane.Time(o.duration / time.Microsecond), Seed: o.seed, Jitter: o.jitter,
		Parallel: o.parallel, PlanName: filepath.Base(path), Strategy: strategy, Failures: failures,
		CancelFraction: o.cancel, Warmup: warmup, FindLimit: findLimit, LimitCap: sim.DefaultLimitCap,
		RecordRequests: o.requestsOut != "",
	}
	if err := setupLLMSweep(cmd, o, path, plan, cfg, spec); err != nil {
		return nil, err
	}
	if err := traceWindow(cmd, app, o, cfg, spec); err != nil {
		return nil, err
	}
	scaleFlag := "--load"
	if traceBase != nil {
		scaleFlag = "--rate-scale"
	}
	if err := checkSimulationSize(cfg, scaleFlag); err != nil {
		return nil, err
	}
	warnBeyondRange(app, path, cfg, scaleFlag)
	if cfg.FindLimit {
		// Extend only as far as a load point still fits in memory.
		cfg.LimitCap = min(cfg.LimitCap, maxLoadThatFits(cfg))
	}
	return cfg, nil
}

// sweepPolicy builds the sweep's runtime policy (--policy, --param) and failures (--fail),
// and attaches the policy once to the plan's deployment.
func sweepPolicy(app *App, o *simulateOptions, path string, dep *dataplane.Deployment, defPolicy string) (dataplane.Config, *dataplane.Registry, []sim.Failure, error) {
	params, err := run.ParseParams(o.params)
	if err != nil {
		return dataplane.Config{}, nil, nil, err
	}
	var failures []sim.Failure
	for _, spec := range o.fail {
		f, err := sim.ParseFailure(spec, dep)
		if err != nil {
			return dataplane.Config{}, nil, nil, run.UsageErrorf("--fail: %s: %v", path, err)
		}
		failures = append(failures, f)
	}
	pcfg := dataplane.Config{Policy: o.policy, Params: params}
	reg := app.Systems.Policies()
	pol, err := reg.New(dep, pcfg, defPolicy)
	if err != nil {
		return dataplane.Config{}, nil, nil, run.UsageErrorf("--policy: %s: %v", path, err)
	}
	if len(failures) > 0 && !dataplane.HandlesFailures(pol) {
		return dataplane.Config{}, nil, nil, run.UsageErrorf("--fail: policy %s does not handle worker failures (it declares no dataplane.FailureMode)", pol.Name())
	}
	// Attach the policy once up front: a plan it cannot serve is bad input (exit 2), not a
	// failure discovered at the first load point.
	if _, err := dataplane.NewEngine(dep, pol, discardEffects{}); err != nil {
		return dataplane.Config{}, nil, nil, run.UsageErrorf("--policy %s: %s: %v", o.policy, path, err)
	}
	return pcfg, reg, failures, nil
}

// baseRates returns per-app rates at load 1.0 from a reference plan (nil = the plan's own).
func baseRates(sys *systems.Registry, dep *dataplane.Deployment, reference string) ([]float64, error) {
	if reference == "" {
		return nil, nil
	}
	_, ref, err := run.LoadPlanDeployment(sys, reference)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(dep.Apps))
	for i, a := range dep.Apps {
		found := false
		for _, r := range ref.Apps {
			if r.Name == a.Name {
				out[i], found = r.RateRPS, true
			}
		}
		if !found {
			return nil, run.UsageErrorf("--reference-plan %s: no model %q", reference, a.Name)
		}
	}
	return out, nil
}

// pointRequests is how many requests the sweep's load point at load brings: the arrivals
// its processes make at their rates (the trace's recorded rates under --rate-scale, the
// plan's under --load) over the window, counted on a count series' own shape (its bursts
// included), or an exact replay's requests.
func pointRequests(cfg *sim.SweepConfig, load float64) float64 {
	if cfg.Replay != nil {
		return float64(cfg.Replay.Requests())
	}
	var n float64
	for a, ap := range cfg.Dep.Apps {
		rate := ap.RateRPS
		if a < len(cfg.BaseRPS) {
			rate = cfg.BaseRPS[a]
		}
		n += cfg.Arrival.Expected(rate*load, cfg.Duration)
	}
	return n
}

// checkSimulationSize refuses sweeps whose load points would not fit in memory, instead of
// letting the process be killed halfway: the largest load point's real request count.
// scaleFlag names the flag the load points came from (--load or --rate-scale).
func checkSimulationSize(cfg *sim.SweepConfig, scaleFlag string) error {
	peak := 0.0
	for _, l := range cfg.Loads {
		peak = max(peak, l)
	}
	if n := pointRequests(cfg, peak); n > run.MaxRequestsPerPoint {
		return run.UsageErrorf("%s %g over %s: %.3g requests in one load point: more than %d; shorten --duration or lower %s",
			scaleFlag, peak, time.Duration(cfg.Duration)*time.Microsecond, n, run.MaxRequestsPerPoint, scaleFlag)
	}
	return nil
}

// warnBeyondRange says when a load point runs an application above the rate range its plan
// states it was sized for (dataplane.App.RangeRPS: a cascade plan solved with --qps-max
// 400 simulated at 14,000 req/s): what it measures there is extrapolation, not the plan.
func warnBeyondRange(app *App, path string, cfg *sim.SweepConfig, scaleFlag string) {
	peak := 0.0
	for _, l := range cfg.Loads {
		peak = max(peak, l)
	}
	for a, x := range cfg.Dep.Apps {
		rate := x.RateRPS
		if a < len(cfg.BaseRPS) {
			rate = cfg.BaseRPS[a]
		}
		if r := rate * peak; x.RangeRPS > 0 && r > x.RangeRPS*(1+1e-9) {
			fmt.Fprintf(app.Err, "warning: %s: application %s simulated at up to %.4g req/s (%s %g), beyond the plan's stated range [0, %.4g] req/s: extrapolation, not what the plan was sized for (solve with a higher --qps-max, or lower %s)\n",
				formats.EchoName(path), formats.Echo(x.Name), r, scaleFlag, peak, x.RangeRPS, scaleFlag)
		}
	}
}

// maxLoadThatFits is the highest load factor whose load point stays within
// run.MaxRequestsPerPoint (the find-limit extension's cap): requests grow linearly in the load.
func maxLoadThatFits(cfg *sim.SweepConfig) float64 {
	n := pointRequests(cfg, 1)
	if n <= 0 || cfg.Replay != nil {
		return sim.DefaultLimitCap
	}
	return run.MaxRequestsPerPoint / n
}

// fewRequestsRemedy is what the few-requests warnings advise: a longer --duration where
// --duration sets the window, a longer trace where a Trace file does (traceWindow,
// setupLLMSweep: the trace's span, --duration unused).
func fewRequestsRemedy(cmd *cobra.Command, spec sim.ArrivalSpec) string {
	if _, _, ok := spec.Extent(); ok && !cmd.Flags().Changed("duration") {
		return fmt.Sprintf("replay a longer trace (the trace %s sets the window; --duration is not used)", spec.Name)
	}
	return "use a longer --duration"
}

// traceWindow replays a Trace file whole: without --duration the window is the trace's
// recorded span (a 20-minute count series was cut to the default 30 s, silently). With
// --duration shorter than the span it says on stderr what the cut leaves out. An exact LLM
// replay sets its own window (setupLLMSweep).
func traceWindow(cmd *cobra.Command, app *App, o *simulateOptions, cfg *sim.SweepConfig, spec sim.ArrivalSpec) error {
	span, total, ok := spec.Extent()
	if !ok || span <= 0 {
		return nil
	}
	if cfg.Replay != nil {
		if cmd.Flags().Changed("duration") {
			lo := cfg.Loads[0]
			for _, l := range cfg.Loads {
				lo = min(lo, l)
			}
			// the replay at load lo divides the trace's times by lo
			cut := 0
			for _, r := range spec.Trace.Requests {
				if float64(r.TimeUs)/lo >= float64(cfg.Duration) {
					cut++
				}
			}
			if cut > 0 {
				fmt.Fprintf(app.Err, "simulate: --duration %s cuts the trace %s (%s at load %.2f): %d of its %d requests are not replayed; leave --duration unset to replay it whole\n",
					o.duration, spec.Name, time.Duration(float64(cfg.Replay.Span())/lo)*time.Microsecond, lo, cut, total)
			}
		}
		return nil
	}
	if !cmd.Flags().Changed("duration") {
		cfg.Duration = span
		if !cmd.Flags().Changed("warmup") {
			cfg.Warmup = sim.DefaultWarmup(cfg.Dep, span)
		}
		return nil
	}
	if cfg.Duration < span {
		cut := float64(total) - spec.RecordedBefore(cfg.Duration)
		fmt.Fprintf(app.Err, "simulate: --duration %s cuts the trace %s (%s recorded): its last %s and %.0f of its %d requests (at the recorded rate) are not replayed; leave --duration unset to replay it whole\n",
			o.duration, spec.Name, time.Duration(span)*time.Microsecond, time.Duration(span-cfg.Duration)*time.Microsecond, cut, total)
	}
	return nil
}
