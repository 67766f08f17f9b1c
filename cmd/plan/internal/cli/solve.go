package cli

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/demo"
	"github.com/plan-dev/plan/planner/ppipe"
	"github.com/plan-dev/plan/solver"
)

type solveOptions struct {
	profiles       []string
	cluster        string
	workload       string
	slo            time.Duration
	strategy       string
	maxPartitions  int
	alpha          float64
	timeLimit      time.Duration
	gap            float64
	out            string
	rounding       string
	batchAllowance bool
	deterministic  bool
	noWarmStart    bool
	replicas       int
	fillSurplus    bool
}

func init() { register(newSolveCmd) }

func newSolveCmd(app *App) *cobra.Command {
	o := &solveOptions{}
	cmd := &cobra.Command{
		Use:   "solve",
		Short: "Solve for a serving plan (PPipe pooled pipelines, or the NP / DART-r baselines)",
		Long: `solve picks pooled pipelines for every model of the workload: where to cut the model
(between profiled blocks), which GPU type and vGPU slice (1/1..1/4) serves each part, one
batch size per pipeline and how many slices each pool gets, maximising throughput (one model)
or the worst weight-normalised throughput (several models) under each model's SLO. It solves
the PPipe MILP with HiGHS, warm-started from the NP plan, and writes plan.json atomically.

Without --profile/--cluster it uses the embedded demo (a small CNN on 4×L4 + 12×P4). Without
--workload every profiled model is served with weight 1. The SLO of a model is --slo if given,
else its workload slo, else 5 × its batch-1 whole-model latency on L4 (or the fastest GPU).
The planner budgets T' = SLO − round(α·SLO) (--alpha).

When the time limit is reached the best plan found so far is written together with its proven
gap. An SLO no pipeline can meet exits 2 and names the smallest feasible SLO per model.`,
		Example: `  plan solve --slo 200ms
  plan solve --profile profile.json --cluster cluster.yaml --workload workload.yaml -o plan.json
  plan solve --strategy np -o np.json          # baselines: np, dart-r
  plan solve --max-partitions 2 --time-limit 30s --gap 0.01
  plan solve --output json | jq .ppipe.models[0].throughput_rps`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSolve(cmd, app, o) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.profiles, "profile", nil, "profile file (repeatable; default: the embedded demo profile)")
	f.StringVar(&o.cluster, "cluster", "", "cluster file (default: the embedded demo cluster, 4×L4 + 12×P4)")
	f.StringVar(&o.workload, "workload", "", "workload file: models, weights, per-model SLOs (default: every profiled model, weight 1)")
	f.DurationVar(&o.slo, "slo", 0, "SLO for every model, overriding the workload (default: 5 × batch-1 L4 latency)")
	f.StringVar(&o.strategy, "strategy", ppipe.StrategyPPipe, "ppipe, np (no partitioning) or dart-r (replicated DART)")
	f.IntVar(&o.maxPartitions, "max-partitions", ppipe.DefaultMaxPartitions, "maximum partitions (stages) per pipeline, P")
	f.Float64Var(&o.alpha, "alpha", ppipe.DefaultAlpha, "SLO margin α: plan with T' = SLO − round(α·SLO)")
	f.DurationVar(&o.timeLimit, "time-limit", ppipe.DefaultTimeLimit, "solver time limit; the best plan so far is written on expiry")
	f.Float64Var(&o.gap, "gap", ppipe.DefaultGap, "relative MIP gap at which to stop (0.001 = 0.1%)")
	f.StringVarP(&o.out, "out", "o", "plan.json", "where to write the plan")
	f.StringVar(&o.rounding, "rounding", ppipe.RoundingPipeline, "GPU rounding: pipeline (each pool on its own GPUs, as the runtime deploys) or stage (pools at one stage index share GPUs, as PPipe's code)")
	f.BoolVar(&o.batchAllowance, "batch-allowance", false, "budget the time to gather a batch at the head stage (β = 1.3·(b−1)/λ̂, two passes)")
	f.BoolVar(&o.deterministic, "deterministic", false, "record solve_ms as 0 so identical inputs give byte-identical plans (golden files)")
	f.BoolVar(&o.noWarmStart, "no-warm-start", false, "do not start the MILP from the NP plan")
	f.BoolVar(&o.fillSurplus, "fill-surplus", true, "hand the GPUs the plan leaves idle to the models as headroom (lowest capacity/target first); target_rps stays the solver's guaranteed rate")
	f.IntVar(&o.replicas, "replicas", 1, "pipelines per GPU-type sequence, each with its own cuts and batch (-1 = K^(P-D), as the authors' code)")
	return cmd
}

// loadSolveInputs reads the input files (or the embedded demo); every problem is a usage error.
func loadSolveInputs(o *solveOptions) (ppipe.Inputs, error) {
	var in ppipe.Inputs
	ref := func(kind, path string, doc any) error {
		d, err := formats.Digest(doc)
		if err != nil {
			return err
		}
		in.Refs = append(in.Refs, formats.InputRef{Kind: kind, Path: path, Digest: d})
		return nil
	}
	if len(o.profiles) == 0 {
		p, err := demo.Profile()
		if err != nil {
			return in, err
		}
		in.Profiles = append(in.Profiles, p)
		if err := ref(formats.KindProfile, "demo:profile", p); err != nil {
			return in, err
		}
	}
	for _, path := range o.profiles {
		p, err := formats.ReadInto[*formats.Profile](path)
		if err != nil {
			return in, usageError(err)
		}
		in.Profiles = append(in.Profiles, p)
		if err := ref(formats.KindProfile, path, p); err != nil {
			return in, err
		}
	}
	if o.cluster == "" {
		c, err := demo.Cluster()
		if err != nil {
			return in, err
		}
		in.Cluster = c
		if err := ref(formats.KindCluster, "demo:cluster", c); err != nil {
			return in, err
		}
	} else {
		c, err := formats.ReadInto[*formats.Cluster](o.cluster)
		if err != nil {
			return in, usageError(err)
		}
		in.Cluster = c
		if err := ref(formats.KindCluster, o.cluster, c); err != nil {
			return in, err
		}
	}
	if o.workload != "" {
		w, err := formats.ReadInto[*formats.Workload](o.workload)
		if err != nil {
			return in, usageError(err)
		}
		in.Workload = w
		if err := ref(formats.KindWorkload, o.workload, w); err != nil {
			return in, err
		}
	}
	return in, nil
}

func runSolve(cmd *cobra.Command, app *App, o *solveOptions) error {
	if o.out == "" {
		return usageErrorf("--out: must not be empty")
	}
	if !(o.alpha >= 0 && o.alpha < 1) {
		return usageErrorf("--alpha: %g: must be in [0, 1)", o.alpha)
	}
	if o.timeLimit <= 0 {
		return usageErrorf("--time-limit: %s: must be > 0", o.timeLimit)
	}
	// 0 means "the default" to the planner; given explicitly it is out of range, not a
	// request for the default, so it must not be silently replaced.
	fl := cmd.Flags()
	if fl.Changed("max-partitions") && o.maxPartitions == 0 {
		return usageErrorf("--max-partitions: 0: must be in 1..6")
	}
	if fl.Changed("gap") && o.gap == 0 {
		return usageErrorf("--gap: 0: must be in (0, 1)")
	}
	if fl.Changed("slo") && o.slo == 0 {
		return usageErrorf("--slo: 0s: must be > 0 (leave it out for the workload's or the default SLO)")
	}
	if err := formats.CheckWritable(o.out); err != nil {
		return usageErrorf("--out: %q: %v", o.out, err)
	}
	in, err := loadSolveInputs(o)
	if err != nil {
		return err
	}
	if in.Workload != nil && len(in.Workload.Pipelines) > 0 {
		if n := len(in.Workload.Models); n > 0 {
			// One run plans one kind: the models would be silently left out of the plan.
			return usageErrorf("%s: models: %d model(s) alongside %d pipeline(s): plan solve provisions either models (PPipe) or pipelines (PARD) in one run: split the workload into two files",
				filepath.Base(o.workload), n, len(in.Workload.Pipelines))
		}
		return solvePARD(cmd, app, o, in) // multi-module pipelines: planner/pard
	}
	alpha := o.alpha
	if alpha == 0 {
		alpha = -1 // ppipe.Options: negative = no margin (0 = default)
	}
	opts := ppipe.Options{
		Strategy: o.strategy, MaxPartitions: o.maxPartitions, Alpha: alpha, SLO: o.slo,
		TimeLimit: o.timeLimit, Gap: o.gap, BatchAllowance: o.batchAllowance, Rounding: o.rounding,
		NoWarmStart: o.noWarmStart, Deterministic: o.deterministic, Replicas: o.replicas,
		FillSurplus: o.fillSurplus,
	}
	pr := &progressPrinter{app: app}
	if !app.Quiet {
		opts.Progress = pr.report
	}
	ppipe.ToolVersion = buildVersion().Version
	plan, err := ppipe.Solve(cmd.Context(), in, opts)
	if err != nil {
		return solveError(withFileNames(err, o))
	}
	if err := formats.WriteFile(o.out, plan); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	pv := plan.Provenance
	if pv.Status != "optimal" {
		fmt.Fprintf(app.Err, "plan: %s: wrote the best plan found; objective %.4g, bound %.4g, gap %.2f%%\n", pv.Status, pv.Objective, pv.Bound, pv.Gap*100)
	}
	if app.JSONOutput() {
		return app.WriteJSON(plan)
	}
	renderPPipePlan(app, plan)
	app.Infof("wrote %s", o.out)
	return nil
}

// solveError maps planner errors onto the exit-code contract: bad input or an infeasible
// SLO exit 2, anything else (no solution in time, solver failure) exits 1.
func solveError(err error) error {
	switch {
	case errors.Is(err, ppipe.ErrInput), errors.Is(err, ppipe.ErrInfeasible):
		return usageError(err)
	case errors.Is(err, solver.ErrCanceled):
		return checkFailed(fmt.Errorf("interrupted: %w (nothing written)", err))
	default:
		return checkFailed(fmt.Errorf("%w (nothing written)", err))
	}
}

// withFileNames replaces the planner's "cluster:", "workload:" and "profile:" prefixes with
// the files the user gave, so messages read `cluster.yaml: gpus: ...: rule`.
func withFileNames(err error, o *solveOptions) error {
	var ie *ppipe.InputError
	if !errors.As(err, &ie) {
		return err
	}
	names := map[string]string{"cluster": "demo cluster", "workload": "workload", "profile": "demo profile"}
	if o.cluster != "" {
		names["cluster"] = filepath.Base(o.cluster)
	}
	if o.workload != "" {
		names["workload"] = filepath.Base(o.workload)
	}
	if len(o.profiles) == 1 {
		names["profile"] = filepath.Base(o.profiles[0])
	} else if len(o.profiles) > 1 {
		names["profile"] = "profiles"
	}
	for i, f := range o.profiles {
		names[fmt.Sprintf("profile[%d]", i)] = fmt.Sprintf("%s (--profile #%d)", filepath.Base(f), i+1)
	}
	out := &ppipe.InputError{}
	for _, p := range ie.Problems {
		for k, v := range names {
			if rest, ok := strings.CutPrefix(p, k+": "); ok {
				p = v + ": " + rest
				break
			}
		}
		out.Problems = append(out.Problems, p)
	}
	return out
}

// progressPrinter prints one progress line per new incumbent and at most one per second
// otherwise, as plain lines (fit for CI logs as well as terminals).
type progressPrinter struct {
	app     *App
	mu      sync.Mutex
	last    time.Time
	lastInc float64
	phase   string
}

func (p *progressPrinter) report(pr ppipe.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	improved := pr.HasIncumbent && pr.Incumbent != p.lastInc
	if !improved && pr.Phase == p.phase && now.Sub(p.last) < time.Second {
		return
	}
	p.last, p.phase = now, pr.Phase
	inc := "-"
	if pr.HasIncumbent {
		inc = fmt.Sprintf("%.4g", pr.Incumbent)
		p.lastInc = pr.Incumbent
	}
	gap := "-"
	if !math.IsInf(pr.Gap, 0) && !math.IsNaN(pr.Gap) {
		gap = fmt.Sprintf("%.2f%%", pr.Gap*100)
	}
	fmt.Fprintf(p.app.Err, "solve %-10s %6.1fs  incumbent %-9s bound %-9.4g gap %-8s nodes %d\n", pr.Phase, pr.Elapsed.Seconds(), inc, pr.Bound, gap, pr.Nodes)
}

// renderPPipePlan prints the pipelines, per-model throughput and GPU use.
func renderPPipePlan(app *App, plan *formats.Plan) {
	pp := plan.PPipe
	ms := func(us float64) string { return strconv.FormatFloat(us/1000, 'f', 2, 64) }
	var rows [][]string
	for _, m := range pp.Models {
		for pi, p := range m.Pipelines {
			for d, pt := range p.Partitions {
				row := []string{m.Model, strconv.Itoa(pi), strconv.Itoa(d), fmt.Sprintf("[%d,%d)", pt.FirstBlock, pt.EndBlock),
					pt.GPU, fmt.Sprintf("1/%d", pt.VGPU), strconv.Itoa(pt.Count), strconv.Itoa(p.Batch),
					ms(pt.StageLatencyUs), ms(pt.TransferUs), fmt.Sprintf("%.1f", pt.ThroughputRPS)}
				if d == 0 {
					row = append(row, fmt.Sprintf("%.1f", p.ThroughputRPS), ms(p.LatencyUs))
				} else {
					row = append(row, "", "")
				}
				rows = append(rows, row)
			}
		}
	}
	app.Table([]string{"MODEL", "PIPE", "STAGE", "BLOCKS", "GPU", "VGPU", "COUNT", "BATCH", "STAGE_MS", "XFER_MS", "STAGE_RPS", "PIPE_RPS", "PIPE_MS"}, rows)
	fmt.Fprintln(app.Out)
	rows = rows[:0]
	for _, m := range pp.Models {
		rows = append(rows, []string{m.Model, m.SLO.String(), ms(m.BudgetUs), fmt.Sprintf("%g", m.Weight), strconv.Itoa(len(m.Pipelines)), fmt.Sprintf("%.1f", m.ThroughputRPS), fmt.Sprintf("%.1f", m.TargetRPS)})
	}
	app.Table([]string{"MODEL", "SLO", "BUDGET_MS", "WEIGHT", "PIPELINES", "THROUGHPUT_RPS", "TARGET_RPS"}, rows)
	fmt.Fprintln(app.Out)
	rows = rows[:0]
	for _, g := range pp.GPUUse {
		class := g.Class
		if class == "" {
			class = "-"
		}
		rows = append(rows, []string{g.GPU, class, fmt.Sprintf("%g", g.Used), strconv.Itoa(g.Total), fmt.Sprintf("%.0f%%", 100*g.Used/math.Max(1, float64(g.Total)))})
	}
	app.Table([]string{"GPU", "CLASS", "USED", "TOTAL", "USE"}, rows)
	pv := plan.Provenance
	fmt.Fprintf(app.Out, "\nstrategy %s: %s, objective %.4g, bound %.4g, gap %.3f%%, %d nodes, %s (%s)\n",
		pp.Strategy, pv.Status, pv.Objective, pv.Bound, pv.Gap*100, pv.Nodes, fmtMs(pv.SolveMs), pv.SolverVersion)
}

func fmtMs(ms float64) string {
	if ms == 0 {
		return "solve time not recorded"
	}
	return (time.Duration(ms * float64(time.Millisecond))).Round(time.Millisecond).String()
}

// planName is the file name used in messages.
func planName(path string) string { return filepath.Base(path) }
