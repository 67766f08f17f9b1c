package cli

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/replay"
	"github.com/plan-dev/plan/internal/run/simulate"
	"github.com/plan-dev/plan/planner/schedule"
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
	// windows: a schedule's windows to replay, "A-B" (simulate_schedule.go).
	windows     string
	switchAhead bool
	autopilot   autopilotFlags
	rateScale   string
	// requestsOut is --requests-out: every request's record as JSONL.
	requestsOut string
	// engine: --llm, one engine replaying a trace with no plan (internal/run/replay).
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
  plan simulate schedule.json --trace day.csv   # a schedule (plan solve --window) at the trace's rates, switches included
  plan simulate schedule.json --trace day.csv --windows 9-12   # four of its windows`,
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
	f.StringVar(&o.windows, "windows", "", "SCHEDULE only: replay windows A-B of the schedule (1-based, inclusive; \"5\" for one), their costs and the peak plan's over the same span: a long day in parts (each replay holds at most 5,000,000 requests)")
	f.BoolVar(&o.switchAhead, "switch-ahead", true, "SCHEDULE only: load each window's plan one --switch-delay before its window starts (the schedule is known ahead); false: at the window's start, the previous plan serving until it has loaded")
	addAutopilotFlags(f, &o.autopilot)
	addEngineFlags(f, &o.engine)
	return cmd
}

// simulateMode is what one `plan simulate` run does, chosen from its flags and argument.
type simulateMode int

const (
	simSweep     simulateMode = iota // a plan at a sweep of load factors (internal/run/simulate)
	simEngine                        // --llm: one engine replaying a trace (internal/run/replay)
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
	for _, name := range []string{"profile", "model"} {
		if cmd.Flags().Changed(name) {
			return 0, "", nil, run.UsageErrorf("--%s: only with --llm (one engine replaying --trace)", name)
		}
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

// runSimulateSweep is `plan simulate PLAN`: the plan at a sweep of load factors.
func runSimulateSweep(cmd *cobra.Command, app *App, o *simulateOptions, path string) error {
	set := cmd.Flags().Changed
	return simulate.Run(cmd.Context(), simulate.Args{
		Systems: app.Systems, Plan: path, Trace: o.trace, Load: o.load, LoadSet: set("load"),
		RateScale: o.rateScale, RateScaleSet: set("rate-scale"), Duration: o.duration, DurationSet: set("duration"),
		Seed: o.seed, Report: o.report, ReportSet: set("report"), Policy: o.policy, Params: o.params,
		Jitter: o.jitter, Cancel: o.cancel, Reference: o.reference, Parallel: o.parallel, Fail: o.fail,
		Warmup: o.warmup, WarmupSet: set("warmup"), FindLimit: o.findLimit, FindLimitSet: set("find-limit"),
		RequestsOut: o.requestsOut,
	}, &app.IO)
}

// engineOptions are the flags of `plan simulate --llm`: one LLM engine replaying a trace,
// with no cluster, workload or plan (internal/run/replay).
type engineOptions struct {
	llm     bool
	profile string
	model   string
}

func addEngineFlags(f *pflag.FlagSet, o *engineOptions) {
	f.BoolVar(&o.llm, "llm", false, "replay --trace through one LLM engine built from --profile (its model, GPU and GPU count), with no plan: the engine's own FCFS scheduling by default (--policy to choose)")
	f.StringVar(&o.profile, "profile", "", "with --llm: the LLM profile (measured iteration curves, KV capacity, engine settings) of the engine to replay")
	f.StringVar(&o.model, "model", "", "with --llm: the profile's LLM entry to replay when it holds several: MODEL, MODEL@GPU or MODEL@NxGPU")
}

// runEngineReplay is `plan simulate --llm --profile F --trace T`: one engine replaying a
// trace. The command's own flags given are passed by name, for the replay to refuse those
// of a plan's sweep.
func runEngineReplay(cmd *cobra.Command, app *App, o *simulateOptions, args []string) error {
	var given []string
	own := cmd.LocalNonPersistentFlags() // (its Visit sees no flag set: the set is a copy)
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if own.Lookup(f.Name) != nil {
			given = append(given, f.Name)
		}
	})
	return replay.Run(cmd.Context(), replay.Args{
		Systems: app.Systems, PlanArgs: args, FlagsSet: given, Profile: o.engine.profile, Model: o.engine.model,
		Trace: o.trace, TraceSet: cmd.Flags().Changed("trace"), Policy: o.policy, Params: o.params,
		Seed: o.seed, Jitter: o.jitter, Cancel: o.cancel, Duration: o.duration, DurationSet: cmd.Flags().Changed("duration"),
		RequestsOut: o.requestsOut,
	}, &app.IO)
}
