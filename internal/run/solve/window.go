package solve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/predict"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/schedule"
)

// Window are `plan solve --trace --window`'s flags.
type Window struct {
	// Given says any of --trace, --window, --peak-quantile and --margin was given: solve
	// writes a schedule of plans, one per window, instead of a plan.
	Given bool
	// Trace is --trace, the rate trace CSV ("" = none).
	Trace string
	// Window is --window, the schedule's window.
	Window time.Duration
	// WindowSet says --window was given.
	WindowSet bool
	// PeakQuantile is --peak-quantile (default schedule.DefaultPeaks.Quantile).
	PeakQuantile float64
	// Margin is --margin (default schedule.DefaultPeaks.Margin).
	Margin float64
}

// runWindows is `plan solve --objective cost --trace day.csv --window 1h`: the least-cost
// plan of every window for its peak, and of the whole trace for the day's peak, in one
// schedule document (planner/schedule). pl is the planner with its own flags set.
func runWindows(ctx context.Context, a Args, io *run.IO, sys system.Planning, pl planner.Planner, in planner.Inputs, settings planner.Settings) error {
	w := a.Window
	switch {
	case settings.Objective != planner.ObjectiveCost:
		return run.UsageErrorf("--trace/--window: a schedule of least-cost plans needs --objective cost")
	case w.Trace == "":
		return run.UsageErrorf("--window %s: needs --trace (the rate trace to cut into windows)", w.Window)
	case !w.WindowSet:
		return run.UsageErrorf("--trace %s: needs --window (e.g. 1h)", w.Trace)
	case w.Window <= 0:
		return run.UsageErrorf("--window %s: must be > 0", w.Window)
	case in.Workload == nil:
		return run.UsageErrorf("--trace %s: needs --workload (the trace's columns name its models)", w.Trace)
	}
	rates, err := schedule.ReadRatesFile(w.Trace)
	if err != nil {
		return run.UsageError(err)
	}
	if err := schedule.CheckTargets(rates, in.Workload); err != nil {
		return run.UsageErrorf("%s", strings.ReplaceAll(err.Error(), "workload:", a.Workload+":"))
	}
	// Every window's plan is deterministic (solve_ms 0) so that the schedule is byte-identical
	// for identical inputs.
	settings.Deterministic = true
	settings.Progress = nil
	// Each window's plan is a solve of its own under --time-limit, not a share of one
	// command's deadline.
	settings.Deadline = time.Time{}
	// The status line: one step per window and the day's peak, naming the rates being
	// solved and the phase the window is in (the rate lever's re-checks say theirs).
	total := int(math.Ceil(rates.Span()/w.Window.Seconds()-1e-9)) + 1
	task := progressline.NewTask(io.Err, io.Quiet, "solve --window", "plans (windows and the day's peak)", total)
	done := 0
	solve := func(ctx context.Context, wl *formats.Workload) (*formats.Plan, error) {
		defer func() { done++; task.Step(done, max(total, done), "") }()
		at := describeRates(wl)
		task.Note(fmt.Sprintf("plan %d/%d at %s", done+1, max(total, done+1), at))
		wi := in
		wi.Workload = wl
		refs, err := windowRefs(in.Refs, wl, w.Trace)
		if err != nil {
			return nil, err
		}
		wi.Refs = refs
		// Each window's plan is predicted at its peak rates and sized up where it misses,
		// as plan solve's are (predict.Solve).
		phase := func(s string) {
			// The lever's note ends with its phase ("...; solving for 1.25× the rates").
			if i := strings.LastIndex(s, "; "); i >= 0 {
				s = s[i+2:]
			}
			task.Note(fmt.Sprintf("plan %d/%d at %s: %s", done+1, max(total, done+1), at, s))
		}
		settings := settings
		settings.Status = phase
		plan, err := predict.Solve(ctx, a.Systems, pl, wi, settings, a.Arrivals, phase)
		if err != nil {
			err = withFileNames(err, a.Inputs, sys)
			if refusedTarget(ctx, err) { // what would make this window's plan feasible
				return nil, explainFailure(ctx, a, io, sys, wi, settings, fmt.Errorf("window plan (%s): %w", describeRates(wl), err), nil)
			}
			return nil, solveError(err)
		}
		if ps, ok := pl.(predictionStater); ok { // each window's plan states what it serves, as plan solve's
			if _, err := ps.StatePrediction(plan, a.AcceptMiss); err != nil {
				return nil, solveError(withFileNames(err, a.Inputs, sys))
			}
		}
		if !plan.Prediction.Meets && plan.Prediction.Basis == formats.PredictionBasisRates && !a.AcceptMiss {
			return nil, explainFailure(ctx, a, io, sys, wi, settings, fmt.Errorf("window plan (%s) misses its target at the window's peak rates, in simulation: %s (nothing written; --accept-miss writes it with the miss recorded)",
				describeRates(wl), strings.Join(predict.Misses(plan.Prediction), "; ")), plan)
		}
		return plan, nil
	}
	p := schedule.DefaultPeaks
	p.Quantile, p.Margin = w.PeakQuantile, w.Margin
	s, err := schedule.Build(ctx, rates, in.Workload, w.Window.Seconds(), p, solve)
	task.Finish("")
	if err != nil {
		return run.UsageError(err)
	}
	// The trace the schedule was made for: simulate refuses to replay it on another.
	if s.TraceDigest, err = schedule.TraceDigestOf(w.Trace); err != nil {
		return run.UsageError(err)
	}
	data, err := s.Marshal()
	if err != nil {
		return err
	}
	if err := formats.WriteAtomic(a.Out, data); err != nil {
		return fmt.Errorf("writing the schedule: %w", err)
	}
	if io.JSONOutput() {
		return io.WriteJSON(s)
	}
	rows := make([][]string, 0, len(s.Windows)+1)
	margins := false
	row := func(name string, e schedule.Entry) []string {
		gpus := run.FleetShort(e.GPUsUsed)
		if e.Kept {
			gpus += " (kept)"
		}
		// The rate lever's margin (provenance.rate_margin): a window whose plan missed its
		// target at its own peak was solved for a multiple of it, and can cost more than a
		// busier window's.
		margin := "-"
		if k := rateMargin(e.Plan); k > 1 {
			margin, margins = fmt.Sprintf("×%.3g", k), true
		}
		return []string{name, run.FmtSecs(e.StartS) + "–" + run.FmtSecs(e.EndS), fmtRates(s.Targets, e.PeakRPS), margin, gpus,
			fmt.Sprintf("%.4g", e.CostPerHour), fmt.Sprintf("%.4g", e.Cost)}
	}
	for i, e := range s.Windows {
		rows = append(rows, row(fmt.Sprint(i), e))
	}
	rows = append(rows, row("peak", s.Peak))
	io.Table([]string{"WINDOW", "SPAN", "PEAK RPS", "SOLVED AT", "GPUS", s.Currency + "/H", "COST"}, rows)
	if margins {
		fmt.Fprintln(io.Out, "SOLVED AT ×k: the window's plan missed its target at its peak in simulation, so it was solved for k × the peak (provenance.rate_margin); such a window can cost more than a busier one")
	}
	fmt.Fprintf(io.Out, "\nschedule: %d windows of %s, cost %.4g %s against %.4g for the day's peak all day (%s)\n",
		len(s.Windows), w.Window, s.TotalCost, s.Currency, s.PeakCost, run.SavingPhrase(s, s.Saving))
	io.Infof("wrote %s", a.Out)
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
		out[i] = formats.InputRef{Kind: r.Kind, Path: WindowWorkloadPath(r.Path, trace), Digest: d}
	}
	return out, nil
}

// WindowWorkloadPath is how a window plan names its workload: the file, with the peak rates
// of one window of the trace.
func WindowWorkloadPath(workload, trace string) string {
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
	names, rates := predict.RatedTargets(w)
	parts := make([]string, len(names))
	for i := range names {
		parts[i] = fmt.Sprintf("%s %.4g req/s", names[i], rates[i])
	}
	return strings.Join(parts, ", ")
}

// rateMargin is a window plan's provenance.rate_margin (0 when absent or unreadable).
func rateMargin(plan json.RawMessage) float64 {
	var p struct {
		Provenance struct {
			RateMargin float64 `json:"rate_margin"`
		} `json:"provenance"`
	}
	if json.Unmarshal(plan, &p) != nil {
		return 0
	}
	return p.Provenance.RateMargin
}
