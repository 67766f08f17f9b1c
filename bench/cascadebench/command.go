package cascadebench

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/internal/base/tables"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	pc "github.com/plan-dev/plan/planner/cascade"
)

// Command is `plan bench cascade`.
type Command struct {
	quick   bool
	report  string
	trace   string
	setups  []string
	samples int
	window  int
	user    userInput
}

// Help implements benchapi.Bench.
func (o *Command) Help() benchapi.Help {
	return benchapi.Help{
		Name:  "cascade",
		Short: "CascadeServe vs DynBa, MS+, Cocktail+, no-switch and no-cascade on BERT and Llama stand-ins",
		Long: `Reproduces CascadeServe's evaluation (paper §6) on stand-ins: seeded latent-difficulty
validation (planning) and test (serving) sets calibrated to the paper's single-model
accuracies, stand-in V100 profiles, and per-second arrival rates scaled to the paper's peaks (BERT
7,600 QPS, Llama 60 QPS) from --trace FILE: the paper's Twitter-derived series
(twitter_qps.txt of the CascadeServe authors' artifact, code/workloads/mt_bench/; not
shipped with plan: it has no license). Without --trace the bench uses a synthetic bursty
shape of its own (seeded: 20 s blocks at 10-40 QPS and one 80 QPS burst over 1,200 s)
and says so in its output. It prints, per accuracy target at the latency SLO, the
fewest GPUs each system needs (its plan, then a replay of the trace's busiest window in
the simulator with the test set: measured accuracy and p95), CascadeServe's savings over
the best baseline, accuracy vs p95 per GPU count, the degradation runs (each system on its
GPUs for the middle target at 1.5× the load, with 1.5× slower GPUs and with one GPU lost:
per-window accuracy and p95, paper Figs. 8/9), and the planner's time and accuracy vs
exhaustive search over cascade-to-range assignments — next to the paper's numbers.
Cocktail+ appears as the paper's oracle autoscaler (cocktail+: future QPS known, no load
delay) and replayed with its runtime policy (cocktail+rt: measured QPS, model loads).
--report DIR writes bench.json and the plots (PNG and SVG).

Each cell replays at least ≈5,000 requests: a window around the trace's peak for BERT, the
whole trace for Llama. Llama's peak is 15 QPS, not the paper's 60 (see Setups: the Twitter
shape at peak 60 would be several times the paper's mean load).

--quick: one accuracy target per set-up, 3,000 samples, a 30 s BERT window (under a minute
on 2 cores).

On your own measured data: --profile F (your profiles) --records F (your per-sample
validation records: .csv, .jsonl or .json, or a Workload whose first cascade holds records
or a candidates table) --trace F (your per-second rates, replayed as recorded unless
--peak), optionally --test F (held-out records the replays serve and measure accuracy
on), --cluster F, --slo, --targets, --max-gpus: the same comparison, every system planned
and replayed on your inputs instead of the stand-ins.

DynBa and MS+ are provisioned by the paper's rule (plan solve --provision queue: the rate
below which all but the SLO's tail of requests arrive; peaks queue), Cocktail+ as the
paper's oracle (future QPS known) and as the runtime autoscaler (cocktail+rt).`,
		Example: `  plan bench cascade --quick
  plan bench cascade --setups llama --report cascade-report
  plan bench cascade --profile my-profile.json --records val.csv --test test.csv --trace qps.txt --slo 400ms`,
	}
}

// Flags implements benchapi.Bench.
func (o *Command) Flags(f *pflag.FlagSet) {
	f.BoolVar(&o.quick, "quick", false, "reduced run (one target per set-up, 3,000 samples, 30 s BERT window): under 2 minutes")
	f.StringVar(&o.report, "report", "", "directory for bench.json and the plots (accuracy vs p95, degradation time series; PNG and SVG)")
	f.StringVar(&o.trace, "trace", "", "per-second QPS trace, one rate a line, e.g. CascadeServe's twitter_qps.txt (default: a synthetic bursty shape, said in the output)")
	f.StringSliceVar(&o.setups, "setups", nil, "set-ups (default bert,llama)")
	f.IntVar(&o.samples, "samples", 0, "validation and test samples per set-up (default 10,000; quick 3,000)")
	f.IntVar(&o.window, "window", 0, "seconds of the trace replayed around its peak per cell (default 120; quick 30)")
	f.StringVar(&o.user.profile, "profile", "", "your measured profiles (a Profile file): with --records, the comparison runs on your data instead of the stand-ins")
	f.StringVar(&o.user.records, "records", "", "your per-sample validation records (.csv, .jsonl, .json; logit-gap certainties accepted as scores), or a Workload whose first cascade holds records or a candidates table")
	f.StringVar(&o.user.test, "test", "", "held-out per-sample records served in the replays (default: the workload's test records, else the validation records, said in the output)")
	f.StringVar(&o.user.cluster, "cluster", "", "cluster file: the GPU type and memory (default: the profile's first GPU type with 32 GiB)")
	f.Float64Var(&o.user.peak, "peak", 0, "with --records: rescale the trace to this peak QPS (default: the trace's rates as recorded)")
	f.DurationVar(&o.user.slo, "slo", 400*time.Millisecond, "with --records: the p95 latency SLO")
	f.Float64SliceVar(&o.user.targets, "targets", nil, "with --records: accuracy targets (default: the best single model's accuracy −0.015, −0.005 and itself)")
	f.IntVar(&o.user.maxGPUs, "max-gpus", 8, "with --records: the most GPUs any system may use")
	f.IntVar(&o.user.ranges, "ranges", 16, "with --records: QPS ranges (gears)")
}

// Report is bench.json.
type Report struct {
	// Kind is "CascadeBench", so plan validate knows the file.
	Kind    string    `json:"kind"`
	Trace   string    `json:"trace"`
	MinGPUs []MinGPUs `json:"min_gpus"`
	// Planned: the fewest GPUs each system's planner provisions (plan solve --min-gpus at
	// the latency SLO with the target as accuracy floor), by provisioning rule.
	Planned []Planned     `json:"planned"`
	Curves  []Curve       `json:"curves"`
	Cost    []PlannerCost `json:"planner_cost"`
	// Degradation: each system beyond its plan (more load, slower GPUs), per window.
	Degradation []Degradation `json:"degradation"`
	Plots       []string      `json:"plots,omitempty"`
	Elapsed     float64       `json:"elapsed_s"`
}

// Run implements benchapi.Bench.
func (o *Command) Run(ctx context.Context, env benchapi.Env) error {
	start := time.Now()
	if err := bench.PrepareReport(o.report); err != nil {
		return err
	}
	path, trace := SyntheticTrace, syntheticQPS()
	if o.trace != "" {
		var err error
		path = o.trace
		if trace, err = ReadQPS(o.trace); err != nil {
			return bench.Usagef("--trace: %v", err)
		}
	}
	samples, window := o.samples, o.window
	if samples == 0 {
		samples = map[bool]int{true: 3000, false: 10000}[o.quick]
	}
	if window == 0 {
		window = map[bool]int{true: 30, false: 120}[o.quick]
	}
	if samples < 100 || window < 1 {
		return bench.Usagef("--samples must be >= 100 and --window >= 1")
	}
	user, err := o.userData(trace, env)
	if err != nil {
		return err
	}
	want := o.setups
	setups, err := bench.PickNamed(Setups, func(s Setup) string { return s.Name }, want, "--setups")
	if err != nil {
		return err
	}
	if user != nil {
		setups = []Setup{user.s}
	}
	rep := Report{Kind: reportKind, Trace: path}
	for _, s := range setups {
		d := user
		if d == nil {
			if d, err = prepare(s, trace, samples); err != nil {
				return err
			}
		}
		// At least ≈5,000 replayed requests per cell (the whole trace for Llama's ≈3 QPS):
		// served accuracy over a few hundred requests is noise.
		var total float64
		for _, x := range d.qps {
			total += x
		}
		win := peakWindow(d.qps, max(window, int(math.Ceil(5000/(total/float64(len(d.qps)))))))
		env.Infof("cascade bench: %s (%d samples, peak %.0f QPS, %d s window)", s.Name, samples, s.Peak, len(win))
		// GPUs per accuracy target at the latency SLO, per system.
		targets := s.Targets
		if o.quick {
			targets = targets[len(targets)/2 : len(targets)/2+1]
		}
		for _, tg := range targets {
			for _, st := range []string{pc.StrategyCascadeServe, pc.StrategyNoSwitch, pc.StrategyNoCascade, pc.StrategyMSPlus, pc.StrategyDynBa} {
				if err := ctx.Err(); err != nil {
					return err
				}
				env.Progressf("cascade bench: %s: acc ≥ %.3f: %s", s.Name, tg, st)
				rep.MinGPUs = append(rep.MinGPUs, d.minGPUs(ctx, st, tg, win))
			}
			rep.MinGPUs = append(rep.MinGPUs, d.cocktail(tg, win), d.cocktailRuntime(tg, win, o.quick))
			rep.Planned = append(rep.Planned, d.planned(ctx, tg)...)
		}
		// Degradation runs (paper Figs. 8/9): every system on the GPUs it needed for the
		// middle target, beyond its plan.
		dg, err := d.degrade(rep.MinGPUs, degradeTarget(s), win)
		if err != nil {
			return err
		}
		rep.Degradation = append(rep.Degradation, dg...)
		// Accuracy vs p95 per GPU count (CascadeServe, latency SLO).
		counts := []int{1, 2, 4}
		if s.Name == "llama" {
			counts = []int{4, 6, 8}
		}
		if o.quick {
			counts = counts[:2]
		}
		for _, n := range counts {
			plan, res, err := pc.Solve(ctx, d.in, pc.Options{Latency: s.Latency, GPUs: n})
			if err != nil {
				rep.Curves = append(rep.Curves, Curve{Setup: s.Name, GPUs: n})
				continue
			}
			sv, err := d.serve(plan, "", win)
			if err != nil {
				return err
			}
			rep.Curves = append(rep.Curves, Curve{Setup: s.Name, GPUs: n, Acc: res.Acc, Served: sv})
		}
		pcost, err := d.plannerCost(ctx, counts[0])
		if err == nil {
			rep.Cost = append(rep.Cost, pcost)
		}
	}
	rep.Elapsed = time.Since(start).Seconds()
	if o.report != "" {
		plots, err := writePlots(o.report, rep, setups)
		if err != nil {
			return err
		}
		for _, p := range plots {
			rep.Plots = append(rep.Plots, filepath.Base(p))
		}
	}
	return bench.Finish(env, o.report, rep, rep, func() { o.print(env, rep) })
}

// peakWindow returns n seconds of q that contain its peak, choosing among those the window
// whose mean rate is closest to the whole trace's: the replay sees the burst and a
// representative mix of quieter seconds (accuracy over served requests depends on it).
func peakWindow(q []float64, n int) []float64 {
	if n >= len(q) {
		return q
	}
	p := 0
	var total float64
	for i, x := range q {
		total += x
		if x > q[p] {
			p = i
		}
	}
	mean := total / float64(len(q))
	best, bd := 0, math.Inf(1)
	for lo := max(0, p-n+1); lo <= min(p, len(q)-n); lo++ {
		var s float64
		for _, x := range q[lo : lo+n] {
			s += x
		}
		if d := math.Abs(s/float64(n) - mean); d < bd {
			best, bd = lo, d
		}
	}
	return q[best : best+n]
}

// paper lists the paper's headline numbers (CascadeServe §6.3, §6.5) per set-up.
var paper = map[string]string{
	"bert":  "paper (acc ≥ 0.84, peak 7.6k): CS 1 GPU p95 117 ms; DynBa-base 4 GPUs; MS+ 3 GPUs; Cocktail+ 3.2 avg GPUs → 2–3× fewer GPUs",
	"llama": "paper (acc ≥ 0.625): CS 4 GPUs p95 3.37 s vs DynBa-70B 16 GPUs (≈2.7×); planner 0.1 s (Llama) / 1 s (BERT) vs 9 / 16 min exhaustive",
}

func (o *Command) print(env benchapi.Env, rep Report) {
	var rows [][]string
	for _, r := range rep.MinGPUs {
		gpus := "-"
		if r.Feasible {
			gpus = fmt.Sprintf("%g", r.GPUs)
		}
		served := "-"
		if r.Served.Requests > 0 {
			served = fmt.Sprintf("%.4f / %.0f ms", r.Served.Accuracy, r.Served.P95Ms)
			if r.Served.Dropped > 0 {
				served += fmt.Sprintf(", %d of %d dropped (acc over all %.4f)", r.Served.Dropped, r.Served.Requests, r.Served.AccuracyAll)
			}
		}
		note := r.Note
		if len(note) > 70 {
			note = note[:70] + "…"
		}
		rows = append(rows, []string{fmt.Sprintf("%.3f", r.Target), r.System, gpus, fmt.Sprintf("%.4f", r.PlanAcc), served, fmt.Sprintf("%.0f", r.PlanMs), note})
	}
	fmt.Fprintf(env.Out, "arrival trace: %s\n", rep.Trace)
	fmt.Fprintln(env.Out, "GPUs needed per accuracy target at the latency SLO (plan; replay of the trace's peak window: accuracy and p95 over answered requests, dropped requests counted apart):")
	header := []string{"ACC_TARGET", "SYSTEM", "GPUS", "PLAN_ACC", "SERVED_ACC/P95", "PLAN_MS", "NOTE"}
	env.Table(header, rows)
	tables.DashNote(env.Out, header, rows, map[string]string{"GPUS": "no feasible plan at that target (NOTE says why)", "SERVED_ACC/P95": "nothing replayed: no plan, or no request answered"})
	o.printPlanned(env, rep)
	// savings
	fmt.Fprintln(env.Out)
	byT := map[float64][]MinGPUs{}
	var ts []float64
	for _, r := range rep.MinGPUs {
		if _, ok := byT[r.Target]; !ok {
			ts = append(ts, r.Target)
		}
		byT[r.Target] = append(byT[r.Target], r)
	}
	for _, t := range ts {
		var cs float64
		best, bestName := 0.0, ""
		for _, r := range byT[t] {
			if !r.Feasible {
				continue
			}
			if r.System == pc.StrategyCascadeServe {
				cs = r.GPUs
			} else if r.System != pc.StrategyNoSwitch && r.System != pc.StrategyNoCascade && (best == 0 || r.GPUs < best) {
				best, bestName = r.GPUs, r.System
			}
		}
		switch {
		case cs > 0 && best > 0:
			fmt.Fprintf(env.Out, "acc ≥ %.3f: CascadeServe %g GPUs, best baseline %s %g GPUs: %.2f× fewer\n", t, cs, bestName, best, best/cs)
		case cs > 0:
			fmt.Fprintf(env.Out, "acc ≥ %.3f: CascadeServe %g GPUs; no baseline meets it within the GPU limit\n", t, cs)
		default:
			fmt.Fprintf(env.Out, "acc ≥ %.3f: CascadeServe cannot meet it within the GPU limit\n", t)
		}
	}
	fmt.Fprintln(env.Out)
	rows = nil
	for _, c := range rep.Curves {
		rows = append(rows, []string{c.Setup, fmt.Sprint(c.GPUs), fmt.Sprintf("%.4f", c.Acc), fmt.Sprintf("%.4f", c.Served.Accuracy), fmt.Sprint(c.Served.Dropped), fmt.Sprintf("%.0f", c.Served.P95Ms), fmt.Sprint(c.Served.Switches)})
	}
	fmt.Fprintln(env.Out, "CascadeServe accuracy vs p95 per GPU count (latency-SLO plan, trace replay; accuracy and p95 over answered requests):")
	env.Table([]string{"SETUP", "GPUS", "PLAN_ACC", "SERVED_ACC", "DROPPED", "P95_MS", "GEAR_SWITCHES"}, rows)
	fmt.Fprintln(env.Out)
	rows = nil
	for _, c := range rep.Cost {
		rows = append(rows, []string{c.Setup, fmt.Sprint(c.GPUs), fmt.Sprint(c.Ranges), fmt.Sprint(c.Pareto), fmt.Sprintf("%.0f", c.PlannerMs), fmt.Sprintf("%.4f", c.PlannerAcc),
			fmt.Sprintf("%.0f", c.ExhaustiveMs), fmt.Sprintf("%.4f", c.ExhaustAcc), fmt.Sprintf("%.2f%%", c.GapPct)})
	}
	o.printDegradation(env, rep)
	fmt.Fprintln(env.Out, "Planner vs exhaustive search (every model on every GPU):")
	env.Table([]string{"SETUP", "GPUS", "RANGES", "PARETO", "PLANNER_MS", "PLANNER_ACC", "EXHAUSTIVE_MS", "EXHAUSTIVE_ACC", "GAP"}, rows)
	fmt.Fprintln(env.Out)
	var ks []string
	for k := range paper {
		ks = append(ks, k)
	}
	for _, s := range []string{"bert", "llama"} {
		for _, c := range rep.Curves {
			if c.Setup == s {
				fmt.Fprintln(env.Out, paper[s])
				break
			}
		}
	}
	_ = strings.Join(ks, "")
	fmt.Fprintf(env.Out, "(%.1f s)\n", rep.Elapsed)
}

// userData prepares the set-up of the user's own data (--profile, --records, ...), nil
// without those flags.
func (o *Command) userData(trace []float64, env benchapi.Env) (*data, error) {
	if !o.user.given() {
		return nil, nil
	}
	if o.user.profile == "" || o.user.records == "" {
		return nil, bench.Usagef("--profile and --records: give both to run on your own data")
	}
	if len(o.setups) > 0 {
		return nil, bench.Usagef("--setups: the stand-in set-ups do not apply with --records")
	}
	if o.user.maxGPUs < 1 || o.user.ranges < 1 || o.user.slo <= 0 || !(o.user.peak >= 0) {
		return nil, bench.Usagef("--max-gpus and --ranges must be >= 1, --slo > 0 and --peak >= 0")
	}
	if o.trace == "" && o.user.peak == 0 {
		return nil, bench.Usagef("--records: give --trace (your per-second rates) or --peak (the synthetic shape scaled to it)")
	}
	for _, t := range o.user.targets {
		if !(t > 0 && t <= 1) {
			return nil, bench.Usagef("--targets: %g: must be in (0, 1]", t)
		}
	}
	return prepareUser(&o.user, trace, env)
}

// printPlanned prints the planners' own fleets per provisioning rule.
func (o *Command) printPlanned(env benchapi.Env, rep Report) {
	if len(rep.Planned) == 0 {
		return
	}
	var rows [][]string
	for _, r := range rep.Planned {
		gpus, acc := "-", "-"
		if r.GPUs > 0 {
			gpus, acc = fmt.Sprint(r.GPUs), fmt.Sprintf("%.4f", r.PlanAcc)
		}
		rows = append(rows, []string{r.Setup, fmt.Sprintf("%.3f", r.Target), r.System, r.Provision, gpus, acc, r.Note})
	}
	fmt.Fprintln(env.Out)
	fmt.Fprintln(env.Out, "GPUs each planner provisions (plan solve --min-gpus at the latency SLO, the target as accuracy floor):")
	header := []string{"SETUP", "ACC_TARGET", "SYSTEM", "PROVISION", "GPUS", "PLAN_ACC", "NOTE"}
	env.Table(header, rows)
	tables.DashNote(env.Out, header, rows, map[string]string{"GPUS": "the planner provisioned no plan (NOTE says why)", "PLAN_ACC": "no plan to judge"})
}

const reportKind = "CascadeBench"

// ReportKind implements benchapi.ReportReader.
func (o *Command) ReportKind() string { return reportKind }

// ReadReport implements benchapi.ReportReader.
func (o *Command) ReadReport(name string, data []byte) ([]byte, error) {
	return bench.Reread(name, data, reportKind, func(r *Report) string { return r.Kind })
}
