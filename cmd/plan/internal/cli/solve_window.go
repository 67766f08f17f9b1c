package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/schedule"
)

// windowOptions are `plan solve --trace --window`'s flags.
type windowOptions struct {
	trace    string
	window   time.Duration
	quantile float64
	margin   float64
}

// windowSolveFlags join commonSolveFlags: every planner takes them.
var windowSolveFlags = []string{"trace", "window", "peak-quantile", "margin"}

func addWindowFlags(f *pflag.FlagSet, o *windowOptions) {
	f.StringVar(&o.trace, "trace", "", "with --objective cost and --window: a rate trace CSV (time_s then one column of requests/s per model, LLM class, pipeline or app); writes a schedule of one least-cost plan per window")
	f.DurationVar(&o.window, "window", 0, "with --trace: the schedule's window (e.g. 1h); each window is planned for its peak")
	f.Float64Var(&o.quantile, "peak-quantile", schedule.DefaultPeaks.Quantile, "with --trace: a window's peak is this quantile of its one-minute rates (1 = the highest)")
	f.Float64Var(&o.margin, "margin", schedule.DefaultPeaks.Margin, "with --trace: multiplies each window's peak quantile (headroom for bursts within a minute)")
}

// windowed says whether solve writes a schedule instead of a plan.
func (o *windowOptions) windowed(fl *pflag.FlagSet) bool {
	for _, n := range windowSolveFlags {
		if fl.Changed(n) {
			return true
		}
	}
	return false
}

// runSolveWindows is `plan solve --objective cost --trace day.csv --window 1h`: the least-cost
// plan of every window for its peak, and of the whole trace for the day's peak, in one
// schedule document (planner/schedule). pl is the planner with its own flags set.
func runSolveWindows(cmd *cobra.Command, app *App, o *solveOptions, sys system.System, pl planner.Planner, in planner.Inputs, settings planner.Settings) error {
	w := o.win
	switch {
	case settings.Objective != planner.ObjectiveCost:
		return run.UsageErrorf("--trace/--window: a schedule of least-cost plans needs --objective cost")
	case w.trace == "":
		return run.UsageErrorf("--window %s: needs --trace (the rate trace to cut into windows)", w.window)
	case !cmd.Flags().Changed("window"):
		return run.UsageErrorf("--trace %s: needs --window (e.g. 1h)", w.trace)
	case w.window <= 0:
		return run.UsageErrorf("--window %s: must be > 0", w.window)
	case in.Workload == nil:
		return run.UsageErrorf("--trace %s: needs --workload (the trace's columns name its models)", w.trace)
	}
	rates, err := schedule.ReadRatesFile(w.trace)
	if err != nil {
		return run.UsageError(err)
	}
	if err := schedule.CheckTargets(rates, in.Workload); err != nil {
		return run.UsageErrorf("%s", strings.ReplaceAll(err.Error(), "workload:", o.workload+":"))
	}
	// Every window's plan is deterministic (solve_ms 0) so that the schedule is byte-identical
	// for identical inputs.
	settings.Deterministic = true
	settings.Progress = nil
	solve := func(ctx context.Context, wl *formats.Workload) (*formats.Plan, error) {
		wi := in
		wi.Workload = wl
		refs, err := windowRefs(in.Refs, wl, w.trace)
		if err != nil {
			return nil, err
		}
		wi.Refs = refs
		// Each window's plan is predicted at its peak rates and sized up where it misses,
		// as plan solve's are (solvePredicted).
		plan, err := solvePredicted(ctx, app.Systems, pl, wi, settings, func(string) {})
		if err != nil {
			return nil, solveError(withFileNames(err, o, sys))
		}
		if !plan.Prediction.Meets && plan.Prediction.Basis == formats.PredictionBasisRates && !o.acceptMiss {
			return nil, run.UsageErrorf("window plan (%s) misses its target at the window's peak rates, in simulation: %s (nothing written; --accept-miss writes it with the miss recorded)",
				describeRates(wl), strings.Join(predictionMisses(plan.Prediction), "; "))
		}
		return plan, nil
	}
	p := schedule.DefaultPeaks
	p.Quantile, p.Margin = w.quantile, w.margin
	s, err := schedule.Build(cmd.Context(), rates, in.Workload, w.window.Seconds(), p, solve)
	if err != nil {
		return run.UsageError(err)
	}
	// The trace the schedule was made for: simulate refuses to replay it on another.
	if s.TraceDigest, err = schedule.TraceDigestOf(w.trace); err != nil {
		return run.UsageError(err)
	}
	data, err := s.Marshal()
	if err != nil {
		return err
	}
	if err := formats.WriteAtomic(o.out, data); err != nil {
		return fmt.Errorf("writing the schedule: %w", err)
	}
	if app.JSONOutput() {
		return app.WriteJSON(s)
	}
	rows := make([][]string, 0, len(s.Windows)+1)
	row := func(name string, e schedule.Entry) []string {
		gpus := run.FleetShort(e.GPUsUsed)
		if e.Kept {
			gpus += " (kept)"
		}
		return []string{name, run.FmtSecs(e.StartS) + "–" + run.FmtSecs(e.EndS), fmtRates(s.Targets, e.PeakRPS), gpus,
			fmt.Sprintf("%.4g", e.CostPerHour), fmt.Sprintf("%.4g", e.Cost)}
	}
	for i, e := range s.Windows {
		rows = append(rows, row(fmt.Sprint(i), e))
	}
	rows = append(rows, row("peak", s.Peak))
	app.Table([]string{"WINDOW", "SPAN", "PEAK RPS", "GPUS", s.Currency + "/H", "COST"}, rows)
	fmt.Fprintf(app.Out, "\nschedule: %d windows of %s, cost %.4g %s against %.4g for the day's peak all day (%s)\n",
		len(s.Windows), w.window, s.TotalCost, s.Currency, s.PeakCost, run.SavingPhrase(s, s.Saving))
	app.Infof("wrote %s", o.out)
	return nil
}

// windowRefs are a window plan's input references: the workload's is the window's workload
// (the file's, with the window's peak rates from the trace), named so and with that
// document's digest, as `plan solve --workload` on it would record. Listing the file's digest
// made an extracted window plan claim inputs its embedded workload does not carry.
func windowRefs(refs []formats.InputRef, wl *formats.Workload, trace string) ([]formats.InputRef, error) {
	out := slices.Clone(refs)
	for i, r := range out {
		if r.Kind != formats.KindWorkload {
			continue
		}
		d, err := formats.Digest(wl)
		if err != nil {
			return nil, err
		}
		out[i] = formats.InputRef{Kind: r.Kind, Path: windowWorkloadPath(r.Path, trace), Digest: d}
	}
	return out, nil
}

// windowWorkloadPath is how a window plan names its workload: the file, with the peak rates
// of one window of the trace.
func windowWorkloadPath(workload, trace string) string {
	return workload + " (window peak rates from " + trace + ")"
}

func fmtRates(names []string, r []float64) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%.4g", n, r[i])
	}
	return strings.Join(parts, " ")
}

// describeRates names a workload's stated rates ("m0 66 req/s, m1 132 req/s").
func describeRates(w *formats.Workload) string {
	names, rates := ratedTargets(w)
	parts := make([]string, len(names))
	for i := range names {
		parts[i] = fmt.Sprintf("%s %.4g req/s", names[i], rates[i])
	}
	return strings.Join(parts, ", ")
}
