// Package simulate is the sweep mode of `plan simulate PLAN`: the plan run in virtual time
// through the runtime policies `plan serve` uses, at a range of load factors (or of
// multiples of a trace's recorded rate), reporting SLO attainment per load factor and the
// highest load factor that holds 99% attainment, with the report directory's plots and the
// per-request log. The cobra command in cmd/plan only fills Args and calls Run.
package simulate

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/sim"
)

// Args are a sweep's inputs, one field per flag of `plan simulate`. A *Set field says the
// flag was given on the command line (its default then differs from an explicit value).
type Args struct {
	// Systems is the system registry the plan, its policies and the trace are read with.
	Systems *systems.Registry
	// Plan is the plan file's path (the CLI resolves the default ./plan.json).
	Plan string
	// Trace is --trace: poisson (the default), bursty[:CV], mmpp, or a trace file.
	Trace string
	// Load is --load: LO:HI:STEP, a value or a comma list (default "0.05:1.0:0.05").
	Load string
	// LoadSet says --load was given (an explicit range turns the find-limit extension off).
	LoadSet bool
	// RateScale is --rate-scale: multiples of a Trace file's recorded rate (default none).
	RateScale string
	// RateScaleSet says --rate-scale was given.
	RateScaleSet bool
	// Duration is --duration, the arrival window per load point (default 30s).
	Duration time.Duration
	// DurationSet says --duration was given (else a Trace file's span sets the window).
	DurationSet bool
	// Seed is --seed (default 1).
	Seed uint64
	// Report is --report, the directory for report.json and plots ("" = none).
	Report string
	// ReportSet says --report was given (even as "", it must name a usable directory).
	ReportSet bool
	// Policy is --policy ("" = the plan's own).
	Policy string
	// Params are --param KEY=VALUE (default none).
	Params []string
	// Jitter is --jitter, relative execution-time jitter in [0, 1) (default 0).
	Jitter float64
	// Cancel is --cancel, the share of requests withdrawn by their clients (default 0).
	Cancel float64
	// Reference is --reference-plan: take load 1.0's rates from this plan ("" = the plan's).
	Reference string
	// Parallel is --parallel, load points simulated at once (default 0 = all cores).
	Parallel int
	// Fail are --fail WORKER@AT[-UNTIL] failures (default none).
	Fail []string
	// Warmup is --warmup (default: sim.DefaultWarmup, used unless WarmupSet).
	Warmup time.Duration
	// WarmupSet says --warmup was given.
	WarmupSet bool
	// FindLimit is --find-limit (default: on for the default --load range).
	FindLimit bool
	// FindLimitSet says --find-limit was given.
	FindLimitSet bool
	// RequestsOut is --requests-out, a JSONL file of every request ("" = none).
	RequestsOut string

	// llmProfiles are the plan's embedded LLM profiles (newSweepConfig): the regimes of
	// its LLM predictions' expected-error bands.
	llmProfiles []formats.LLMProfile
	// recorded is the plan's own prediction (nil: none): the latency bands it recorded
	// for its other applications are printed under the sweep.
	recorded *formats.Prediction
}

// Run is `plan simulate PLAN`: the plan at a sweep of load factors.
func Run(ctx context.Context, a Args, io *run.IO) error {
	cfg, err := newSweepConfig(io, &a)
	if err != nil {
		return err
	}
	// The bar shows before the first load point ends (one may take seconds).
	task := progressline.NewTask(io.Err, io.Quiet, "simulate", "load points", len(cfg.Loads))
	cfg.Progress = func(done, total int, p *sim.Point) {
		task.Step(done, total, fmt.Sprintf("last: %.2f → %.2f%%", p.Load, 100*p.Total.Attainment))
	}
	rep, err := sim.Sweep(ctx, cfg)
	task.Finish("")
	if err != nil {
		return err
	}
	remedy := fewRequestsRemedy(&a, cfg.Arrival)
	warnFewRequests(io, rep, remedy)
	warnFewForPercentile(io, rep, remedy)
	if err := writeRequestsOut(a.RequestsOut, rep); err != nil {
		return err
	}
	if a.Report != "" {
		if err := writeSimReport(io, cfg, rep, a.Report); err != nil {
			return err
		}
	}
	if io.JSONOutput() {
		return io.WriteJSON(rep)
	}
	printSimTable(io, rep)
	printLLMBands(io, a.llmProfiles, rep)
	printLatencyBands(io, a.recorded)
	return nil
}

// CheckFlags refuses the sweep's numeric and output flags out of range (exit 2); a
// one-engine replay (package replay) shares the rule.
func CheckFlags(a *Args) error {
	if a.Duration <= 0 {
		return run.UsageErrorf("--duration: %s: must be > 0", a.Duration)
	}
	if !(a.Cancel >= 0 && a.Cancel <= 1) { // also rejects NaN
		return run.UsageErrorf("--cancel: %g: must be in [0, 1]", a.Cancel)
	}
	if !(a.Jitter >= 0 && a.Jitter < 1) { // also rejects NaN
		return run.UsageErrorf("--jitter: %g: must be in [0, 1)", a.Jitter)
	}
	if a.Parallel < 0 {
		return run.UsageErrorf("--parallel: %d: must be >= 0 (0 = all cores)", a.Parallel)
	}
	// The output rule of every command (formats.CheckOutputDir): given, even as "", it must
	// name a directory to create in an existing one, or an existing directory.
	if a.ReportSet || a.Report != "" {
		if err := formats.CheckOutputDir(a.Report); err != nil {
			return run.UsageErrorf("--report: %q: %v", a.Report, err)
		}
	}
	return nil
}

// newSweepConfig reads the plan and builds its sweep from the flags, refusing bad input
// (exit 2) before any load point runs, and warns where the sweep leaves the plan's range.
func newSweepConfig(io *run.IO, a *Args) (*sim.SweepConfig, error) {
	path := a.Plan
	plan, dep, defPolicy, err := run.LoadPlanDeploymentPolicy(a.Systems, path)
	if err != nil {
		return nil, err
	}
	if e := plan.Provenance.Embedded; e != nil {
		for _, pr := range e.Profiles {
			a.llmProfiles = append(a.llmProfiles, pr.LLMs...)
		}
	}
	a.recorded = plan.Prediction
	run.WarnStale(io, a.Systems, path, plan)
	if a.Policy == "" {
		a.Policy = defPolicy // the plan's own policy (a PARD plan names its dropper)
	}
	spec, err := sim.ParseTraceFlag(a.Trace)
	if err != nil {
		return nil, run.UsageError(err)
	}
	if spec.Trace != nil {
		// The trace must name what the plan serves (the cross-file check of plan validate).
		if errs := formats.CheckSet(map[string]formats.Document{path: plan, a.Trace: spec.Trace}, a.Systems.Sections()); len(errs) > 0 {
			return nil, run.UsageError(errs)
		}
	}
	loads, traceBase, err := simLoads(a, spec, dep)
	if err != nil {
		return nil, err
	}
	if err := CheckFlags(a); err != nil {
		return nil, err
	}
	warmup, err := warmupFlag(a.WarmupSet, a.Warmup, a.Duration, dep)
	if err != nil {
		return nil, err
	}
	if err := CheckRequestsOut(a.RequestsOut); err != nil {
		return nil, err
	}
	findLimit := !a.LoadSet && traceBase == nil
	if a.FindLimitSet {
		findLimit = a.FindLimit
	}
	pcfg, reg, failures, err := sweepPolicy(a, dep, defPolicy)
	if err != nil {
		return nil, err
	}
	base, err := baseRates(a.Systems, dep, a.Reference)
	if err != nil {
		return nil, err
	}
	if traceBase != nil {
		base = traceBase // load factor 1.0 = the trace as recorded
	}
	strategy := plan.Provenance.Strategy
	cfg := &sim.SweepConfig{
		Dep: dep, Policies: reg, Policy: pcfg, Arrival: spec, BaseRPS: base, Loads: loads,
		Duration: dataplane.Time(a.Duration / time.Microsecond), Seed: a.Seed, Jitter: a.Jitter,
		Parallel: a.Parallel, PlanName: filepath.Base(path), Strategy: strategy, Failures: failures,
		CancelFraction: a.Cancel, Warmup: warmup, FindLimit: findLimit, LimitCap: sim.DefaultLimitCap,
		RecordRequests: a.RequestsOut != "",
	}
	if err := setupLLMSweep(a, plan, cfg, spec); err != nil {
		return nil, err
	}
	if err := traceWindow(io, a, cfg, spec); err != nil {
		return nil, err
	}
	scaleFlag := "--load"
	if traceBase != nil {
		scaleFlag = "--rate-scale"
	}
	if err := checkSimulationSize(cfg, scaleFlag); err != nil {
		return nil, err
	}
	warnBeyondRange(io, path, cfg, scaleFlag)
	if cfg.FindLimit {
		// Extend only as far as a load point still fits in memory.
		cfg.LimitCap = min(cfg.LimitCap, maxLoadThatFits(cfg))
	}
	return cfg, nil
}

// sweepPolicy builds the sweep's runtime policy (--policy, --param) and failures (--fail),
// and attaches the policy once to the plan's deployment.
func sweepPolicy(a *Args, dep *dataplane.Deployment, defPolicy string) (dataplane.Config, *dataplane.Registry, []sim.Failure, error) {
	path := a.Plan
	params, err := run.ParseParams(a.Params)
	if err != nil {
		return dataplane.Config{}, nil, nil, err
	}
	var failures []sim.Failure
	for _, spec := range a.Fail {
		f, err := sim.ParseFailure(spec, dep)
		if err != nil {
			return dataplane.Config{}, nil, nil, run.UsageErrorf("--fail: %s: %v", path, err)
		}
		failures = append(failures, f)
	}
	pcfg := dataplane.Config{Policy: a.Policy, Params: params}
	reg := a.Systems.Policies()
	pol, err := reg.New(dep, pcfg, defPolicy)
	if err != nil {
		return dataplane.Config{}, nil, nil, run.UsageErrorf("--policy: %s: %v", path, err)
	}
	if len(failures) > 0 && !dataplane.HandlesFailures(pol) {
		return dataplane.Config{}, nil, nil, run.UsageErrorf("--fail: policy %s does not handle worker failures (it declares no dataplane.FailureMode)", pol.Name())
	}
	// Attach the policy once up front: a plan it cannot serve is bad input (exit 2), not a
	// failure discovered at the first load point.
	if _, err := dataplane.NewEngine(dep, pol, DiscardEffects{}); err != nil {
		return dataplane.Config{}, nil, nil, run.UsageErrorf("--policy %s: %s: %v", a.Policy, path, err)
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

// warmupFlag is --warmup's window, or by default (set false) sim.DefaultWarmup: five times
// the plan's largest SLO, at least 2 s, at most 20% of --duration, long enough for the
// queues and the policies' estimators to fill, short enough to leave most of a short run
// measured.
func warmupFlag(set bool, w, duration time.Duration, dep *dataplane.Deployment) (dataplane.Time, error) {
	if !set {
		return sim.DefaultWarmup(dep, dataplane.Time(duration/time.Microsecond)), nil
	}
	if w < 0 || w >= duration {
		return 0, run.UsageErrorf("--warmup: %s: must be >= 0 and shorter than --duration %s", w, duration)
	}
	return dataplane.Time(w / time.Microsecond), nil
}

// DiscardEffects lets a policy be attached once for validation without a driver.
type DiscardEffects struct{}

// RunBatch discards the batch.
func (DiscardEffects) RunBatch(dataplane.Time, dataplane.WorkerID, dataplane.BatchID, int, dataplane.StageID, int, dataplane.Time) {
}

// Transfer discards the transfer.
func (DiscardEffects) Transfer(dataplane.Time, dataplane.BatchID, int, dataplane.ServerID, dataplane.ServerID, int64, dataplane.Time) {
}

// SetTimer discards the timer.
func (DiscardEffects) SetTimer(dataplane.Time, int64) {}

// Finish discards the finished request.
func (DiscardEffects) Finish(dataplane.Time, *dataplane.Request) {}
