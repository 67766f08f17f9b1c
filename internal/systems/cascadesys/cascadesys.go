// Package cascadesys assembles CascadeServe for the registry (Kossmann et
// al., CascadeServe): the gear planner and its baselines (planner/cascade),
// the gear-switching data plane with its no-switch ablation (dataplane/cascade), the plan
// checker, `plan bench cascade` and the exporters (export/cascade).
package cascadesys

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/bench/cascadebench"
	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	xcascade "github.com/plan-dev/plan/export/cascade"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/planner"
	pc "github.com/plan-dev/plan/planner/cascade"
)

// System returns the CascadeServe system.
func System() system.System {
	return system.System{
		Name:             "cascade",
		Doc:              "CascadeServe: gear plans of model cascades (cascade search, QPS-range adaptation, placement + LB LP, batching) switched on measured QPS",
		WorkloadSections: []string{"cascades"},
		Strategies:       pc.Strategies,
		NewPlanner:       func() planner.Planner { return &Planner{} },
		Render:           Render,
		PlanSection:      dpc.Kind,
		// CascadeServe validates and cross-checks its typed sections itself (issue 29 item 3).
		Sections: system.Sections{Plan: cascadesec.Plan{}, Workload: []formats.Section{cascadesec.Workload{}}},
		HasPlan:  func(p *formats.Plan) bool { return p.Cascade != nil },
		Deploy: func(p *formats.Plan) (*dataplane.Deployment, string, error) {
			d, err := dpc.FromPlan(p)
			if p.Provenance.Strategy == pc.StrategyCocktail {
				// a Cocktail+ plan is its largest fleet: the autoscaler decides what runs
				return d, dpc.PolicyCocktail, err
			}
			return d, dpc.PolicyGears, err
		},
		Policies:  dpc.Policies(),
		Sample:    dpc.Sample,
		Checker:   Checker{},
		Benches:   []func() bench.Bench{func() bench.Bench { return &cascadebench.Command{} }},
		Exporters: xcascade.Exporters(),
	}
}

// Planner plans cascades workloads: its flags fill pc.Flags, which the plan records (the
// latency SLO from plan solve's --slo).
type Planner struct {
	f pc.Flags
}

// Flags implements planner.Planner.
func (o *Planner) Flags(f *pflag.FlagSet) {
	d := pc.DefaultFlags()
	f.Float64Var(&o.f.AccuracySLO, "accuracy", d.AccuracySLO, "accuracy SLO in (0,1]: minimize latency at this weighted accuracy (with --slo: the accuracy floor of a latency SLO)")
	f.Float64Var(&o.f.Percentile, "percentile", d.Percentile, "latency SLO percentile (default: the workload's, or 0.95)")
	f.IntVar(&o.f.GPUs, "gpus", d.GPUs, "use only the first N GPUs of the cluster (0 = all)")
	f.BoolVar(&o.f.MinGPUs, "min-gpus", d.MinGPUs, "search the fewest GPUs whose plan meets every SLO")
	f.IntVar(&o.f.Ranges, "ranges", d.Ranges, "number of QPS ranges (gears) (default: the workload's qps_ranges, else 64 or 1 per QPS)")
	f.Float64Var(&o.f.QPSMax, "qps-max", d.QPSMax, "highest planned QPS (default: the workload's qps_max)")
	f.IntVar(&o.f.Levels, "levels", d.Levels, "threshold levels per model (certainty quantiles)")
	f.IntVar(&o.f.MaxLen, "max-len", d.MaxLen, "longest cascade (1..3)")
	f.BoolVar(&o.f.Monotone, "monotone", d.Monotone, "only cost-ascending cascades")
	f.StringVar(&o.f.Weights, "weights", d.Weights, "range accuracy weights: requests (ω ∝ time·QPS) or time")
	f.StringVar(&o.f.Provision, "provision", d.Provision, "dynba and ms+ fleet sizing: queue (the paper's: the rate all but the SLO's tail of requests arrive below, peaks queued) or peak (default queue)")
}

func (o *Planner) options(s planner.Settings) (pc.Options, error) {
	f := o.f
	var probs []string
	if f.AccuracySLO != 0 && !(f.AccuracySLO > 0 && f.AccuracySLO <= 1) {
		probs = append(probs, fmt.Sprintf("--accuracy: %g: must be in (0, 1]", f.AccuracySLO))
	}
	if f.Percentile != 0 && !(f.Percentile > 0 && f.Percentile <= 1) {
		probs = append(probs, fmt.Sprintf("--percentile: %g: must be in (0, 1]", f.Percentile))
	}
	if f.GPUs < 0 || f.Ranges < 0 || f.QPSMax < 0 || math.IsNaN(f.QPSMax) {
		probs = append(probs, "--gpus, --ranges and --qps-max: must be >= 0")
	}
	if f.Levels < 2 || f.Levels > 1000 {
		probs = append(probs, fmt.Sprintf("--levels: %d: must be in [2, 1000]", f.Levels))
	}
	if f.MaxLen < 1 || f.MaxLen > 3 {
		probs = append(probs, fmt.Sprintf("--max-len: %d: must be 1, 2 or 3", f.MaxLen))
	}
	if f.Weights != "requests" && f.Weights != "time" {
		probs = append(probs, fmt.Sprintf("--weights: %q: must be requests or time", f.Weights))
	}
	if f.Provision != "" && f.Provision != pc.ProvisionQueue && f.Provision != pc.ProvisionPeak {
		probs = append(probs, fmt.Sprintf("--provision: %q: must be queue or peak", f.Provision))
	}
	if len(probs) > 0 {
		return pc.Options{}, &planner.InputError{Problems: probs}
	}
	return pc.Options{Provision: f.Provision, Strategy: s.Strategy, Latency: s.SLO, Percentile: f.Percentile, Accuracy: f.AccuracySLO, GPUs: f.GPUs,
		MinGPUs: f.MinGPUs, Ranges: f.Ranges, QPSMax: f.QPSMax, TimeWeights: f.Weights == "time",
		Search: pc.SearchOptions{Levels: f.Levels, MaxLen: f.MaxLen, Monotone: f.Monotone}, ToolVersion: s.ToolVersion}, nil
}

// Solve implements planner.Planner.
func (o *Planner) Solve(ctx context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	opt, err := o.options(s)
	if err != nil {
		return nil, err
	}
	if s.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.TimeLimit)
		defer cancel()
	}
	var plan *formats.Plan
	if s.Objective == planner.ObjectiveCost {
		plan, err = pc.SolveCost(ctx, in, opt)
	} else {
		plan, _, err = pc.Solve(ctx, in, opt)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %v", planner.ErrNoSolution, err)
		}
		if errors.Is(err, planner.ErrInfeasible) {
			// Name the SLO that cannot be met (file, field, value); the message says which
			// SLO is the best attainable. Exit 2 either way.
			c := in.Workload.Cascades[0]
			field := "workload: cascades[0]"
			switch {
			case opt.Accuracy > 0 && o.f.AccuracySLO > 0:
				field = fmt.Sprintf("--accuracy %g", opt.Accuracy)
			case s.SLO > 0:
				field = fmt.Sprintf("--slo %v", s.SLO)
			case c.LatencySLO != nil:
				field = fmt.Sprintf("workload: cascades[0].latency_slo.latency: %v", time.Duration(c.LatencySLO.Latency))
			case c.AccuracySLO > 0:
				field = fmt.Sprintf("workload: cascades[0].accuracy_slo: %g", c.AccuracySLO)
			}
			msg := strings.TrimPrefix(err.Error(), planner.ErrInfeasible.Error()+": ")
			return nil, &planner.InputError{Problems: []string{fmt.Sprintf("%s: %s: %s", field, planner.ErrInfeasible.Error(), msg)}}
		}
		return nil, err
	}
	if s.Deterministic {
		plan.Provenance.SolveMs = 0
	}
	return plan, nil
}

// Render prints the placement and one row per gear.
func Render(p *formats.Plan) []planner.Table {
	cp := p.Cascade
	pl := planner.Table{Header: []string{"REPLICA", "MODEL", "GPUS"}}
	for i, r := range cp.Placement {
		pl.Rows = append(pl.Rows, []string{strconv.Itoa(i), r.Model, fmt.Sprint(r.GPUs)})
	}
	gt := planner.Table{Header: []string{"GEAR", "QPS", "CASCADE", "B1", "ACC", "WORK_MS", "P_LAT_MS"}}
	for i, g := range cp.Gears {
		var b strings.Builder
		for j, m := range g.Models {
			if j > 0 {
				fmt.Fprintf(&b, " <%.3g> ", g.Thr[j-1])
			}
			b.WriteString(m)
		}
		b1 := 1
		if len(g.Models) > 0 {
			b1 = g.Trigger[g.Models[0]]
		}
		gt.Rows = append(gt.Rows, []string{strconv.Itoa(i), fmt.Sprintf("[%g, %g)", g.QLo, g.QHi), b.String(), strconv.Itoa(b1),
			fmt.Sprintf("%.4f", g.ExpAcc), fmt.Sprintf("%.3f", g.ExpWork*1000), fmt.Sprintf("%.1f", g.ExpPLat)})
	}
	return []planner.Table{pl, gt}
}

// Checker checks gear plans.
type Checker struct{}

// Verify implements planner.Checker.
func (Checker) Verify(p *formats.Plan) ([]string, string) {
	return pc.Verify(p), fmt.Sprintf("cascade plan %s, %d gears, %d replicas on %d GPUs: placement and memory, shares, gear coverage, replayed accuracy per gear, SLO",
		p.Cascade.Task, len(p.Cascade.Gears), len(p.Cascade.Placement), pc.GPUs(p.Cascade))
}

// Compare implements planner.Checker: GPUs (fewer is better) and weighted accuracy
// (higher is better), then each gear's expected accuracy.
func (Checker) Compare(got, ref *formats.Plan, tol float64) []planner.Check {
	if ref.Cascade == nil {
		return []planner.Check{{Line: "reference is not a cascade plan"}}
	}
	g, r := got.Cascade, ref.Cascade
	out := []planner.Check{
		planner.AtMost("gpus", g.Task, float64(pc.GPUs(g)), float64(pc.GPUs(r)), tol, 0, fmt.Sprintf("task %s: %d GPUs vs %d (tolerance %.2f%%)", g.Task, pc.GPUs(g), pc.GPUs(r), tol*100)),
		planner.AtLeast("weighted_accuracy", g.Task, got.Provenance.Objective, ref.Provenance.Objective, tol, fmt.Sprintf("task %s: weighted accuracy %.4f vs %.4f (tolerance %.2f%%)", g.Task, got.Provenance.Objective, ref.Provenance.Objective, tol*100)),
	}
	if len(g.Gears) != len(r.Gears) {
		n, rn := float64(len(g.Gears)), float64(len(r.Gears))
		out = append(out, planner.Check{Line: fmt.Sprintf("task %s: %d gears vs %d", g.Task, len(g.Gears), len(r.Gears)), Name: "gears", Subject: g.Task, Value: &n, Limit: &rn})
		return out
	}
	for i := range g.Gears {
		out = append(out, planner.AtLeast("gear_accuracy", fmt.Sprintf("%s/gear %d", g.Task, i), g.Gears[i].ExpAcc, r.Gears[i].ExpAcc, tol,
			fmt.Sprintf("gear %d [%g, %g): accuracy %.4f vs %.4f", i, g.Gears[i].QLo, g.Gears[i].QHi, g.Gears[i].ExpAcc, r.Gears[i].ExpAcc)))
	}
	return out
}

// Resolve implements planner.Checker: re-plans from the embedded inputs with the recorded
// options.
func (Checker) Resolve(ctx context.Context, p *formats.Plan, timeLimit time.Duration) (*formats.Plan, error) {
	e := p.Provenance.Embedded
	if e == nil || e.Cluster == nil || e.Workload == nil {
		return nil, fmt.Errorf("provenance.embedded holds no inputs: cannot re-solve")
	}
	// Unrecorded options take the flags' defaults; the strategy is the plan's.
	rec := pc.DefaultFlags()
	if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	o := &Planner{f: rec}
	s := planner.Settings{Strategy: p.Provenance.Strategy, TimeLimit: timeLimit, Deterministic: true, SLO: rec.LatencySLO.D(), Objective: rec.Objective}
	profs := make([]*formats.Profile, len(e.Profiles))
	for i := range e.Profiles {
		profs[i] = &e.Profiles[i]
	}
	return o.Solve(ctx, planner.Inputs{Workload: e.Workload, Cluster: e.Cluster, Profiles: profs}, s)
}
