package dyorcbench

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
)

// Command is `plan bench dyorc`.
type Command struct {
	quick    bool
	report   string
	apps     []string
	policies []string
	seeds    int
	seconds  int
	gpus     int
	load     float64
	stateUs  float64
	gpuGB    float64
	parallel int
	noScale  bool
	noChange bool
}

// Help implements benchapi.Bench.
func (o *Command) Help() benchapi.Help {
	return benchapi.Help{
		Name:  "dyorc",
		Short: "DyOrc vs greedy, round-robin, Triton-like and the oracle on GILL, KC, Debate, image, MIX; accuracy; scaling",
		Long: `Reproduces DyOrc's evaluation (DyOrc §8) in the simulator on our stand-in profiles
of its models (the language models' work drawn per call as U(0.5, 1.5) of the profile's, an
output length no scheduler knows in advance) and an Azure-like trace (30 Zipf functions,
lognormal per-minute bursts, a slow sine): each workload (gill, kc, debate, image, mix) is placed by the MILP of plan solve on
8 GPUs and replayed under DyOrc and every baseline; then GILL is swept over 8..256 GPUs with
the scheduler's DP cost charged (states × state_us), and MIX is replayed with the paper's
pattern change (from the middle minute GILL ×2, KC and Debate ×0.5). It prints mean and p99 latency, DyOrc's
speed-up over each baseline as L_base/L_dyorc − 1 next to the paper's 4–198 %, the gap to the
oracle-prediction bound, the predictor's per-step and whole-workflow accuracy next to the
paper's 76–94 %, and per GPU count the latency, DP states, charged scheduler time and the
measured decision time of this Go DP, and each policy's latency before and after the change.

--quick: one seed, 600 s traces, scaling to 128 GPUs (about a minute on 2 cores).`,
		Example: `  plan bench dyorc --quick
  plan bench dyorc --apps gill,mix --seeds 3 --report dyorc-report`,
	}
}

// Flags implements benchapi.Bench.
func (o *Command) Flags(f *pflag.FlagSet) {
	f.BoolVar(&o.quick, "quick", false, "reduced run (1 seed, 600 s, scaling to 128 GPUs): under 2 minutes")
	f.StringVar(&o.report, "report", "", "directory for bench.json")
	f.StringSliceVar(&o.apps, "apps", nil, "workloads (default gill,kc,debate,image,mix)")
	f.StringSliceVar(&o.policies, "policies", nil, "policies (default all dyorc policies)")
	f.IntVar(&o.seeds, "seeds", 0, "seeds per workload (default 3, quick 1)")
	f.IntVar(&o.seconds, "seconds", 0, "trace length in seconds (default 1800, quick 600)")
	f.IntVar(&o.gpus, "gpus", 0, "GPUs of the main comparison (default 8)")
	f.Float64Var(&o.load, "load", 0, "multiplier on the stand-in apps' rates (default 3)")
	f.Float64Var(&o.gpuGB, "gpu-gb", 0, "memory of each GPU in GB, for every policy (default 80, an A800-80GB; below 18.8 GILL's LLM and SD cannot share a GPU)")
	f.Float64Var(&o.stateUs, "state-us", 0, "scheduler time charged per DP state in µs (default the policy's; 1 in the scaling sweep)")
	f.IntVar(&o.parallel, "parallel", 0, "runs at once (0 = all cores)")
	f.BoolVar(&o.noScale, "no-scale", false, "skip the GPU-count sweep")
	f.BoolVar(&o.noChange, "no-change", false, "skip the MIX pattern-change runs")
}

// Run implements benchapi.Bench.
func (o *Command) Run(ctx context.Context, env benchapi.Env) error {
	start := time.Now()
	bo := Full()
	if o.quick {
		bo = Quick()
	}
	if o.seeds < 0 || o.seconds < 0 || o.gpus < 0 || o.load < 0 || o.stateUs < 0 || o.gpuGB < 0 {
		return bench.Usagef("--seeds, --seconds, --gpus, --load, --state-us and --gpu-gb must be >= 0")
	}
	if err := bench.TraceSeconds(o.seconds); err != nil {
		return err
	}
	bench.Override(&bo.Seeds, o.seeds)
	bench.Override(&bo.Seconds, o.seconds)
	bench.Override(&bo.GPUs, o.gpus)
	bench.Override(&bo.Load, o.load)
	if o.noScale {
		bo.Scale = nil
	}
	if o.noChange {
		bo.Change = false
	}
	bo.StateUs, bo.Parallel, bo.GPUMemGB = o.stateUs, o.parallel, o.gpuGB
	apps, err := bench.PickNamed(AllApps, func(s string) string { return s }, o.apps, "--apps")
	if err != nil {
		return err
	}
	pols, err := bench.PickNamed(AllPolicies, func(s string) string { return s }, o.policies, "--policies")
	if err != nil {
		return err
	}
	bo.Apps, bo.Policies = apps, pols
	bo.Progress = env.RunProgress(start)
	res, err := Run(ctx, bo)
	if err != nil {
		return err
	}
	res.Options.Progress = nil
	return bench.Finish(env, o.report, bench.Report[Result]{Kind: reportKind, Result: res}, res, func() { Print(env, res) })
}

// Print writes the bench's tables.
func Print(env benchapi.Env, res *Result) {
	o := res.Options
	mem := o.GPUMemGB
	if mem <= 0 {
		mem = DefaultGPUMemGB
	}
	env.Infof("latency on %d GPUs of %g GB, %d s Azure-like trace, load ×%g, %d seed(s); speed-up = L_base/L_dyorc − 1 (paper: 4–198 %% vs the best baseline, DyOrc §8.1)", o.GPUs, mem, o.Seconds, o.Load, o.Seeds)
	dy := map[string]Row{}
	for _, r := range res.Rows {
		if r.Policy == "dyorc" {
			dy[r.App] = r
		}
	}
	var rows [][]string
	for _, r := range res.Rows {
		su := "—"
		if d, ok := dy[r.App]; ok && r.Policy != "dyorc" && d.MeanMs > 0 {
			su = fmt.Sprintf("%+.1f%%", 100*(r.MeanMs/d.MeanMs-1))
		}
		acc := "—"
		if r.StepAcc >= 0 {
			acc = fmt.Sprintf("%.0f%% / %.0f%%", 100*r.StepAcc, 100*r.FlowAcc)
		}
		rows = append(rows, []string{r.App, r.Policy, fmt.Sprint(r.Requests), fmt.Sprintf("%.0f", r.MeanMs), fmt.Sprintf("%.0f", r.P99Ms),
			su, fmt.Sprintf("%.0f", r.Loads), fmt.Sprintf("%.0f", r.Evictions), acc, fmt.Sprintf("%.0f", r.StatesPerDP)})
	}
	env.Table([]string{"app", "policy", "requests", "mean ms", "p99 ms", "dyorc speed-up", "loads", "evictions", "accuracy step/flow", "states/DP"}, rows)
	if len(res.Change) > 0 {
		env.Infof("MIX pattern change at minute %d (GILL ×2, KC and Debate ×0.5; paper Fig.10: TIS degrades, DyOrc and Ray stay about flat): requests arriving before / after", o.Seconds/120)
		var cr [][]string
		for _, c := range res.Change {
			ch := "—"
			if c.BeforeMs > 0 {
				ch = fmt.Sprintf("%+.0f%%", 100*(c.AfterMs/c.BeforeMs-1))
			}
			cr = append(cr, []string{c.Policy, fmt.Sprintf("%.0f", c.BeforeMs), fmt.Sprintf("%.0f", c.AfterMs), ch,
				fmt.Sprintf("%.0f", c.BeforeP99Ms), fmt.Sprintf("%.0f", c.AfterP99Ms), fmt.Sprintf("%.0f", c.Loads)})
		}
		env.Table([]string{"policy", "mean ms before", "mean ms after", "change", "p99 before", "p99 after", "loads"}, cr)
	}
	if len(res.Scale) > 0 {
		su := o.StateUs
		if su == 0 {
			su = ScaleStateUs
		}
		env.Infof("scaling (GILL, rate fixed; DP charged at %g µs per state; decision = measured wall time of one DP in this Go implementation)", su)
		var sr [][]string
		for _, s := range res.Scale {
			sr = append(sr, []string{fmt.Sprint(s.GPUs), fmt.Sprintf("%.0f", s.MeanMs), fmt.Sprintf("%.0f", s.P99Ms), fmt.Sprintf("%.0f", s.StatesPerDP),
				fmt.Sprintf("%.0f", s.ChargedUs), fmt.Sprintf("%.1f", s.DecisionUs), fmt.Sprintf("%.0f", s.Loads)})
		}
		env.Table([]string{"GPUs", "mean ms", "p99 ms", "states/DP", "charged µs/req", "decision µs", "loads"}, sr)
	}
}

const reportKind = "DyOrcBench"

// ReportKind implements benchapi.ReportReader.
func (o *Command) ReportKind() string { return reportKind }

// ReadReport implements benchapi.ReportReader.
func (o *Command) ReadReport(name string, data []byte) ([]byte, error) {
	return bench.RereadResult[Result](name, data, reportKind)
}
