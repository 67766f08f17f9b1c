package ppipebench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/spf13/pflag"
)

// Command is `plan bench ppipe`.
type Command struct {
	quick     bool
	report    string
	hcs       []string
	groups    []string
	traces    []string
	duration  time.Duration
	timeLimit time.Duration
	seed      uint64
	small     bool
	parallel  int
	noAbl     bool
	cv        float64
}

// Help implements benchapi.Bench.
func (o *Command) Help() benchapi.Help {
	return benchapi.Help{
		Name:  "ppipe",
		Short: "PPipe vs NP vs DART-r on HC1–HC4 (max load factor at 99% attainment)",
		Long: `Reproduces PPipe's main comparison (paper §7.2) on roofline stand-in profiles of the
zoo's architectures: for each heterogeneous cluster HC1–HC4 (25 high + 75 low GPUs) and each
three-model group, solve PPipe, NP and DART-r plans, sweep the load factor (relative to the
PPipe plan's per-model guaranteed rate, target_rps) under Poisson and bursty arrivals, and
report the highest load factor with 99% SLO attainment, the gains, the low-class GPU
utilization, and the reservation-vs-reactive ablation. Paper models the zoo lacks run on a
stand-in of the same backbone (listed in the output).

The ablation's plan is solved to a 1% gap, which takes the same work on any machine: its
P ≤ 3 MILP does not close the default gap within a minute, and a plan cut off by the clock
would differ with the machine's speed.

--quick runs HC1 and HC2 with one group, Poisson only, 5 s per load point; the full run
prints an estimate first.`,
		Example: `  plan bench ppipe --quick
  plan bench ppipe --hc HC1,HC3 --groups G2,G4 --trace poisson --report out/`,
	}
}

// Flags implements benchapi.Bench.
func (o *Command) Flags(f *pflag.FlagSet) {
	f.BoolVar(&o.quick, "quick", false, "reduced run (HC1, HC2; one group; Poisson; 5 s points): under 2 minutes")
	f.StringVar(&o.report, "report", "", "directory for bench.json and the solved plans (plans/)")
	f.StringSliceVar(&o.hcs, "hc", nil, "clusters to run (default all: HC1,HC2,HC3,HC4)")
	f.StringSliceVar(&o.groups, "groups", nil, "model groups to run (default all: G1..G6)")
	f.StringSliceVar(&o.traces, "trace", nil, "arrival processes (default poisson,bursty)")
	f.DurationVar(&o.duration, "duration", 0, "virtual time per load point (default 30s, quick 5s)")
	f.DurationVar(&o.timeLimit, "time-limit", 0, "MILP time limit per solve (default 60s, quick 20s)")
	f.Uint64Var(&o.seed, "seed", 1, "random seed")
	f.BoolVar(&o.small, "small", false, "use the 4 + 12 GPU testbed clusters instead of 25 + 75")
	f.IntVar(&o.parallel, "parallel", 0, "load points simulated at once (0 = all cores)")
	f.BoolVar(&o.noAbl, "no-ablation", false, "skip the reservation-vs-reactive ablation")
	f.Float64Var(&o.cv, "cv", DefaultBurstyCV, "coefficient of variation of the bursty (Gamma renewal) trace, calibrated so PPipe loses ≈6% from Poisson to bursty as in the paper")
}

func (o *Command) Run(ctx context.Context, env benchapi.Env) error {
	if err := bench.PrepareReport(o.report); err != nil {
		return err
	}
	cfg := Config{
		Large: !o.small, Seed: o.seed, MaxPartitions: 2, Ablation: !o.noAbl, Parallel: o.parallel,
		Duration: 30 * dataplane.Second, TimeLimit: 60 * time.Second, AblationGap: 0.01,
		Loads: Loads(0.05, 1.0, 0.05),
		HCs:   HCs, Groups: Groups, Traces: []string{"poisson", "bursty"},
	}
	if o.quick {
		cfg.HCs = HCs[:2]
		cfg.Groups = Groups[3:4]
		cfg.Traces = []string{"poisson"}
		cfg.Duration = 5 * dataplane.Second
		cfg.TimeLimit = 20 * time.Second
		cfg.Loads = Loads(0.1, 1.0, 0.1)
	}
	var err error
	if cfg.HCs, err = bench.PickNamed(cfg.HCs, func(h HC) string { return h.Name }, o.hcs, "hc"); err != nil {
		return err
	}
	if cfg.Groups, err = bench.PickNamed(cfg.Groups, func(g Group) string { return g.Name }, o.groups, "groups"); err != nil {
		return err
	}
	if len(o.traces) > 0 {
		for _, t := range o.traces {
			if t != "poisson" && t != "bursty" {
				return bench.Usagef("--trace %q: must be poisson or bursty", t)
			}
		}
		cfg.Traces = o.traces
	}
	if why := formats.BurstyCVError(o.cv); why != "" {
		return bench.Usagef("--cv %g: %s", o.cv, why)
	}
	cfg.BurstyCV = o.cv
	if o.duration < 0 || o.timeLimit < 0 {
		return bench.Usagef("--duration and --time-limit must be > 0")
	}
	if o.duration > 0 {
		cfg.Duration = dataplane.Time(o.duration / time.Microsecond)
	}
	if o.timeLimit > 0 {
		cfg.TimeLimit = o.timeLimit
	}
	rows := len(cfg.HCs) * len(cfg.Groups) * len(cfg.Traces)
	est := estimateBench(cfg, rows)
	env.Infof("bench ppipe: %d cluster×group×trace rows, %d load points of %s each, estimated %s on this machine", rows, len(cfg.Loads), time.Duration(cfg.Duration)*time.Microsecond, est.Round(time.Second))
	start := time.Now()
	cfg.Log = func(format string, args ...any) {
		env.Progressf("[%s] "+format, append([]any{time.Since(start).Round(time.Second)}, args...)...)
	}
	if o.report != "" {
		cfg.PlanDir = filepath.Join(o.report, "plans")
		if err := os.MkdirAll(cfg.PlanDir, 0o755); err != nil {
			return bench.Usagef("--report %s: %v", o.report, err)
		}
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		return err
	}
	sums := Summarize(res, cfg.Traces)
	report := reportFile{reportKind, res, sums, map[string]interface{}{
		"large": cfg.Large, "duration_us": cfg.Duration, "seed": cfg.Seed, "loads": cfg.Loads, "max_partitions": cfg.MaxPartitions,
	}}
	out := struct {
		Result  *Result   `json:"result"`
		Summary []Summary `json:"summary"`
	}{res, sums}
	return bench.Finish(env, o.report, report, out, func() { printBenchPPipe(env, res, sums) })
}

// estimateBench predicts the run time from constants measured on a 2-core CI machine:
// the three MILPs of a 3-model group take ~15 s together on 100 GPUs, and one simulated
// second of a 100-GPU cluster at load 1 costs ~15 ms of CPU per core.
func estimateBench(cfg Config, rows int) time.Duration {
	solve := 15 * time.Second
	costPerSimulatedSecond := 15 * time.Millisecond
	if !cfg.Large {
		costPerSimulatedSecond = 2 * time.Millisecond
	}
	var lf float64
	for _, l := range cfg.Loads {
		lf += l
	}
	cores := 2.0
	sims := time.Duration(float64(costPerSimulatedSecond) * lf * float64(cfg.Duration) / 1e6 * 3 / cores)
	total := time.Duration(rows) * (solve + sims)
	if cfg.Ablation {
		total += solve + 2*sims/3
	}
	return total
}

func printBenchPPipe(env benchapi.Env, res *Result, sums []Summary) {
	var rows [][]string
	for _, r := range res.Rows {
		rows = append(rows, []string{r.HC, r.Group, r.Trace,
			fmt.Sprintf("%.2f", r.MaxLF[0]), fmt.Sprintf("%.2f", r.MaxLF[1]), fmt.Sprintf("%.2f", r.MaxLF[2]),
			bench.Pct(r.LowUtil[0]), bench.Pct(r.LowUtil[1]), bench.Pct(r.LowUtil[2]), r.Limit[2], strings.Join(r.Models, ",")})
	}
	fmt.Fprintln(env.Out, "Max load factor at 99% attainment (mean over the group's models, as the paper scores a group) per cluster, group and trace, and low-class utilization at that load:")
	env.Table([]string{"HC", "group", "trace", "NP", "DART-r", "PPipe", "low NP", "low DART-r", "low PPipe", "PPipe limited by", "models (zoo)"}, rows)
	for _, s := range sums {
		fmt.Fprintf(env.Out, "\nGains of PPipe in max load factor, %s (ours vs paper):\n", s.Trace)
		var t [][]string
		var mNP, mDR, pNP, pDR float64
		paperNP, paperDR := Paper.VsNP[s.Trace], Paper.VsDARTR[s.Trace]
		for i, hc := range s.HC {
			idx := hcIndex(hc)
			t = append(t, []string{hc,
				fmt.Sprintf("%.2f / %.2f / %.2f", s.MeanLF[i][0], s.MeanLF[i][1], s.MeanLF[i][2]),
				fmt.Sprintf("%+.1f%%", s.VsNP[i]), fmt.Sprintf("%+.1f%%", paperNP[idx]),
				fmt.Sprintf("%+.1f%%", s.VsDARTR[i]), fmt.Sprintf("%+.1f%%", paperDR[idx]),
				bench.Pct(s.LowUtil[i][2])})
			mNP += s.VsNP[i] / float64(len(s.HC))
			mDR += s.VsDARTR[i] / float64(len(s.HC))
			pNP += paperNP[idx] / float64(len(s.HC))
			pDR += paperDR[idx] / float64(len(s.HC))
		}
		t = append(t, []string{"mean", "", fmt.Sprintf("%+.1f%%", mNP), fmt.Sprintf("%+.1f%%", pNP), fmt.Sprintf("%+.1f%%", mDR), fmt.Sprintf("%+.1f%%", pDR), ""})
		env.Table([]string{"HC", "max lf NP / DART-r / PPipe", "vs NP", "paper", "vs DART-r", "paper", "low util PPipe"}, t)
		p := Paper.MeanLF[s.Trace]
		fmt.Fprintf(env.Out, "paper mean max lf: NP %.3f, DART-r %.3f, PPipe %.3f; low-class utilization (Poisson) NP %.1f%%, DART-r %.1f%%, PPipe %.1f%%\n",
			p[0], p[1], p[2], Paper.LowUtil[0], Paper.LowUtil[1], Paper.LowUtil[2])
	}
	if res.Ablation != nil {
		fmt.Fprintf(env.Out, "\nAblation (%s, Poisson, same PPipe plan, α = 0.1, P ≤ 3, gap %g%%): mean per-model max lf, reservation %.2f vs reactive %.2f (paper: %.2f vs %.2f)\n",
			res.AblationGroup, res.AblationGap*100, res.Ablation[0], res.Ablation[1], Paper.Ablation[0], Paper.Ablation[1])
		var t [][]string
		for _, m := range res.AblationModels {
			var pl []string
			for _, p := range m.Pipelines {
				pl = append(pl, strings.Join(p, "→"))
			}
			t = append(t, []string{m.Model, fmt.Sprintf("%.2f", m.Reservation), fmt.Sprintf("%.2f", m.Reactive), strings.Join(pl, " + ")})
		}
		env.Table([]string{"model", "reservation", "reactive", "pipelines"}, t)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(env.Out, "note: %s\n", n)
	}
}

func hcIndex(name string) int {
	for i, h := range HCs {
		if h.Name == name {
			return i
		}
	}
	return 0
}

const reportKind = "PPipeBench"

// reportFile is bench.json.
type reportFile struct {
	Kind    string                 `json:"kind"`
	Result  *Result                `json:"result"`
	Summary []Summary              `json:"summary"`
	Config  map[string]interface{} `json:"config"`
}

// ReportKind implements benchapi.ReportReader.
func (o *Command) ReportKind() string { return reportKind }

// ReadReport implements benchapi.ReportReader.
func (o *Command) ReadReport(name string, data []byte) ([]byte, error) {
	return bench.Reread(name, data, reportKind, func(r *reportFile) string { return r.Kind })
}
