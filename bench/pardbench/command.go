package pardbench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	plpard "github.com/plan-dev/plan/planner/pard"
	"github.com/spf13/pflag"
)

// Command is `plan bench pard`.
type Command struct {
	quick    bool
	report   string
	apps     []string
	traces   []string
	policies []string
	seeds    int
	seconds  int
	rate     float64
	cold     float64
	headroom float64
	parallel int
	trace    bool
	rpc      float64
	batchOvh float64
	stress   []string
}

// Help implements benchapi.Bench.
func (o *Command) Help() benchapi.Help {
	return benchapi.Help{
		Name:  "pard",
		Short: "PARD vs Nexus, Clipper++, naive and PARD's ablations on tm, lv, ga, da × wiki, tweet, azure",
		Long: `Reproduces PARD's evaluation (paper §5) in the simulator on stand-in profiles: each of
the four applications is provisioned by the MILP (Σ 2·d ≤ 0.8·SLO), then replayed on the
wiki-, tweet- and azure-like traces (CV 0.47 / 1.0 / 1.3) with rate-based autoscaling and
cold starts under every pipeline policy, for several seeds; a fixed-capacity stress test
follows. It prints normalized goodput (whole run, and over the seconds where the
never-dropping baseline misses the SLO), drop and invalid rates, the share of drops in the
later half of the pipeline, the minimum goodput over 1/5/10/30/60 s windows, and PARD's
gains next to the paper's headline numbers.

The baselines run in every reading PARD §5.1 allows (nexus-split, nexus-cum, clipper++-local,
...); nexus and clipper++ are the readings that reproduce the paper's baseline behaviour (see
bench/pardbench/RESULTS.md). --trace prints the per-module decision trace (drops, SLO share
consumed on arrival and at the drop, queueing, GPU time wasted on requests dropped later);
--rpc-ms and --batch-overhead-ms add the testbed's serving overheads (default none).

--quick: one seed, 300 s traces (about a minute on 2 cores).`,
		Example: `  plan bench pard --quick
  plan bench pard --apps lv --traces tweet --seeds 3 --report pard-report`,
	}
}

// Flags implements benchapi.Bench.
func (o *Command) Flags(f *pflag.FlagSet) {
	f.BoolVar(&o.quick, "quick", false, "reduced run (1 seed, 300 s traces): under 2 minutes")
	f.StringVar(&o.report, "report", "", "directory for bench.json")
	f.StringSliceVar(&o.apps, "apps", nil, "applications (default tm,lv,ga,da)")
	f.StringSliceVar(&o.traces, "traces", nil, "traces (default wiki,tweet,azure)")
	f.StringSliceVar(&o.policies, "policies", nil, "policies (default all pipeline policies)")
	f.IntVar(&o.seeds, "seeds", 0, "seeds per workload (default 5, quick 1)")
	f.IntVar(&o.seconds, "seconds", 0, "trace length in seconds (default 1200, quick 300)")
	f.Float64Var(&o.rate, "rate", 0, "mean request rate (default 150 req/s)")
	f.Float64Var(&o.cold, "cold-start", 0, "autoscaler cold start in seconds (default 15)")
	f.Float64Var(&o.headroom, "headroom", 0, "autoscaler provisions rate × headroom (default 1)")
	f.IntVar(&o.parallel, "parallel", 0, "runs at once (0 = all cores)")
	f.Float64Var(&o.rpc, "rpc-ms", 0, "serving overhead per request on every edge between modules, ms (default 0: none)")
	f.Float64Var(&o.batchOvh, "batch-overhead-ms", 0, "overhead added to every batch's execution (formation, launch), ms (default 0)")
	f.StringSliceVar(&o.stress, "stress-policies", nil, "stress-test policies (default none,nexus,clipper++,pard,nexus-split,clipper++-local)")
	f.BoolVar(&o.trace, "trace", false, "print the per-module decision trace (drops, budget consumed, queueing, wasted GPU time)")
}

func (o *Command) Run(ctx context.Context, env benchapi.Env) error {
	if err := bench.PrepareReport(o.report); err != nil {
		return err
	}
	start := time.Now()
	bo := BenchOptions{}
	if o.quick {
		bo = QuickBench()
	}
	bo.Apps, bo.Traces, bo.Policies, bo.Parallel = o.apps, o.traces, o.policies, o.parallel
	if o.seeds < 0 || o.seconds < 0 || o.rate < 0 || o.cold < 0 || o.headroom < 0 || o.rpc < 0 || o.batchOvh < 0 {
		return bench.Usagef("--seeds, --seconds, --rate, --cold-start, --headroom, --rpc-ms and --batch-overhead-ms must be >= 0")
	}
	bo.RPCMs, bo.BatchOverheadMs = o.rpc, o.batchOvh
	if o.stress != nil {
		bo.StressPolicies = o.stress
	}
	bench.Override(&bo.Headroom, o.headroom)
	if err := bench.TraceSeconds(o.seconds); err != nil {
		return err
	}
	bench.Override(&bo.Seeds, o.seeds)
	bench.Override(&bo.Seconds, o.seconds)
	bench.Override(&bo.RateRPS, o.rate)
	bench.Override(&bo.ColdStart, o.cold)
	bo.Progress = env.RunProgress(start)
	res, err := RunBench(ctx, bo)
	if err != nil {
		if errors.Is(err, plpard.ErrBadInput) {
			return bench.Usage(err)
		}
		return err
	}
	res.Options.Progress = nil
	return bench.Finish(env, o.report, bench.Report[BenchResult]{Kind: reportKind, Result: res}, res, func() {
		printBenchPARD(env, res)
		if o.trace {
			printTrace(env, res)
		}
	})
}

func pardPct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func pardTimes(x float64) string {
	if x >= Infinite {
		return "∞"
	}
	return fmt.Sprintf("%.2f×", x)
}

func printBenchPARD(env benchapi.Env, res *BenchResult) {
	fmt.Fprintln(env.Out, "Provisioning (MILP, Σ2·d ≤ 0.8·SLO, fewest GPUs at the mean rate):")
	var rows [][]string
	for _, m := range res.Modules {
		rows = append(rows, []string{m.App, m.Name, fmt.Sprint(m.Batch), fmt.Sprint(m.Workers), fmt.Sprintf("%.1f", m.LatencyMs), fmt.Sprintf("%.0f ms = %.0f%% SLO", m.SumTwoD, 100*m.SLOFrac)})
	}
	env.Table([]string{"app", "module", "batch", "workers", "d(b) ms", "Σ2·d"}, rows)
	fmt.Fprintln(env.Out)
	var cvs []string
	for _, c := range res.TraceCV {
		cvs = append(cvs, fmt.Sprintf("%s#%d %.3f", c.Trace, c.Seed, c.CV))
	}
	fmt.Fprintf(env.Out, "Trace CVs (targets wiki 0.47, tweet 1.0, azure 1.3): %s\n\n", strings.Join(cvs, ", "))
	var wh []string
	for _, w := range WindowSizes {
		wh = append(wh, fmt.Sprintf("min%ds", w))
	}
	for _, a := range res.Options.Apps {
		for _, tr := range res.Options.Traces {
			fmt.Fprintf(env.Out, "%s-%s (%d seed(s); goodput normalized by input; burst = seconds where naive misses the SLO):\n", a, tr, res.Options.Seeds)
			rows = rows[:0]
			for _, p := range res.Options.Policies {
				r := res.Row(a, tr, p)
				if r == nil {
					continue
				}
				row := []string{p, pardPct(r.Goodput), pardPct(r.BurstGoodput), pardPct(r.DropRate), pardPct(r.InvalidRate), pardPct(r.LaterShare)}
				var sh []string
				for _, s := range r.Shares {
					sh = append(sh, fmt.Sprintf("%.0f", 100*s))
				}
				row = append(row, strings.Join(sh, "/"))
				for _, g := range r.MinGoodput {
					row = append(row, fmt.Sprintf("%.2f", g))
				}
				row = append(row, fmt.Sprintf("%.1f", r.MeanWaitMs))
				rows = append(rows, row)
			}
			env.Table(append(append([]string{"policy", "goodput", "burst", "drop", "invalid", "later½", "drops/module %"}, wh...), "wait ms"), rows)
			fmt.Fprintln(env.Out)
		}
	}
	if len(res.Comparisons) > 0 {
		fmt.Fprintln(env.Out, "PARD vs the reactive baselines (ours; the ranges below: nexus and clipper++, the readings the paper ran) next to the paper's headline numbers:")
		rows = rows[:0]
		minG, maxG, minD, maxD, minI, maxI := 1e18, -1e18, 1e18, -1e18, 1e18, -1e18
		for _, c := range res.Comparisons {
			rows = append(rows, []string{c.App + "-" + c.Trace, c.Baseline, fmt.Sprintf("%+.1f%%", 100*c.GoodputGain), fmt.Sprintf("%+.1f%%", 100*c.BurstGain), pardTimes(c.DropRatio), pardTimes(c.InvalidRatio)})
			if c.Baseline != "nexus" && c.Baseline != "clipper++" {
				continue // the headline ranges compare with the readings the paper ran
			}
			minG, maxG = min(minG, c.GoodputGain), max(maxG, c.GoodputGain)
			minD, maxD = min(minD, c.DropRatio), max(maxD, c.DropRatio)
			minI, maxI = min(minI, c.InvalidRatio), max(maxI, c.InvalidRatio)
		}
		env.Table([]string{"workload", "vs", "goodput", "burst goodput", "fewer drops", "less waste"}, rows)
		fmt.Fprintln(env.Out)
		env.Table([]string{"result", "paper", "ours (range over workloads)"}, [][]string{
			{"goodput vs Nexus/Clipper++", "+16% to +176%", fmt.Sprintf("%+.1f%% to %+.1f%%", 100*minG, 100*maxG)},
			{"drop-rate reduction", "1.6× to 16.7×", pardTimes(minD) + " to " + pardTimes(maxD)},
			{"invalid-rate reduction", "1.5× to 61.9×", pardTimes(minI) + " to " + pardTimes(maxI)},
			{"later-half drops, reactive", "51–97% (Nexus), 31–89% (Clipper++)", laterRange(res, "nexus") + " (Nexus), " + laterRange(res, "clipper++") + " (Clipper++)"},
			{"later-half drops, PARD", "13% (87% in the first two modules)", laterRange(res, "pard")},
		})
		fmt.Fprintln(env.Out)
		fmt.Fprintln(env.Out, "Targets on the bursty traces (tweet, azure): PARD goodput above nexus and clipper++, ≥ 1.5× fewer drops:")
		rows = rows[:0]
		for _, c := range res.Comparisons {
			if c.Trace == "wiki" || c.Baseline != "nexus" && c.Baseline != "clipper++" {
				continue
			}
			ok := "ok"
			var miss []string
			if c.GoodputGain <= 0 {
				miss = append(miss, "goodput")
			}
			if c.DropRatio < 1.5 {
				miss = append(miss, "drops")
			}
			if len(miss) > 0 {
				ok = "MISS: " + strings.Join(miss, ", ")
			}
			rows = append(rows, []string{c.App + "-" + c.Trace, c.Baseline, ok})
		}
		env.Table([]string{"workload", "vs", "target"}, rows)
		fmt.Fprintln(env.Out)
	}
	if len(res.Stress) > 0 {
		fmt.Fprintln(env.Out, "Stress test (fixed workers, constant rate = factor × capacity; goodput / min(rate, capacity)):")
		rows = rows[:0]
		for _, s := range res.Stress {
			rows = append(rows, []string{s.App, fmt.Sprintf("%.1f×", s.Factor), s.Policy, pardPct(s.OfIdeal), pardPct(s.DropRate)})
		}
		env.Table([]string{"app", "load", "policy", "of ideal", "drop"}, rows)
	}
}

func laterRange(res *BenchResult, policy string) string {
	lo, hi, n := 2.0, -1.0, 0
	for _, r := range res.Rows {
		if r.Policy == policy && r.DropRate > 0 {
			lo, hi, n = min(lo, r.LaterShare), max(hi, r.LaterShare), n+1
		}
	}
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f–%.0f%%", 100*lo, 100*hi)
}

const reportKind = "PARDBench"

// ReportKind implements benchapi.ReportReader.
func (o *Command) ReportKind() string { return reportKind }

// ReadReport implements benchapi.ReportReader.
func (o *Command) ReadReport(name string, data []byte) ([]byte, error) {
	return bench.RereadResult[BenchResult](name, data, reportKind)
}
