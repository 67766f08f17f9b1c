// Package frontier is `plan frontier`: the workload solved with the cost objective at each
// point of a sweep of its rates, SLO or accuracy target, on the whole cluster and on each GPU
// type alone (and with a baseline strategy), reported as the least cost per hour with its
// fleet mix, the cheapest single type and the saving of the mix: a capacity review's
// picture, as a table, JSON, CSV or a plot.
package frontier

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/base/tables"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/solve"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/sim"
)

// Args are `plan frontier`'s inputs.
type Args struct {
	// Systems is the system registry: the workload's sections pick its planner.
	Systems *systems.Registry
	// Inputs are --profile, --cluster (with prices and availability) and --workload;
	// ProfileFit is "" (outliers fitted).
	solve.Inputs
	// Strategy is --strategy ("" = the system's own).
	Strategy string
	// TimeLimit is --time-limit per solve (default 30s).
	TimeLimit time.Duration
	// Gap is --gap per solve (default 0.01).
	Gap float64
	// Rate is --rate: rate multipliers LO:HI:STEP, a value or a comma list ("" = not swept).
	Rate string
	// SLO is --slo: a comma list of durations ("" = not swept).
	SLO string
	// Accuracy is --accuracy: a comma list of accuracy targets ("" = not swept). Exactly one
	// of Rate, SLO and Accuracy is given.
	Accuracy string
	// Baseline is --baseline, a strategy also costed at each point ("" = none).
	Baseline string
	// CSV is --csv, a file the points are written to as CSV ("" = none).
	CSV string
	// Plot is --plot: the points plotted to Plot.png and Plot.svg ("" = none).
	Plot string
	// Spot is --spot SHARE (nil = not given).
	Spot *float64
	// ToolVersion is the plan binary's version, recorded in each plan's provenance.
	ToolVersion string
}

// Run sweeps the points, solving each on the whole cluster, on each GPU type alone and with
// the baseline strategy, and writes the report (table or JSON, CSV, plot).
func Run(ctx context.Context, a Args, io *run.IO) error {
	what, pts, err := parseSweep(a)
	if err != nil {
		return err
	}
	if a.TimeLimit <= 0 {
		return run.UsageErrorf("--time-limit: %s: must be > 0", a.TimeLimit)
	}
	if !(a.Gap > 0 && a.Gap < 1) {
		return run.UsageErrorf("--gap: %g: must be in (0, 1)", a.Gap)
	}
	outs := [][2]string{{"--csv", a.CSV}, {"--plot", a.Plot}}
	if a.Plot != "" { // --plot P writes P.png and P.svg
		outs = append(outs, [2]string{"--plot", a.Plot + ".png"}, [2]string{"--plot", a.Plot + ".svg"})
	}
	for _, f := range outs {
		if f[1] != "" {
			if err := formats.CheckWritable(f[1]); err != nil {
				return run.UsageErrorf("%s: %q: %v", f[0], f[1], err)
			}
		}
	}
	in, err := solve.LoadInputs(a.Inputs, a.Systems.Sections(), func(s string) { fmt.Fprintf(io.Err, "warning: %s\n", s) })
	if err != nil {
		return err
	}
	sys, err := a.Systems.ForWorkload(in.Workload)
	if err != nil {
		return run.UsageErrorf("%s: %v", a.Workload, err)
	}
	base := planner.Settings{Strategy: a.Strategy, TimeLimit: a.TimeLimit, Gap: a.Gap, Deterministic: true,
		ToolVersion: a.ToolVersion, Objective: planner.ObjectiveCost}
	if err := solve.ApplyObjective(io, planner.ObjectiveCost, a.Spot, a.Cluster, in, &base); err != nil {
		return err
	}
	for _, f := range [][2]string{{"strategy", a.Strategy}, {"baseline", a.Baseline}} {
		if err := solve.CheckStrategy(f[0], f[1], sys); err != nil {
			return err
		}
	}
	rep := Report{System: sys.Name(), Sweep: what, Currency: in.Cluster.CurrencyOf(), Baseline: a.Baseline, SpotShare: in.Cluster.SpotShare}
	// One solve per point and GPU type: on a terminal a bar from the start, piped one
	// summary line, --quiet nothing (internal/base/progress).
	task := progressline.NewTask(io.Err, io.Quiet, "frontier", "points", len(pts))
	for i, sp := range pts {
		// The line names the point and the solve in progress (the least-cost fleet, then
		// each GPU type alone, then the baseline), with the planner's own status.
		note := func(s string) { task.Note(fmt.Sprintf("point %d/%d (%s): %s", i+1, len(pts), sp.label, s)) }
		pt, err := frontierAt(ctx, sys, in, base, sp, note)
		if err != nil {
			task.Clear()
			return err
		}
		if a.Baseline != "" {
			bs := base
			bs.Strategy = a.Baseline
			s, flags, pin := bs, map[string]string{}, in
			sp.apply(&pin, &s, flags)
			note("baseline " + a.Baseline)
			bp, err := solveWith(ctx, sys, pin, s, flags)
			switch {
			case err == nil:
				c := bp.Fleet.CostPerHour
				pt.Baseline = &c
			case !isPointError(err):
				task.Clear()
				return err
			}
		}
		rep.Points = append(rep.Points, pt)
		task.Step(i+1, len(pts), "last: "+sp.label)
	}
	task.Finish("")
	return write(io, a, rep)
}

// Point is one point of the sweep. Costs are nil where no fleet serves the point.
type Point struct {
	X     float64  `json:"x"`
	Label string   `json:"label"`
	Cost  *float64 `json:"cost_per_hour"`
	// OnDemandCost is, with --spot, what the same fleet costs all on-demand.
	OnDemandCost *float64           `json:"on_demand_cost_per_hour,omitempty"`
	Fleet        []formats.FleetGPU `json:"gpus_used,omitempty"`
	SingleCost   *float64           `json:"single_type_cost_per_hour"`
	SingleType   string             `json:"single_type,omitempty"`
	SavingPct    *float64           `json:"saving_pct,omitempty"`
	// Baseline is the least cost of the --baseline strategy on the whole cluster.
	Baseline *float64 `json:"baseline_cost_per_hour,omitempty"`
	Error    string   `json:"error,omitempty"`
}

type Report struct {
	System   string `json:"system"`
	Baseline string `json:"baseline,omitempty"`
	Sweep    string `json:"sweep"`
	Currency string `json:"currency"`
	// SpotShare is --spot: every cost is priced with that spot share (Fleet.SpotShare).
	SpotShare *float64 `json:"spot_share,omitempty"`
	Points    []Point  `json:"points"`
}

// sweepPoint is one value of the swept quantity and how it changes a solve.
type sweepPoint struct {
	x     float64
	label string
	apply func(in *planner.Inputs, s *planner.Settings, flags map[string]string)
}

func parseSweep(o Args) (string, []sweepPoint, error) {
	n := 0
	for _, s := range []string{o.Rate, o.SLO, o.Accuracy} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return "", nil, run.UsageErrorf("give exactly one of --rate, --slo and --accuracy")
	}
	var pts []sweepPoint
	switch {
	case o.Rate != "":
		xs, err := sim.ParseLoadRange(o.Rate)
		if err != nil {
			return "", nil, run.UsageErrorf("--rate %q: %v", o.Rate, err)
		}
		for _, x := range xs {
			pts = append(pts, sweepPoint{x: x, label: strconv.FormatFloat(x, 'g', 4, 64) + "×", apply: func(in *planner.Inputs, _ *planner.Settings, _ map[string]string) {
				in.Workload = scaleRates(in.Workload, x)
			}})
		}
		return "rate", pts, nil
	case o.SLO != "":
		for _, f := range strings.Split(o.SLO, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil || d <= 0 {
				return "", nil, run.UsageErrorf("--slo %q: %q: must be a duration > 0", o.SLO, f)
			}
			pts = append(pts, sweepPoint{x: float64(d) / float64(time.Millisecond), label: d.String(), apply: func(_ *planner.Inputs, s *planner.Settings, _ map[string]string) {
				s.SLO = d
			}})
		}
		return "slo_ms", pts, nil
	default:
		for _, f := range strings.Split(o.Accuracy, ",") {
			a, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(a > 0 && a <= 1) {
				return "", nil, run.UsageErrorf("--accuracy %q: %q: must be in (0, 1]", o.Accuracy, f)
			}
			v := strings.TrimSpace(f)
			pts = append(pts, sweepPoint{x: a, label: v, apply: func(_ *planner.Inputs, _ *planner.Settings, fl map[string]string) {
				fl["accuracy"] = v
			}})
		}
		return "accuracy", pts, nil
	}
}

// scaleRates is a copy of w with every rate multiplied by f, each set by its section
// (formats.RateTargeter: a cascade's qps_max too, the range its gear plan covers).
func scaleRates(w *formats.Workload, f float64) *formats.Workload {
	return w.WithRates(func(_ string, rps float64) float64 { return rps * f })
}

// frontierAt solves one point on the whole cluster and on each GPU type alone.
func frontierAt(ctx context.Context, sys system.Planning, in planner.Inputs, base planner.Settings, sp sweepPoint, note func(string)) (Point, error) {
	pt := Point{X: sp.x, Label: sp.label}
	s, flags := base, map[string]string{}
	pin := in
	sp.apply(&pin, &s, flags)
	phase := "the least-cost fleet"
	s.Status = func(st string) { note(phase + ": " + st) }
	note(phase)
	plan, err := solveWith(ctx, sys, pin, s, flags)
	if err != nil {
		if !isPointError(err) {
			return pt, err
		}
		pt.Error = firstLine(err.Error())
	} else {
		c := plan.Fleet.CostPerHour
		pt.Cost, pt.Fleet, pt.OnDemandCost = &c, plan.Fleet.GPUsUsed, plan.Fleet.OnDemandCostPerHour
	}
	for _, g := range in.Cluster.GPUs {
		one := *in.Cluster
		one.GPUs, one.Servers = []formats.GPUPool{g}, nil
		oin := pin
		oin.Cluster = &one
		phase = g.Type + " alone"
		note(phase)
		p1, err := solveWith(ctx, sys, oin, s, flags)
		if err != nil {
			if !isPointError(err) {
				return pt, err
			}
			continue
		}
		if c := p1.Fleet.CostPerHour; pt.SingleCost == nil || c < *pt.SingleCost {
			pt.SingleCost, pt.SingleType = &c, g.Type
		}
	}
	if pt.Cost != nil && pt.SingleCost != nil && *pt.SingleCost > 0 {
		v := 100 * (1 - *pt.Cost / *pt.SingleCost)
		pt.SavingPct = &v
	}
	return pt, nil
}

// isPointError: an infeasible point or bad input at that point is reported in its row; a
// solver failure stops the sweep.
func isPointError(err error) bool {
	return errors.Is(err, planner.ErrInfeasible) || errors.Is(err, planner.ErrInput) || errors.Is(err, planner.ErrNoSolution)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func solveWith(ctx context.Context, sys system.Planning, in planner.Inputs, s planner.Settings, flags map[string]string) (*formats.Plan, error) {
	pl, opts := solve.NewPlanner(sys)
	for k, v := range flags {
		if !opts.Takes(k) {
			return nil, run.UsageErrorf("--%s: the %s planner does not take it", k, sys.Name())
		}
		if err := opts.Set(k, v); err != nil {
			return nil, run.UsageErrorf("--%s: %v", k, err)
		}
	}
	plan, err := pl.Solve(ctx, in, s)
	if err != nil {
		return nil, err
	}
	if plan.Fleet == nil {
		return nil, run.UsageErrorf("the %s planner has no cost objective yet", sys.Name())
	}
	return plan, nil
}

func write(io *run.IO, o Args, rep Report) error {
	f := func(p *float64, prec int) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatFloat(*p, 'f', prec, 64)
	}
	// Costs carry their unit: the cluster's currency per hour of the whole fleet.
	perHour := "_" + strings.ToUpper(rep.Currency) + "/H"
	header := []string{strings.ToUpper(rep.Sweep), "COST" + perHour, "FLEET", "SINGLE_TYPE" + perHour, "SINGLE_TYPE", "SAVING_%"}
	if rep.SpotShare != nil {
		header = append(header[:2], append([]string{"ON_DEMAND" + perHour}, header[2:]...)...)
	}
	if rep.Baseline != "" {
		header = append(header, strings.ToUpper(rep.Baseline)+perHour)
	}
	header = append(header, "NOTE")
	var rows [][]string
	for _, p := range rep.Points {
		mix := fleet.Describe(&formats.Fleet{GPUsUsed: p.Fleet, Currency: rep.Currency, SpotShare: rep.SpotShare})
		if p.Cost == nil {
			mix = "-"
		} else if i := strings.Index(mix, " ="); i >= 0 {
			mix = mix[:i]
		}
		row := []string{p.Label, f(p.Cost, 2), mix, f(p.SingleCost, 2), p.SingleType, f(p.SavingPct, 1)}
		if rep.SpotShare != nil {
			row = append(row[:2], append([]string{f(p.OnDemandCost, 2)}, row[2:]...)...)
		}
		if rep.Baseline != "" {
			row = append(row, f(p.Baseline, 2))
		}
		rows = append(rows, append(row, p.Error))
	}
	if o.CSV != "" {
		var b strings.Builder
		w := csv.NewWriter(&b)
		_ = w.Write(append([]string{"x"}, header...))
		for i, r := range rows {
			_ = w.Write(append([]string{strconv.FormatFloat(rep.Points[i].X, 'g', -1, 64)}, r...))
		}
		w.Flush()
		if err := formats.WriteAtomic(o.CSV, []byte(b.String())); err != nil {
			return fmt.Errorf("writing %s: %w", o.CSV, err)
		}
	}
	if o.Plot != "" {
		var mixed, single, bl sim.Curve
		mixed.Name, single.Name, bl.Name = "least-cost fleet", "cheapest single GPU type", "baseline "+rep.Baseline
		for _, p := range rep.Points {
			mixed.Loads, single.Loads, bl.Loads = append(mixed.Loads, p.X), append(single.Loads, p.X), append(bl.Loads, p.X)
			mixed.Values = append(mixed.Values, orNaN(p.Cost))
			single.Values = append(single.Values, orNaN(p.SingleCost))
			bl.Values = append(bl.Values, orNaN(p.Baseline))
		}
		curves := []sim.Curve{mixed, single}
		if rep.Baseline != "" {
			curves = append(curves, bl)
		}
		xl := map[string]string{"rate": "rate multiplier", "slo_ms": "SLO (ms)", "accuracy": "accuracy target"}[rep.Sweep]
		pl, err := sim.CostPlot(fmt.Sprintf("%s: cost frontier", rep.System), xl, rep.Currency, curves)
		if err != nil {
			return err
		}
		paths, err := sim.SavePlot(pl, filepath.Dir(o.Plot), filepath.Base(o.Plot), 16*vg.Centimeter, 10*vg.Centimeter)
		if err != nil {
			return fmt.Errorf("writing the plot: %w", err)
		}
		io.Infof("wrote %s", strings.Join(paths, ", "))
	}
	if io.JSONOutput() {
		return io.WriteJSON(rep)
	}
	io.Table(header, rows)
	why := map[string]string{header[1]: "no fleet found (NOTE says why)", "FLEET": "no fleet found (NOTE says why)",
		header[3]: "no single GPU type of the cluster serves the point", "SAVING_%": "no fleet, or no single-type fleet, to compare"}
	if rep.Baseline != "" {
		why[header[6]] = "the baseline found no fleet"
	}
	tables.DashNote(io.Out, header, rows, why)
	return nil
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
