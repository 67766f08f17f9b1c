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
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/bench/cascadebench"
	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/export"
	xcascade "github.com/plan-dev/plan/export/cascade"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/planner"
	pc "github.com/plan-dev/plan/planner/cascade"
)

// New returns the CascadeServe system (system.Factory; it needs nothing of the handle). It
// implements every extension point but Sizing, Serving and ONNXCutting.
func New(system.Handle) system.Plugin { return cascadeSystem{} }

type cascadeSystem struct{}

func (cascadeSystem) Name() string { return "cascade" }

func (cascadeSystem) Doc() string {
	return "CascadeServe: gear plans of model cascades (cascade search, QPS-range adaptation, placement + LB LP, batching) switched on measured QPS"
}

// Sections are CascadeServe's sections, registered whole (formats/sections/cascadesec).
func (cascadeSystem) Sections() system.Sections {
	return system.Sections{Plan: cascadesec.PlanSection, Workload: []formats.Section{cascadesec.WorkloadSection}}
}

func (cascadeSystem) DefaultWorkload() bool { return false }

func (cascadeSystem) Strategies() []string { return pc.Strategies }

func (cascadeSystem) NewPlanner() planner.Planner { return &Planner{f: pc.DefaultFlags()} }

func (cascadeSystem) Render(p *formats.Plan) []planner.Table { return Render(p) }

func (cascadeSystem) Deploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	d, err := dpc.FromPlan(p)
	if err == nil {
		// the accuracy target the plan was solved for (--accuracy, recorded in its
		// options; with --accuracy-margin, target + margin), else the workload's
		var rec pc.Flags
		if planner.ReadOptions(p.Provenance.Options, &rec) == nil && rec.AccuracySLO > 0 {
			d.AccuracyTarget = rec.AccuracySLO
		}
	}
	if p.Provenance.Strategy == pc.StrategyCocktail {
		// a Cocktail+ plan is its largest fleet: the autoscaler decides what runs
		return d, dpc.PolicyCocktail, err
	}
	return d, dpc.PolicyGears, err
}

func (cascadeSystem) Policies() []dataplane.PolicySpec { return dpc.Policies() }

func (cascadeSystem) Sample(r *rand.Rand) *dataplane.Deployment { return dpc.Sample(r) }

func (cascadeSystem) Checker() planner.Checker { return Checker{} }

func (cascadeSystem) Benches() []func() benchapi.Bench {
	return []func() benchapi.Bench{func() benchapi.Bench { return &cascadebench.Command{} }}
}

func (cascadeSystem) Exporters() []export.Exporter { return xcascade.Exporters() }

// Planner plans cascades workloads: its options are pc.Flags, which the plan records (the
// latency SLO from plan solve's --slo).
type Planner struct {
	f      pc.Flags
	report []planner.Table
}

// Report implements planner.Reporter: the defaults the last solve took.
func (o *Planner) Report() []planner.Table { return o.report }

// Options implements planner.Planner.
func (o *Planner) Options() any { return &o.f }

func (o *Planner) options(s planner.Settings) (pc.Options, error) {
	f := o.f
	var probs []string
	if f.AccuracySLO != 0 && !(f.AccuracySLO > 0 && f.AccuracySLO <= 1) {
		probs = append(probs, fmt.Sprintf("--accuracy: %g: must be in (0, 1]", f.AccuracySLO))
	}
	if f.Percentile != 0 && !(f.Percentile > 0 && f.Percentile <= 1) {
		probs = append(probs, fmt.Sprintf("--percentile: %g: must be in (0, 1]", f.Percentile))
	}
	if !(f.AccuracyMargin >= 0 && f.AccuracyMargin < 1) {
		probs = append(probs, fmt.Sprintf("--accuracy-margin: %g: must be in [0, 1)", f.AccuracyMargin))
	}
	if f.GPUs < 0 || f.Ranges < 0 || f.QPSMax < 0 || math.IsNaN(f.QPSMax) {
		probs = append(probs, "--gpus, --ranges and --qps-max: must be >= 0")
	}
	if f.Levels < 2 || f.Levels > 1000 {
		probs = append(probs, fmt.Sprintf("--levels: %d: must be in [2, 1000]", f.Levels))
	}
	if f.MaxLen < 0 {
		probs = append(probs, fmt.Sprintf("--max-len: %d: must be >= 0 (0: the workload's own)", f.MaxLen))
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
	return pc.Options{Provision: f.Provision, Strategy: s.Strategy, Latency: s.SLO, Percentile: f.Percentile, Accuracy: f.AccuracySLO, AccuracyMargin: f.AccuracyMargin, GPUs: f.GPUs,
		MinGPUs: f.MinGPUs, Ranges: f.Ranges, QPSMax: f.QPSMax, TimeWeights: f.Weights == "time",
		Search: pc.SearchOptions{Levels: f.Levels, MaxLen: f.MaxLen, Monotone: f.Monotone}, ToolVersion: s.ToolVersion}, nil
}

// Solve implements planner.Planner.
func (o *Planner) Solve(ctx context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	o.report = nil
	opt, err := o.options(s)
	if err != nil {
		return nil, err
	}
	if err := o.fitMaxLen(in, &opt); err != nil {
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
		var res *pc.Result
		plan, res, err = pc.Solve(ctx, in, opt)
		if err == nil {
			err = refuseMiss(ctx, in, opt, res)
		}
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %v", planner.ErrNoSolution, err)
		}
		if errors.Is(err, planner.ErrInfeasible) {
			msg := strings.TrimPrefix(err.Error(), planner.ErrInfeasible.Error()+": ")
			return nil, &planner.InputError{Problems: []string{fmt.Sprintf("%s: %s: %s", o.sloField(in, opt, s), planner.ErrInfeasible.Error(), msg)}}
		}
		return nil, err
	}
	if s.Deterministic {
		plan.Provenance.SolveMs = 0
	}
	// The defaults it took, printed as the deployment search prints its own and recorded.
	plan.Provenance.Defaults = defaultNotes(o.f, opt)
	o.report = planner.NoteTable(plan.Provenance.Defaults)
	return plan, nil
}

// maxRecordsLen is the longest cascade the search over validation records enumerates
// (planner/cascade Enumerate: per-level histograms for up to 3 stages, the artifact's K = 3,
// CascadeServe §4.2).
const maxRecordsLen = 3

// fitMaxLen bounds the cascade length by what the workload allows. --max-len 0 (the
// default) is the workload's own: maxRecordsLen over validation records, and a candidates
// table searched whole (its longest cascade, at least maxRecordsLen, whatever its length). A
// length asked for is never cut silently: over records one above maxRecordsLen is refused,
// and over a table one below its longest cascade is refused naming that candidate, since it
// would drop it. The length searched is what the plan records.
func (o *Planner) fitMaxLen(in planner.Inputs, opt *pc.Options) error {
	if in.Workload == nil || len(cascadesec.CascadesOf(in.Workload)) != 1 {
		return nil // pc.Solve names the problem
	}
	c := &cascadesec.CascadesOf(in.Workload)[0]
	if len(c.Candidates) == 0 {
		if opt.Search.MaxLen > maxRecordsLen {
			return &planner.InputError{Problems: []string{fmt.Sprintf("--max-len: %d: must be 1, 2 or 3: the search over validation records enumerates cascades of up to %d models (a candidates table may list longer ones)", opt.Search.MaxLen, maxRecordsLen)}}
		}
		if opt.Search.MaxLen == 0 {
			opt.Search.MaxLen = maxRecordsLen
		}
		return nil
	}
	longest, at := 0, 0
	for i, cd := range c.Candidates {
		if len(cd.Models) > longest {
			longest, at = len(cd.Models), i
		}
	}
	if opt.Search.MaxLen == 0 {
		opt.Search.MaxLen = max(longest, maxRecordsLen)
		return nil
	}
	if longest > opt.Search.MaxLen {
		return &planner.InputError{Problems: []string{fmt.Sprintf("workload: cascades[0].candidates[%d].models: %d models: longer than --max-len %d, which would drop it from the search (give --max-len %d, or leave --max-len unset to search the whole table)", at, longest, opt.Search.MaxLen, longest)}}
	}
	return nil
}

// sloField names the SLO a refused solve cannot meet (flag or workload field and value).
func (o *Planner) sloField(in planner.Inputs, opt pc.Options, s planner.Settings) string {
	c := cascadesec.CascadesOf(in.Workload)[0]
	switch {
	case opt.Accuracy > 0 && o.f.AccuracySLO > 0 && opt.AccuracyMargin > 0:
		return fmt.Sprintf("--accuracy %g --accuracy-margin %g", opt.Accuracy, opt.AccuracyMargin)
	case opt.Accuracy > 0 && o.f.AccuracySLO > 0:
		return fmt.Sprintf("--accuracy %g", opt.Accuracy)
	case s.SLO > 0:
		return fmt.Sprintf("--slo %v", s.SLO)
	case c.LatencySLO != nil:
		return fmt.Sprintf("workload: cascades[0].latency_slo.latency: %v", time.Duration(c.LatencySLO.Latency))
	case c.AccuracySLO > 0:
		return fmt.Sprintf("workload: cascades[0].accuracy_slo: %g", c.AccuracySLO)
	}
	return "workload: cascades[0]"
}

// refuseMiss turns a plan that misses an SLO on the GPUs it was given (the best the planner
// found there) into ErrInfeasible naming the best attainable value and what would reach the
// target: the fewest GPUs of the cluster that do (found by solving again, at most once per
// count), else that no GPU count of this cluster and strategy does (`--strategy
// dynba --gpus 4` at accuracy 0.84 printed "optimal, objective 0.8365" and exited 0).
func refuseMiss(ctx context.Context, in planner.Inputs, opt pc.Options, res *pc.Result) error {
	miss := res.Miss()
	if miss == "" {
		return nil
	}
	best := fmt.Sprintf("the best plan on %d GPU(s) (strategy %s) reaches weighted accuracy %.4f", res.HW.N, res.Opt.Strategy, res.Acc)
	if worst := worstLatency(res); worst > 0 {
		best += fmt.Sprintf(", p%g latency %.0f ms", res.Opt.Percentile*100, worst*1000)
	}
	hint := ""
	total := in.Cluster.GPUs[0].Count
	if opt.Accuracy > 0 && len(res.Pareto) > 0 && res.Pareto[0].Acc < res.Opt.Accuracy-absTol {
		hint = fmt.Sprintf("no GPU count reaches it: the strategy's most accurate cascade reaches %.4f (lower --accuracy to %.4f", res.Pareto[0].Acc, res.Pareto[0].Acc)
		if res.Opt.Strategy != pc.StrategyCascadeServe {
			hint += " or use --strategy " + pc.StrategyCascadeServe
		}
		hint += ")"
	} else {
		for n := res.HW.N + 1; n <= total && hint == ""; n++ {
			o := opt
			o.GPUs, o.MinGPUs = n, false
			if _, r, err := pc.Solve(ctx, in, o); err == nil && r.Miss() == "" {
				hint = fmt.Sprintf("--gpus %d reaches it", n)
			} else if ctx.Err() != nil {
				break
			}
		}
		if hint == "" {
			hint = fmt.Sprintf("no GPU count of the cluster (%d) reaches it: relax the target (--slo, --accuracy) or lower --qps-max", total)
		}
	}
	return fmt.Errorf("%w: %s: %s; %s", planner.ErrInfeasible, miss, best, hint)
}

// worstLatency is the highest planned p-latency of any gear, in seconds.
func worstLatency(res *pc.Result) float64 {
	w := 0.0
	for _, g := range res.Gears {
		if !math.IsInf(g.Sim.PLat, 0) && !math.IsNaN(g.Sim.PLat) {
			w = max(w, g.Sim.PLat)
		}
	}
	return w
}

// Render prints the placement and one row per gear.
func Render(p *formats.Plan) []planner.Table {
	cp := cascadesec.PlanOf(p)
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
	cp := cascadesec.PlanOf(p)
	return pc.Verify(p), fmt.Sprintf("cascade plan %s, %d gears, %d replicas on %d GPUs: placement and memory, shares, gear coverage, replayed accuracy per gear, SLO",
		cp.Task, len(cp.Gears), len(cp.Placement), pc.GPUs(cp))
}

// Compare implements planner.Checker: GPUs (fewer is better) and weighted accuracy
// (higher is better), then each gear's expected accuracy.
func (Checker) Compare(got, ref *formats.Plan, tol float64) []planner.Check {
	if cascadesec.PlanOf(ref) == nil {
		return []planner.Check{{Line: "reference is not a cascade plan"}}
	}
	g, r := cascadesec.PlanOf(got), cascadesec.PlanOf(ref)
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
