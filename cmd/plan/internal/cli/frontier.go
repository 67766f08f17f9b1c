package cli

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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/progress"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/sim"
)

type frontierOptions struct {
	solveOptions
	rate, slo, accuracy string
	csv, plot           string
	baseline            string
}

func newFrontierCmd(app *App) *cobra.Command {
	o := &frontierOptions{}
	cmd := &cobra.Command{
		Use:   "frontier",
		Short: "Sweep the rate, SLO or accuracy target and print the least-cost fleet at each point",
		Long: `frontier solves the workload with --objective cost at each point of a sweep and
prints the least cost per hour with its fleet mix beside the cheapest fleet of a
single GPU type (each type of the cluster alone) and the saving of the mix: the picture a
capacity review needs. Sweep one of:
  --rate      multipliers of every rate of the workload (models, pipelines, llm_classes and
              workflow apps rate_rps; cascades qps_max): LO:HI:STEP, a value or a comma list
  --slo       SLOs (plan solve --slo) as a comma list of durations
  --accuracy  accuracy targets (CascadeServe's --accuracy) as a comma list
Prices and availability come from the cluster (price_per_hour, available; default list
prices where none is given). --csv writes the table as CSV, --plot writes PATH.png and
PATH.svg, --output json prints the points as JSON.`,
		Example: `  plan frontier --profile testdata/ppipe/profile.json --cluster testdata/cost/cluster-priced.yaml --workload testdata/cost/workload.yaml --rate 0.5:2:0.5
  plan frontier --profile llm.json --cluster mixed.yaml --workload classes.yaml --rate 1,2,4 --csv frontier.csv --plot frontier`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFrontier(cmd, app, o) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.profiles, "profile", nil, "profile file (repeatable; default: the embedded demo profile)")
	f.StringVar(&o.cluster, "cluster", "", "cluster file with prices and availability (default: the embedded demo cluster)")
	f.StringVar(&o.workload, "workload", "", "workload file; its sections pick the planner")
	f.StringVar(&o.strategy, "strategy", "", "the planner's algorithm (default: the system's own)")
	f.DurationVar(&o.timeLimit, "time-limit", 30*time.Second, "solver time limit per solve")
	f.Float64Var(&o.gap, "gap", 0.01, "relative MIP gap per solve")
	listVar(f, &o.rate, "rate", "", "rate multipliers to sweep: LO:HI:STEP, a value, or a comma list")
	listVar(f, &o.slo, "slo", "", "SLOs to sweep: a comma list of durations (200ms,400ms)")
	listVar(f, &o.accuracy, "accuracy", "", "accuracy targets to sweep (CascadeServe): a comma list")
	f.StringVar(&o.baseline, "baseline", "", "also cost the system's baseline strategy at each point (e.g. np for PPipe: no partitioning)")
	f.StringVar(&o.csv, "csv", "", "also write the points as CSV to this file")
	f.StringVar(&o.plot, "plot", "", "also plot cost against the swept value to PATH.png and PATH.svg")
	addSpotFlag(f, &o.spot)
	return cmd
}

// frontierPoint is one point of the sweep. Costs are nil where no fleet serves the point.
type frontierPoint struct {
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

type frontierReport struct {
	System   string `json:"system"`
	Baseline string `json:"baseline,omitempty"`
	Sweep    string `json:"sweep"`
	Currency string `json:"currency"`
	// SpotShare is --spot: every cost is priced with that spot share (Fleet.SpotShare).
	SpotShare *float64        `json:"spot_share,omitempty"`
	Points    []frontierPoint `json:"points"`
}

// sweepPoint is one value of the swept quantity and how it changes a solve.
type sweepPoint struct {
	x     float64
	label string
	apply func(in *planner.Inputs, s *planner.Settings, flags map[string]string)
}

func parseSweep(o *frontierOptions) (string, []sweepPoint, error) {
	n := 0
	for _, s := range []string{o.rate, o.slo, o.accuracy} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return "", nil, run.UsageErrorf("give exactly one of --rate, --slo and --accuracy")
	}
	var pts []sweepPoint
	switch {
	case o.rate != "":
		xs, err := sim.ParseLoadRange(o.rate)
		if err != nil {
			return "", nil, run.UsageErrorf("--rate %q: %v", o.rate, err)
		}
		for _, x := range xs {
			pts = append(pts, sweepPoint{x: x, label: strconv.FormatFloat(x, 'g', 4, 64) + "×", apply: func(in *planner.Inputs, _ *planner.Settings, _ map[string]string) {
				in.Workload = scaleRates(in.Workload, x)
			}})
		}
		return "rate", pts, nil
	case o.slo != "":
		for _, f := range strings.Split(o.slo, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil || d <= 0 {
				return "", nil, run.UsageErrorf("--slo %q: %q: must be a duration > 0", o.slo, f)
			}
			pts = append(pts, sweepPoint{x: float64(d) / float64(time.Millisecond), label: d.String(), apply: func(_ *planner.Inputs, s *planner.Settings, _ map[string]string) {
				s.SLO = d
			}})
		}
		return "slo_ms", pts, nil
	default:
		for _, f := range strings.Split(o.accuracy, ",") {
			a, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(a > 0 && a <= 1) {
				return "", nil, run.UsageErrorf("--accuracy %q: %q: must be in (0, 1]", o.accuracy, f)
			}
			v := strings.TrimSpace(f)
			pts = append(pts, sweepPoint{x: a, label: v, apply: func(_ *planner.Inputs, _ *planner.Settings, fl map[string]string) {
				fl["accuracy"] = v
			}})
		}
		return "accuracy", pts, nil
	}
}

// scaleRates is a copy of w with every rate multiplied by f.
func scaleRates(w *formats.Workload, f float64) *formats.Workload {
	if w == nil {
		return nil
	}
	c := *w
	c.Models = append([]formats.ModelWorkload(nil), w.Models...)
	for i := range c.Models {
		c.Models[i].RateRPS *= f
	}
	c.Pipelines = append([]formats.Pipeline(nil), w.Pipelines...)
	for i := range c.Pipelines {
		c.Pipelines[i].RateRPS *= f
	}
	c.LLMClasses = append([]formats.LLMClass(nil), w.LLMClasses...)
	for i := range c.LLMClasses {
		c.LLMClasses[i].RateRPS *= f
	}
	c.Cascades = append([]formats.Cascade(nil), w.Cascades...)
	for i := range c.Cascades {
		c.Cascades[i].QPSMax *= f
	}
	if w.Workflows != nil {
		wf := *w.Workflows
		wf.Apps = map[string]formats.App{}
		for k, a := range w.Workflows.Apps {
			a.RateRPS *= f
			wf.Apps[k] = a
		}
		c.Workflows = &wf
	}
	return &c
}

func runFrontier(cmd *cobra.Command, app *App, o *frontierOptions) error {
	what, pts, err := parseSweep(o)
	if err != nil {
		return err
	}
	if o.timeLimit <= 0 {
		return run.UsageErrorf("--time-limit: %s: must be > 0", o.timeLimit)
	}
	if !(o.gap > 0 && o.gap < 1) {
		return run.UsageErrorf("--gap: %g: must be in (0, 1)", o.gap)
	}
	for _, f := range [][2]string{{"--csv", o.csv}, {"--plot", o.plot}} {
		if f[1] != "" {
			if err := formats.CheckWritable(f[1]); err != nil {
				return run.UsageErrorf("%s: %q: %v", f[0], f[1], err)
			}
		}
	}
	in, err := loadSolveInputs(&o.solveOptions, app.Systems.Sections(), func(s string) { fmt.Fprintf(app.Err, "warning: %s\n", s) })
	if err != nil {
		return err
	}
	sys, err := app.Systems.ForWorkload(in.Workload)
	if err != nil {
		return run.UsageErrorf("%s: %v", o.workload, err)
	}
	base := planner.Settings{Strategy: o.strategy, TimeLimit: o.timeLimit, Gap: o.gap, Deterministic: true,
		ToolVersion: buildVersion().Version, Objective: planner.ObjectiveCost}
	o.objective = planner.ObjectiveCost
	if err := applyObjective(app, &o.solveOptions, in, &base); err != nil {
		return err
	}
	for _, f := range [][2]string{{"strategy", o.strategy}, {"baseline", o.baseline}} {
		if err := checkStrategy(f[0], f[1], sys); err != nil {
			return err
		}
	}
	rep := frontierReport{System: sys.Name, Sweep: what, Currency: in.Cluster.CurrencyOf(), Baseline: o.baseline, SpotShare: in.Cluster.SpotShare}
	// One solve per point and GPU type: on a terminal a bar from the start, piped one
	// summary line, --quiet nothing (internal/progress).
	task := progressline.NewTask(app.Err, app.Quiet, "frontier", "points", len(pts))
	for i, sp := range pts {
		pt, err := frontierAt(cmd.Context(), sys, in, base, sp)
		if err != nil {
			task.Clear()
			return err
		}
		if o.baseline != "" {
			bs := base
			bs.Strategy = o.baseline
			s, flags, pin := bs, map[string]string{}, in
			sp.apply(&pin, &s, flags)
			bp, err := solveWith(cmd.Context(), sys, pin, s, flags)
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
	return writeFrontier(app, o, rep)
}

// frontierAt solves one point on the whole cluster and on each GPU type alone.
func frontierAt(ctx context.Context, sys system.System, in planner.Inputs, base planner.Settings, sp sweepPoint) (frontierPoint, error) {
	pt := frontierPoint{X: sp.x, Label: sp.label}
	s, flags := base, map[string]string{}
	pin := in
	sp.apply(&pin, &s, flags)
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

func solveWith(ctx context.Context, sys system.System, in planner.Inputs, s planner.Settings, flags map[string]string) (*formats.Plan, error) {
	pl := sys.NewPlanner()
	fs := pflag.NewFlagSet(sys.Name, pflag.ContinueOnError)
	pl.Flags(fs)
	for k, v := range flags {
		if fs.Lookup(k) == nil {
			return nil, run.UsageErrorf("--%s: the %s planner does not take it", k, sys.Name)
		}
		if err := fs.Set(k, v); err != nil {
			return nil, run.UsageErrorf("--%s: %v", k, err)
		}
	}
	plan, err := pl.Solve(ctx, in, s)
	if err != nil {
		return nil, err
	}
	if plan.Fleet == nil {
		return nil, run.UsageErrorf("the %s planner has no cost objective yet", sys.Name)
	}
	return plan, nil
}

func writeFrontier(app *App, o *frontierOptions, rep frontierReport) error {
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
	if o.csv != "" {
		var b strings.Builder
		w := csv.NewWriter(&b)
		_ = w.Write(append([]string{"x"}, header...))
		for i, r := range rows {
			_ = w.Write(append([]string{strconv.FormatFloat(rep.Points[i].X, 'g', -1, 64)}, r...))
		}
		w.Flush()
		if err := formats.WriteAtomic(o.csv, []byte(b.String())); err != nil {
			return fmt.Errorf("writing %s: %w", o.csv, err)
		}
	}
	if o.plot != "" {
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
		paths, err := sim.SavePlot(pl, filepath.Dir(o.plot), filepath.Base(o.plot), 16*vg.Centimeter, 10*vg.Centimeter)
		if err != nil {
			return fmt.Errorf("writing the plot: %w", err)
		}
		app.Infof("wrote %s", strings.Join(paths, ", "))
	}
	if app.JSONOutput() {
		return app.WriteJSON(rep)
	}
	app.Table(header, rows)
	why := map[string]string{header[1]: "no fleet found (NOTE says why)", "FLEET": "no fleet found (NOTE says why)",
		header[3]: "no single GPU type of the cluster serves the point", "SAVING_%": "no fleet, or no single-type fleet, to compare"}
	if rep.Baseline != "" {
		why[header[6]] = "the baseline found no fleet"
	}
	run.DashNote(app.Out, header, rows, why)
	return nil
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
