package cli

import (
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run/solve"
	"github.com/plan-dev/plan/planner"
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
	arrivals   string
	// spot is --spot SHARE (with --objective cost).
	spot spotFlag
}

// commonSolveFlags are the flags every planner takes; the rest belong to one planner each.
var commonSolveFlags = append([]string{"profile", "cluster", "workload", "slo", "strategy", "time-limit", "gap", "out", "deterministic", "objective", "spot", "profile-fit", "accept-miss", "arrivals"}, windowSolveFlags...)

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
re-uses. --time-limit counts from the command's start and bounds the whole command: the
solve, the plan's prediction and, on a failure, its explanation. When the time limit is
reached the best plan found so far is written together with its proven gap; a prediction
whose load search the limit cut short says so (prediction.headroom_search) and states what it
established as lower bounds. An SLO no plan can meet exits 2 and names the smallest feasible
SLO; so does a plan that would miss its target on the GPUs given (an accuracy or latency SLO, a model's
rate_rps, a load the cluster cannot carry), naming the best attainable value and what would
reach the target. Such a failure (and a plan that misses in simulation, below) is explained
after the error: the closest plan and how far each target is from being met, the smallest
factor on every SLO and on every stated rate at which the solve succeeds, and the GPUs of each
type to add (within available, priced) that make the targets as given feasible, or "none
would". Each is found by solving again, bisected to 2% and checked (the solve succeeds at it
and fails at 95% of it; one GPU fewer fails), in what is left of --time-limit and 48 solves;
with -O json it is a report on stdout. Profiles are planned on their measured latencies: a point more than 25%
out of monotone order with its neighbours (a dip below the batch before it, a spike above the
batch after it) is an outlier, named on stderr (file, model, GPU, batch, measured → used) and
planned on at its neighbours' curve; the plan keeps the measured value beside it (raw_block_us,
raw_total_us) and records fit: outliers, or fit: none when every value is as measured.
--profile-fit none plans on every measured value, outliers included.

Before writing, solve simulates the plan at its own rates (its runtime policy, Poisson
arrivals or those --arrivals names, seed 1, long enough for 2,000 requests of each
application) and records the
prediction in the plan: per application the attainment and its sampling error, drops, late
answers, p50/p90/p99 latency (TTFT and TPOT for LLM classes) and the rate up to which it holds
its target. Load 1 is the workload's rate where it gives one, else the throughput the plan
states (a PPipe throughput plan, a cascade's QPS range: a miss there is reported with the rate
the plan does sustain). A plan sized for the workload's rates that misses an application's
target (99%, or the percentile its SLO is stated at) is solved again for 1.05, 1.1, 1.15,
1.25, 1.5 and 2× the rates (provenance.rate_margin), keeping the first that meets; if none meets, solve exits 2 naming the application, its
predicted and target attainment and the rate it does sustain; --accept-miss writes it anyway,
the miss in its prediction. plan check re-runs the prediction, under the same arrivals.

Planners size for mean rates. Real traffic is burstier than Poisson: at the same mean rate it
queues more, and a plan that holds its SLO on Poisson arrivals may miss on it. --arrivals
bursty:CV predicts (and so sizes) under Gamma-renewal arrivals whose inter-arrival times have
that coefficient of variation (1 is Poisson; vllm bench serve's --burstiness B is CV 1/√B),
--arrivals mmpp under a two-state Markov-modulated Poisson process (2.5× the rate for 0.2 s,
0.625× for 0.8 s).`,
		Example: `  plan solve --slo 200ms
  plan solve --profile profile.json --cluster cluster.yaml --workload workload.yaml -o plan.json
  plan solve --strategy np -o np.json          # PPipe's baselines: np, dart-r
  plan solve --max-partitions 2 --time-limit 30s --gap 0.01
  plan solve --profile testdata/pard/profile.json --cluster testdata/pard/cluster.json --workload testdata/pard/workload.json -o pard.json
  plan solve --profile testdata/qlm/profile.json --cluster testdata/qlm/cluster.yaml --workload testdata/qlm/workload.yaml -o qlm.json
  plan solve --cluster testdata/dyorc/cluster-small.json --workload testdata/dyorc/small.json -o dyorc.json
  plan solve --output json | jq .ppipe.models[0].throughput_rps
  plan solve --arrivals bursty:2 --cluster testdata/dyorc/cluster-small.json --workload testdata/dyorc/small.json -o dyorc.json   # hold the SLO on bursty traffic
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
	f.DurationVar(&o.timeLimit, "time-limit", planner.DefaultTimeLimit, "the whole command's time limit (solve, prediction, writing): on expiry the best plan so far is written once its prediction has checked it; one the limit leaves unchecked is not (exit 1)")
	f.Float64Var(&o.gap, "gap", 0, "relative MIP gap at which to stop (0.001 = 0.1%; default: the planner's own, 0.0001 for PPipe, whose published plans were solved to Gurobi's default MIPGap, 0.001 for the others)")
	f.StringVarP(&o.out, "out", "o", "plan.json", "where to write the plan")
	addObjectiveFlag(f, &o.objective)
	addSpotFlag(f, &o.spot, "with --objective cost: ")
	addWindowFlags(f, &o.win)
	f.StringVar(&o.profileFit, "profile-fit", formats.FitOutliers, "outliers: replace measured points more than 25% out of monotone order by their neighbours' curve; none: plan on every measured value")
	f.BoolVar(&o.deterministic, "deterministic", false, "record solve_ms as 0 so identical inputs give byte-identical plans (golden files)")
	f.StringVar(&o.arrivals, "arrivals", "poisson", "arrival process the plan's prediction simulates (and sizes for): poisson, bursty[:CV] (Gamma renewal, CV 3) or mmpp")
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

// runSolve fills solve.Args from the flags: a flag given that is neither common to every
// planner nor the root's is a planner's own, passed on by name for the chosen planner to
// take (or refuse).
func runSolve(cmd *cobra.Command, app *App, o *solveOptions) error {
	fl := cmd.Flags()
	var given []solve.Flag
	fl.Visit(func(f *pflag.Flag) {
		if !slices.Contains(commonSolveFlags, f.Name) && cmd.InheritedFlags().Lookup(f.Name) == nil {
			given = append(given, solve.Flag{Name: f.Name, Value: f.Value.String()})
		}
	})
	return solve.Run(cmd.Context(), solve.Args{
		Systems:       app.Systems,
		Inputs:        o.inputs(),
		SLO:           o.slo,
		SLOSet:        fl.Changed("slo"),
		Strategy:      o.strategy,
		TimeLimit:     o.timeLimit,
		Gap:           o.gap,
		GapSet:        fl.Changed("gap"),
		Out:           o.out,
		Deterministic: o.deterministic,
		Objective:     o.objective,
		Spot:          o.spot.share(),
		AcceptMiss:    o.acceptMiss,
		Arrivals:      o.arrivals,
		Window:        o.win.args(fl),
		PlannerFlags:  given,
		ToolVersion:   buildVersion().Version,
	}, &app.IO)
}

// inputs are the files the options name.
func (o *solveOptions) inputs() solve.Inputs {
	return solve.Inputs{Profiles: o.profiles, Cluster: o.cluster, Workload: o.workload, ProfileFit: o.profileFit}
}
