package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/planner/schedule"
	"github.com/plan-dev/plan/sim"
)

type simulateOptions struct {
	trace     string
	load      string
	duration  time.Duration
	seed      uint64
	report    string
	policy    string
	params    []string
	jitter    float64
	cancel    float64
	reference string
	parallel  int
	fail      []string
	warmup    time.Duration
	findLimit bool
	// switchDelay: a schedule's plan switch (simulate_schedule.go).
	switchDelay time.Duration
	switchAhead bool
	autopilot   autopilotFlags
	rateScale   string
	// requestsOut is --requests-out: every request's record as JSONL.
	requestsOut string
	// engine: --llm, one engine replaying a trace with no plan (simulate_engine.go).
	engine engineOptions
}

func newSimulateCmd(app *App) *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate [PLAN]",
		Short: "Simulate a plan in virtual time and sweep the load factor",
		Long: `simulate runs a plan through the same runtime policies that 'plan serve' uses, in
virtual time, at a range of load factors (1.0 = the plan's guaranteed rate per model,
target_rps; a Trace file is rescaled so its mean rate is that, so --load 1 replays a trace at
the planned peak: --rate-scale 1 replays it as recorded), and prints SLO attainment per load factor and the highest load factor with at
least 99% attainment (a step counts only if the next lower step passes too). Requests
arriving in the first --warmup of each load point (default: 5 × the plan's largest SLO, at
least 2s, at most 20% of --duration) are simulated but not counted, so start-up does not read
as steady-state misses. Each application's attainment gets a column of its own (plans serving
2 to 6), and a plan whose SLO is a percentile (a cascade's p95) a column with the latency
there and the max load factor at which it holds. With the
default --load range (or --find-limit) the sweep goes on past 1.0 while the highest load
still holds 99%: doubling up to 8x, then bisecting where it falls.

Load points run in parallel on all cores; results are identical to a sequential run and
depend only on the inputs and --seed. With --report DIR it writes report.json, the
attainment curve and a per-(v)GPU timeline of the highest passing load (PNG and SVG); with
--autopilot, autopilot-report.json (each decision: time, trigger, forecast, the chosen plan
and its predicted and observed effect) and autopilot.png/.svg (GPUs held over time against
the trace's rate, the forecasts and the plan's capacity).

On an LLM (QLM) plan the tables add, per class, TTFT, TPOT and E2E percentiles and output
tokens per second; classes may set ttft_slo and tpot_slo beside slo, and a request counts as
on time only if it meets all three. A per-request --trace (a Trace file or the Azure LLM
trace CSV) then replays exactly: each request once, in its class (class: or target: naming a
class, target: naming a model takes its classes in turn, untargeted requests take every
class in turn), with its own tokens. --requests-out FILE writes every request as JSONL.

With --llm there is no plan: --profile's LLM (its model on its GPU count; --model picks an
entry) is one engine instance that replays --trace once as recorded, scheduled as the
engine schedules (the vLLM-like FCFS policy unless --policy), and the report gives TTFT,
TPOT and E2E p50/p90/p95/p99, throughput, preemptions, the policy and the engine settings.
Such a profile needs only the engine's fields (plan validate --for replay).

PLAN defaults to ./plan.json. Given a schedule (plan solve --objective cost --trace --window)
instead, it replays the rate trace (--trace day.csv) with each window on its plan, switching
at window edges after --switch-delay, and reports attainment per window and overall beside
the peak plan's, and the cost. A plan keeps its queues while it serves; a switched-to plan
starts empty while the old one finishes what it admitted; the schedule and the peak plan
replay the same requests.`,
		Example: `  plan simulate plan.json
  plan simulate plan.json --trace bursty --load 0.5:1.0:0.05 --duration 30s --seed 7
  plan simulate plan.json --trace arrivals.json --report out/
  plan simulate np.json --reference-plan plan.json     # NP at PPipe's load factors
  plan simulate plan.json --policy reactive            # the reactive ablation baseline
  plan simulate testdata/export/qlm/plan.json --load 1 --fail llm-0@20s-40s   # an instance fails
  plan simulate testdata/export/qlm/plan.json --trace azure-llm-2023-conv.csv --requests-out reqs.jsonl
  plan simulate --llm --profile engine.json --trace requests.json --requests-out sim.jsonl   # one engine, no plan
  plan simulate schedule.json --trace day.csv   # a schedule (plan solve --window) at the trace's rates, switches included`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSimulate(cmd, app, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "poisson", "arrival process: poisson, bursty[:CV] (Gamma renewal, CV 3), mmpp, or a trace file (a Trace document, an Azure LLM trace CSV detected by its header, or a Mooncake JSONL trace detected by its fields: timestamp, input_length, output_length, hash_ids over 512-token blocks); on an LLM plan a per-request trace replays exactly: each request once, with its class and tokens, at its time / the load (default --load 1: as recorded)")
	listVar(f, &o.load, "load", "0.05:1.0:0.05", "load factors: LO:HI:STEP, a value, or a comma list (1.0 = each model at its planned rate; a trace is rescaled so its mean rate is that)")
	listVar(f, &o.rateScale, "rate-scale", "", "with a Trace file: replay it at these multiples of its recorded rate (1.0 = as recorded; LO:HI:STEP, a value or a comma list), instead of --load's planned rates")
	f.DurationVar(&o.duration, "duration", 30*time.Second, "arrival window per load point (virtual time; default 30s, a Trace file: its whole span)")
	f.Uint64Var(&o.seed, "seed", 1, "random seed (arrivals, jitter)")
	f.StringVar(&o.report, "report", "", "directory for report.json and plots")
	f.StringVar(&o.policy, "policy", "", "runtime policy (default: the plan's own): "+run.PolicyNames(app.Systems))
	f.StringSliceVar(&o.params, "param", nil, "policy parameter KEY=VALUE (repeatable), e.g. interval=true, admission=false")
	f.Float64Var(&o.cancel, "cancel", 0, "share of requests whose clients withdraw them at a seeded random time between arrival and deadline (0.1 = 10%): withdrawn from queues at once, their running batches' results discarded, reported as cancelled")
	f.Float64Var(&o.jitter, "jitter", 0, "relative uniform jitter on execution and transfer times (0.05 = ±5%)")
	f.StringVar(&o.reference, "reference-plan", "", "take the per-model rate at load 1.0 from this plan (compare NP/DART-r at PPipe's rates)")
	f.IntVar(&o.parallel, "parallel", 0, "load points simulated at once (0 = all cores)")
	f.DurationVar(&o.warmup, "warmup", 0, "requests arriving in this first part of each load point are simulated but not counted (default: 5 × the largest SLO, at least 2s, at most 20% of --duration; 0s counts every request)")
	f.BoolVar(&o.findLimit, "find-limit", false, "extend the sweep past its highest load while it holds 99% attainment (doubling up to 8x, then bisecting); default: on for the default --load range, off for an explicit --load")
	f.StringVar(&o.requestsOut, "requests-out", "", "write every request (id, class, arrival, first token, finish, outcome, reason, tokens; µs of virtual time) of every load point to this file as JSONL, to compare with a real engine's log")
	f.StringArrayVar(&o.fail, "fail", nil, "inject a worker failure WORKER@AT or WORKER@AT-UNTIL (repeatable; times from the start of each load point): its batches are lost and their requests re-queued by policies that fail over (QLM) or dropped as worker-failed")
	f.DurationVar(&o.switchDelay, "switch-delay", defaultSwitchDelay, "SCHEDULE only: how long a window's new plan takes to serve (GPUs up, models loaded); the previous plan serves meanwhile")
	f.BoolVar(&o.switchAhead, "switch-ahead", true, "SCHEDULE only: load each window's plan one --switch-delay before its window starts (the schedule is known ahead); false: at the window's start, the previous plan serving until it has loaded")
	addAutopilotFlags(f, &o.autopilot)
	addEngineFlags(f, &o.engine)
	return cmd
}

// checkSimulateFlags refuses the sweep's numeric and output flags out of range (exit 2).
func checkSimulateFlags(cmd *cobra.Command, o *simulateOptions) error {
	if o.duration <= 0 {
		return run.UsageErrorf("--duration: %s: must be > 0", o.duration)
	}
	if !(o.cancel >= 0 && o.cancel <= 1) { // also rejects NaN
		return run.UsageErrorf("--cancel: %g: must be in [0, 1]", o.cancel)
	}
	if !(o.jitter >= 0 && o.jitter < 1) { // also rejects NaN
		return run.UsageErrorf("--jitter: %g: must be in [0, 1)", o.jitter)
	}
	if o.parallel < 0 {
		return run.UsageErrorf("--parallel: %d: must be >= 0 (0 = all cores)", o.parallel)
	}
	// The output rule of every command (formats.CheckOutputDir): given, even as "", it must
	// name a directory to create in an existing one, or an existing directory.
	if cmd.Flags().Changed("report") || o.report != "" {
		if err := formats.CheckOutputDir(o.report); err != nil {
			return run.UsageErrorf("--report: %q: %v", o.report, err)
		}
	}
	return nil
}

// simulateMode is what one `plan simulate` run does, chosen from its flags and argument.
type simulateMode int

const (
	simSweep     simulateMode = iota // a plan at a sweep of load factors (simulate_sweep.go)
	simEngine                        // --llm: one engine replaying a trace (simulate_engine.go)
	simAutopilot                     // --autopilot: one run re-planning as it goes (autopilot.go)
	simSchedule                      // a schedule of plans over a rate trace (simulate_schedule.go)
)

// runSimulate picks the mode and runs it; each mode checks its own flags.
func runSimulate(cmd *cobra.Command, app *App, o *simulateOptions, args []string) error {
	mode, path, data, err := pickSimulateMode(cmd, o, args)
	if err != nil {
		return err
	}
	switch mode {
	case simEngine:
		return runEngineReplay(cmd, app, o, args)
	case simAutopilot:
		return runSimulateAutopilot(cmd, app, o, args)
	case simSchedule:
		return runSimulateSchedule(cmd, app, o, path, data)
	default:
		return runSimulateSweep(cmd, app, o, path)
	}
}

// pickSimulateMode decides the mode: --llm first, then --autopilot (a misused autopilot flag
// is reported by that mode), then the argument's content (a schedule or a plan). It returns
// the argument's path, and for a schedule its bytes, read once. A flag that belongs to the
// other kind of argument is refused here, whichever kind it is.
func pickSimulateMode(cmd *cobra.Command, o *simulateOptions, args []string) (simulateMode, string, []byte, error) {
	if o.engine.llm {
		return simEngine, "", nil, nil
	}
	if err := checkEngineFlags(cmd, o, args); err != nil {
		return 0, "", nil, err
	}
	if o.autopilot.enabled() || o.autopilot.checkFlagsUsed(cmd, false) != nil {
		return simAutopilot, "", nil, nil
	}
	path, err := run.ResolvePlanArg(args)
	if err != nil {
		return 0, "", nil, err
	}
	// Only a regular file is read here: a FIFO or a device would block, and the plan loader
	// names those as bad input. formats.ReadText bounds the size and refuses those before
	// opening.
	data, err := formats.ReadText(path, formats.MaxFileBytes)
	isSched := err == nil && schedule.IsSchedule(data)
	if err := scheduleFlags(cmd, path, isSched); err != nil {
		return 0, "", nil, err
	}
	if isSched {
		return simSchedule, path, data, nil
	}
	return simSweep, path, nil, nil
}

func printSimTable(app *App, rep *sim.Report) {
	// Utilisation by GPU class (high, low: PPipe's), or by GPU type where the cluster names
	// no class (a column headed "util -" said nothing).
	utilOf := func(p *sim.Point) []sim.Utilization { return p.Classes }
	unclassed := true
	for _, p := range rep.Points {
		for _, c := range p.Classes {
			unclassed = unclassed && c.Name == "-"
		}
	}
	if unclassed {
		utilOf = func(p *sim.Point) []sim.Utilization { return p.GPUTypes }
	}
	classes := map[string]bool{}
	for i := range rep.Points {
		for _, c := range utilOf(&rep.Points[i]) {
			classes[c.Name] = true
		}
	}
	var cls []string
	for c := range classes {
		cls = append(cls, c)
	}
	sort.Strings(cls)
	cancelled := false
	for _, p := range rep.Points {
		cancelled = cancelled || p.Total.Cancelled > 0
	}
	header := []string{"load", "offered/s", "attainment", "goodput/s", "dropped", "late", "p50 ms", "p99 ms"}
	sloP := sloPercentile(rep)
	if sloP > 0 { // the SLO's own percentile (a cascade's p95), where the plan judges at one
		header = append(header, fmt.Sprintf("p%g ms", 100*sloP))
	}
	if cancelled { // the column appears only when clients withdrew requests (--cancel)
		header = slices.Insert(header, 5, "cancelled")
	}
	apps := run.AppNames(rep)
	for _, a := range apps {
		header = append(header, "att "+a)
	}
	for _, c := range cls {
		header = append(header, "util "+c)
	}
	var rows [][]string
	for _, p := range rep.Points {
		row := []string{
			fmt.Sprintf("%.2f", p.Load), fmt.Sprintf("%.1f", p.Total.OfferedRPS), run.Pct(p.Total.Attainment),
			fmt.Sprintf("%.1f", p.Total.GoodputRPS), fmt.Sprint(p.Total.Dropped), fmt.Sprint(p.Total.Late),
			fmt.Sprintf("%.1f", float64(p.Total.Latency.P50Us)/1000), fmt.Sprintf("%.1f", float64(p.Total.Latency.P99Us)/1000),
		}
		if sloP > 0 {
			row = append(row, run.PercentileMs(p.Total.SLOPercentile))
		}
		if cancelled {
			row = slices.Insert(row, 5, fmt.Sprint(p.Total.Cancelled))
		}
		for _, a := range apps {
			v := "-"
			for _, x := range p.Apps {
				if x.Name == a && x.Requests > 0 {
					v = run.Pct(x.Attainment)
				}
			}
			row = append(row, v)
		}
		for _, c := range cls {
			u := "-"
			for _, x := range utilOf(&p) {
				if x.Name == c {
					u = run.Pct(x.Busy)
				}
			}
			row = append(row, u)
		}
		rows = append(rows, row)
	}
	app.Table(header, rows)
	why := map[string]string{}
	for _, a := range apps {
		why["att "+a] = "no request of " + a + " measured at that load"
	}
	for _, c := range cls {
		why["util "+c] = "no " + c + " GPU in the deployment at that load"
	}
	run.DashNote(app.Out, header, rows, why)
	run.PrintLLMTable(&app.IO, rep.Points)
	fmt.Fprintf(app.Out, "\n%s\n", maxLoadLine(rep))
	if sloP > 0 {
		fmt.Fprintf(app.Out, "max load factor with the p%g SLO met (%g%% attainment): %.2f\n", 100*sloP, 100*sloP, sim.MaxLoadAt(rep.Points, sloP))
	}
	if line := run.AccuracyLine(rep); line != "" {
		fmt.Fprintln(app.Out, line)
	}
}

// sloPercentile is the percentile every load point's total is judged at (0 = none).
func sloPercentile(rep *sim.Report) float64 {
	p := 0.0
	for _, pt := range rep.Points {
		if pt.Total.SLOPercentile == nil {
			return 0
		}
		p = pt.Total.SLOPercentile.Percentile
	}
	return p
}

// maxLoadLine says which target and window the max load factor used.
func maxLoadLine(rep *sim.Report) string {
	what := fmt.Sprintf("max load factor at %g%% attainment", 100*sim.MaxLoadTarget)
	if rep.WarmupUs > 0 {
		what += ", warm-up " + time.Duration(rep.WarmupUs*int64(time.Microsecond)).String() + " excluded"
	}
	switch {
	case rep.MaxLoad99 <= 0:
		return what + ": none of the simulated loads"
	case rep.Extended && rep.MaxLoad99 >= rep.LimitCap:
		return fmt.Sprintf("%s: %.2f (the sweep's cap: it holds there; the limit is higher)", what, rep.MaxLoad99)
	}
	return fmt.Sprintf("%s: %.2f", what, rep.MaxLoad99)
}

// simWarmup is --warmup, or by default sim.DefaultWarmup: five times the plan's largest SLO,
// at least 2 s, at most 20% of --duration, long enough for the queues and
// the policies' estimators to fill, short enough to leave most of a short run measured.
func simWarmup(cmd *cobra.Command, o *simulateOptions, dep *dataplane.Deployment) (dataplane.Time, error) {
	return warmupFlag(cmd, o.warmup, o.duration, dep)
}

// warmupFlag is a --warmup flag's window (simulate and load share the rule).
func warmupFlag(cmd *cobra.Command, w, duration time.Duration, dep *dataplane.Deployment) (dataplane.Time, error) {
	if !cmd.Flags().Changed("warmup") {
		return sim.DefaultWarmup(dep, dataplane.Time(duration/time.Microsecond)), nil
	}
	if w < 0 || w >= duration {
		return 0, run.UsageErrorf("--warmup: %s: must be >= 0 and shorter than --duration %s", w, duration)
	}
	return dataplane.Time(w / time.Microsecond), nil
}

// warnFewRequests warns on stderr about every application that has, at a load point that
// decides the max load factor (one it misses the target at, or the max load itself), too few
// measured requests for the target to mean anything: below 1/(1−target) (100 at 99%) one
// miss already fails it, and 4 requests print 75%. Low loads of a sweep
// that pass with few requests decide nothing and are not warned about.
func warnFewRequests(app *App, rep *sim.Report, remedy string) {
	need := int64(math.Ceil(1/(1-sim.MaxLoadTarget) - 1e-9))
	for a := range rep.BaseRPS {
		fewest, at := int64(-1), 0.0
		for _, p := range rep.Points {
			if a >= len(p.Apps) || (p.Apps[a].Attainment >= sim.MaxLoadTarget && p.Load != rep.MaxLoad99) {
				continue
			}
			if p.Apps[a].Requests > 0 && (fewest < 0 || p.Apps[a].Requests < fewest) {
				fewest, at = p.Apps[a].Requests, p.Load
			}
		}
		if fewest >= 0 && fewest < need {
			fmt.Fprintf(app.Err, "warning: application %q has %d measured requests at load %.2f: too few for a %g%% attainment (at least %d; one miss is %.1f%%): %s\n",
				rep.BaseRPS[a].App, fewest, at, 100*sim.MaxLoadTarget, need, 100/float64(fewest), remedy)
		}
	}
}

func writeSimReport(app *App, cfg *sim.SweepConfig, rep *sim.Report, dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return run.UsageErrorf("--report %s: %v", dir, err)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := formats.WriteAtomic(filepath.Join(dir, "report.json"), append(data, '\n')); err != nil {
		return err
	}
	p, err := sim.AttainmentPlot(fmt.Sprintf("%s: %s, %s", rep.Plan, rep.Policy, rep.Trace), sim.CurvesOf(rep, ""))
	if err != nil {
		return err
	}
	files, err := sim.SavePlot(p, dir, "attainment", 16*vg.Centimeter, 10*vg.Centimeter)
	if err != nil {
		return err
	}
	// Timeline of the highest passing load (else the lowest load), over a window chosen
	// from its requests (sim.TimelineWindow).
	load := rep.MaxLoad99
	if load == 0 {
		load = rep.Points[0].Load
	}
	s, err := sim.RunForTimeline(cfg, load)
	if err != nil {
		return err
	}
	from, to := sim.TimelineWindow(s.Engine, cfg.Duration)
	tp, err := sim.TimelinePlot(fmt.Sprintf("%s at load %.2f", rep.Plan, load), s.Engine, from, to)
	if err != nil {
		return err
	}
	rows := sim.TimelineRows(cfg.Dep)
	tf, err := sim.SavePlot(tp, dir, "timeline", 24*vg.Centimeter, vg.Length(3+0.45*float64(rows))*vg.Centimeter)
	if err != nil {
		return err
	}
	cdf, err := writeTokenCDFs(cfg, rep, dir, load)
	if err != nil {
		return err
	}
	app.Infof("wrote %s, %s", filepath.Join(dir, "report.json"), strings.Join(append(append(files, tf...), cdf...), ", "))
	return nil
}

// discardEffects lets the policy be attached once for validation without a driver.
type discardEffects struct{}

func (discardEffects) RunBatch(dataplane.Time, dataplane.WorkerID, dataplane.BatchID, int, dataplane.StageID, int, dataplane.Time) {
}
func (discardEffects) Transfer(dataplane.Time, dataplane.BatchID, int, dataplane.ServerID, dataplane.ServerID, int64, dataplane.Time) {
}
func (discardEffects) SetTimer(dataplane.Time, int64)            {}
func (discardEffects) Finish(dataplane.Time, *dataplane.Request) {}
