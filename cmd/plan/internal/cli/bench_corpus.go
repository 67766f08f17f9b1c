package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/corpus"
)

type benchCorpusOptions struct {
	cases     int
	first     int
	seed      uint64
	timeLimit time.Duration
	parallel  int
	quick     bool
	authors   bool
	report    string
	optimum   time.Duration
}

// newBenchCorpusCmd is `plan bench ppipe-corpus`: it runs plan's own commands over
// generated inputs, so it lives beside them rather than among the systems' benches.
func newBenchCorpusCmd(app *App) *cobra.Command {
	o := &benchCorpusOptions{}
	cmd := &cobra.Command{
		Use:   "ppipe-corpus",
		Short: "Solve and check generated real-shaped PPipe cases: no panic, no exit 1, every plan checks",
		Long: `ppipe-corpus generates real-shaped PPipe cases (seeded: TensorRT-like block tables of
10-60 blocks, batches 1-8 and vGPU levels 1-4 with P4 whole only, two GPU types at 25/75 or
50/50 of 100, 6-10 Gbps, SLO 3-8x the base latency, one to three weighted models, and every
strategy, rounding, replicas, batch-allowance and fill-surplus setting), solves each as plan
solve does and checks every written plan as plan check does. --authors generates the PPipe
authors' own set-up instead (PPipe §7.1 and their artifact: three-model groups on 25
high-class + 75 low-class GPUs, SLO 5x the L4 latency, --rounding stage --replicas -1
--batch-allowance --fill-surplus=false). Either way the regression cases (fixed inputs that
once made solve write a plan contradicting itself) run last. It prints how many cases wrote
a plan, were refused (exit 2, by reason), exited 1, panicked or wrote a plan check fails,
and the reproducing command of each broken case; it exits 1 when any case is broken.
--optimum D solves every case that wrote a plan again at gap 1e-6 within D: where that run
proves its optimum, the case's provenance.objective is compared with it, and every plan more
than 0.01% below it (or below a better plan the long run found) is listed as SHORT.
--report DIR keeps every case's inputs and plan, and writes report.json.`,
		Example: `  plan bench ppipe-corpus --quick
  plan bench ppipe-corpus --cases 500 --time-limit 5s --report corpus-out
  plan bench ppipe-corpus --authors --cases 50 --time-limit 3s
  plan bench ppipe-corpus --cases 40 --time-limit 10s --optimum 60s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchCorpus(cmd, app, o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.cases, "cases", 500, "how many cases to run")
	f.IntVar(&o.first, "first", 0, "index of the first case")
	f.Uint64Var(&o.seed, "seed", 1, "the corpus's seed")
	f.DurationVar(&o.timeLimit, "time-limit", 5*time.Second, "each solve's --time-limit")
	f.IntVar(&o.parallel, "parallel", 0, "cases run at once (0: one per CPU)")
	f.BoolVar(&o.quick, "quick", false, "20 cases at a 2s time limit")
	f.BoolVar(&o.authors, "authors", false, "the PPipe authors' set-up: three-model groups on 25+75 GPUs, SLO 5x the L4 latency, their planner flags")
	f.StringVar(&o.report, "report", "", "keep every case's files and plan in DIR, with report.json")
	f.DurationVar(&o.optimum, "optimum", 0, "solve every case that wrote a plan again at gap 1e-6 within this limit, and compare the plan with the optimum where that run proves it (0: off)")
	return cmd
}

func runBenchCorpus(cmd *cobra.Command, app *App, o *benchCorpusOptions) error {
	if o.quick {
		if !cmd.Flags().Changed("cases") {
			o.cases = 20
		}
		if !cmd.Flags().Changed("time-limit") {
			o.timeLimit = 2 * time.Second
		}
	}
	if o.cases < 1 {
		return run.UsageErrorf("--cases: %d: must be >= 1", o.cases)
	}
	if o.timeLimit <= 0 {
		return run.UsageErrorf("--time-limit: %s: must be > 0", o.timeLimit)
	}
	if o.optimum < 0 {
		return run.UsageErrorf("--optimum: %s: must be >= 0", o.optimum)
	}
	dir := o.report
	if dir == "" {
		tmp, err := os.MkdirTemp("", "plan-corpus-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return run.UsageErrorf("--report: %v", err)
	}
	task := progressline.NewStatus(app.Err, app.Quiet, "bench ppipe-corpus")
	start := time.Now()
	rep, err := corpus.Run(cmd.Context(), corpus.Options{Systems: app.Systems, Seed: o.seed, First: o.first, Cases: o.cases,
		Authors: o.authors, TimeLimit: o.timeLimit, Optimum: o.optimum, Dir: dir, Parallel: o.parallel,
		Progress: func(done, total int, _ *corpus.Outcome) { task.Note(fmt.Sprintf("%d/%d cases", done, total)) }})
	task.Clear()
	if err != nil {
		return err
	}
	if o.report != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := formats.WriteAtomic(filepath.Join(dir, "report.json"), append(b, '\n')); err != nil {
			return err
		}
	}
	if app.JSONOutput() {
		if err := app.WriteJSON(rep); err != nil {
			return err
		}
	} else {
		rows := [][]string{
			{"cases", fmt.Sprint(rep.Cases), ""},
			{"written (exit 0)", fmt.Sprint(rep.Written), pct(rep.Written, rep.Cases)},
			{"refused (exit 2)", fmt.Sprint(rep.Refused), pct(rep.Refused, rep.Cases)},
			{"no plan within the time limit (exit 1)", fmt.Sprint(rep.NoPlanInTime), pct(rep.NoPlanInTime, rep.Cases)},
			{"exit 1, other", fmt.Sprint(rep.Exit1), pct(rep.Exit1, rep.Cases)},
			{"panics", fmt.Sprint(rep.Panics), pct(rep.Panics, rep.Cases)},
			{"written, check fails", fmt.Sprint(rep.CheckFail), pct(rep.CheckFail, rep.Cases)},
		}
		app.Table([]string{"OUTCOME", "CASES", "SHARE"}, rows)
		var reasons []string
		for r := range rep.Reasons {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			fmt.Fprintf(app.Out, "refused %d×: %s\n", rep.Reasons[r], r)
		}
		for _, x := range rep.Outcomes {
			if x.Broken() {
				fmt.Fprintf(app.Out, "BROKEN %s: %s\n  %s\n  solve exit %d: %s\n", x.Case, x.Describe, x.Command, x.SolveExit, corpusFirstLine(x.SolveErr))
				if x.Panic != "" {
					fmt.Fprintf(app.Out, "  panic: %s\n", corpusFirstLine(x.Panic))
				}
				for _, l := range x.Failed {
					fmt.Fprintf(app.Out, "  %s\n", l)
				}
			}
		}
		if o.optimum > 0 {
			fmt.Fprintf(app.Out, "optimum (a second solve at gap %g within %s): proven for %d of %d written plans; %d more than %g%% below it, %d more than %g%% below a better unproven plan\n",
				corpus.OptimumGap, o.optimum, rep.OptimumKnown, rep.Written, rep.ShortOfOptimum, corpus.Short*100, rep.ShortOfBetter, corpus.Short*100)
			for _, x := range rep.Outcomes {
				if op := x.Optimum; op != nil && op.Err == "" && op.Share < 1-corpus.Short {
					kind := "a better plan"
					if op.Proven {
						kind = "the optimum"
					}
					fmt.Fprintf(app.Out, "SHORT %s: objective %.6g is %.4f of %s (%.6g)\n  %s\n", x.Case, x.Objective, op.Share, kind, op.Objective, x.Command)
				}
			}
		}
		if xs := rep.SustainedShares(); len(xs) > 0 {
			// How far the planner's stated throughput is from what the simulation sustains
			// within the SLO (the rate plan check holds a plan to): the capacity model's error.
			q := func(p float64) float64 { return quantile.Percentile(xs, p) }
			fmt.Fprintf(app.Out, "sustained_rps / planned rate over %d models: min %.3f, p10 %.3f, median %.3f, p90 %.3f; %.1f%% at >= 0.95\n",
				len(xs), xs[0], q(10), q(50), q(90), 100*float64(len(xs)-sort.SearchFloat64s(xs, 0.95))/float64(len(xs)))
		}
		corpusName := "cases"
		if o.authors {
			corpusName = "the authors' set-up's cases"
		}
		fmt.Fprintf(app.Out, "seed %d, %s %d–%d and %d regression case(s), time limit %s, %.0f s\n", o.seed, corpusName, o.first, o.first+o.cases-1, rep.Regressions, o.timeLimit, time.Since(start).Seconds())
	}
	if n := rep.Broken(); n > 0 {
		return run.CheckFailed(fmt.Errorf("bench ppipe-corpus: %d of %d cases broken", n, rep.Cases))
	}
	return nil
}

func pct(n, of int) string { return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(max(of, 1))) }

func corpusFirstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
