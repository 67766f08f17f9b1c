// Package ppipesys assembles the PPipe system for the registry: the MILP planner with its
// NP and DART-r baselines (planner/ppipe), the reservation dispatcher and reactive baseline
// (dataplane/ppipe), the plan checker and `plan bench ppipe`.
package ppipesys

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/bench/ppipebench"
	"github.com/plan-dev/plan/dataplane"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/export"
	xppipe "github.com/plan-dev/plan/export/ppipe"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/ppipe"
	"github.com/plan-dev/plan/sim"
)

// New returns the PPipe system (system.Factory; it needs nothing of the handle). It
// implements every extension point but Sizing (a PPipe plan states what its pipelines
// serve) and Serving.
func New(system.Handle) system.Plugin { return ppipeSystem{} }

type ppipeSystem struct{}

func (ppipeSystem) Name() string { return "ppipe" }

func (ppipeSystem) Doc() string {
	return "PPipe: pooled pipelines on heterogeneous GPUs (MILP) with reservation-based batching; NP and DART-r baselines"
}

// Sections are PPipe's sections, registered whole (formats/sections).
func (ppipeSystem) Sections() system.Sections {
	return system.Sections{Plan: ppipesec.PlanSection, Workload: []formats.Section{ppipesec.WorkloadSection}}
}

func (ppipeSystem) DefaultWorkload() bool { return true }

func (ppipeSystem) Strategies() []string {
	return []string{ppipe.StrategyPPipe, ppipe.StrategyNP, ppipe.StrategyDARTR}
}

func (ppipeSystem) NewPlanner() planner.Planner { return &Planner{f: ppipe.DefaultFlags()} }

func (ppipeSystem) Render(p *formats.Plan) []planner.Table { return Render(p) }

func (ppipeSystem) Deploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	d, err := dpppipe.FromPlan(p)
	return d, dpppipe.DefaultPolicy, err
}

func (ppipeSystem) Policies() []dataplane.PolicySpec { return dpppipe.Policies() }

func (ppipeSystem) Sample(r *rand.Rand) *dataplane.Deployment { return dpppipe.Sample(r) }

func (ppipeSystem) Checker() planner.Checker { return Checker{} }

func (ppipeSystem) Exporters() []export.Exporter { return xppipe.Exporters() }

func (ppipeSystem) Benches() []func() benchapi.Bench {
	return []func() benchapi.Bench{func() benchapi.Bench { return &ppipebench.Command{} }}
}

// ONNXCuts: onnx workers run partitions of the plan's one model (PPipe §3's blocks).
func (ppipeSystem) ONNXCuts(p *formats.Plan, dep *dataplane.Deployment) (string, [][2]int, error) {
	return dpppipe.ONNXCuts(p, dep)
}

// Planner is PPipe's planner: its options are ppipe.Flags, which the plan records.
type Planner struct {
	f ppipe.Flags
	// report is the last solve's defaults, as notes (Report).
	report []planner.Table
}

// Report implements planner.Reporter: the defaults the last solve took.
func (o *Planner) Report() []planner.Table { return o.report }

// Options implements planner.Planner.
func (o *Planner) Options() any { return &o.f }

// Solve implements planner.Planner.
func (o *Planner) Solve(ctx context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	if !(o.f.Alpha >= 0 && o.f.Alpha < 1) {
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf("--alpha: %g: must be in [0, 1)", o.f.Alpha)}}
	}
	// ppipe.Options reads 0 as "the default"; here the default is already filled in, so a
	// 0 was asked for, and is out of range.
	if o.f.MaxPartitions == 0 {
		return nil, &planner.InputError{Problems: []string{"--max-partitions: 0: must be in 1..6"}}
	}
	f := o.f
	f.Strategy, f.SLO, f.TimeLimit, f.Gap = s.Strategy, formats.Duration(s.SLO), formats.Duration(s.TimeLimit), s.Gap
	opts := f.Options()
	opts.Deterministic, opts.Progress, opts.ToolVersion = s.Deterministic, s.Progress, s.ToolVersion
	opts.Objective, opts.Deadline = s.Objective, s.Deadline
	cpu0, _ := cpuTime()
	opts.Reserve = reserveFrom(time.Now(), cpu0)
	o.report = nil
	plan, err := ppipe.Solve(ctx, ppipe.Inputs{Profiles: in.Profiles, Cluster: in.Cluster, Workload: in.Workload, Refs: in.Refs}, opts)
	if err != nil {
		return nil, err
	}
	// The defaults it took, printed as the deployment search prints its own and recorded.
	plan.Provenance.Defaults = defaultNotes(in, s, plan)
	o.report = planner.NoteTable(plan.Provenance.Defaults)
	if s.Objective == planner.ObjectiveCost {
		return plan, nil // the cost objective provisions for the rates itself
	}
	if err := rateMisses(in.Workload, plan); err != nil {
		return nil, err
	}
	return plan, nil
}

// The wall time plan solve's prediction of a PPipe plan takes (sim.Predict: the runs at load
// 1 and their replications, then the headroom search's loads, each replicated where it
// decides), which the solve leaves it within --time-limit (ppipe.Options.Reserve). A run
// simulates at most workload.PredictionMaxRequests arrivals at load 1; predictionRuns counts
// the runs a prediction makes in load-1 runs' worth of requests (3 at load 1, the headroom
// search's loads up to twice the rates, their replications); the cost per simulated
// request is about 2.5 µs of CPU for the reservation dispatcher on 100 GPUs (the
// deploy-panic regression's plan a, 3,200 req/s, 64k requests a run: 3.1 s for its
// prediction on an idle 2-core machine, 5–7.7 s beside two busy cores, where the solve
// measured about two thirds of a CPU); predictionFixed is the deployment, the writing and
// the process's own start and exit (0.4 s beside two busy cores).
const (
	predictionRuns    = 32
	simCostPerRequest = 2500 * time.Nanosecond
	predictionFixed   = 400 * time.Millisecond
)

// predictionReserve is the wall time to leave for the prediction of a plan whose models'
// target rates add up to rps requests/s, on a machine that gives this process share of a
// CPU (its CPU time over its wall time so far: a machine busy with other work stretches
// the prediction's wall time as much).
func predictionReserve(rps, share float64) time.Duration {
	perRun := math.Min(workload.PredictionMaxRequests, rps*workload.PredictionSpan([]float64{rps}))
	cpu := predictionFixed + time.Duration(perRun*predictionRuns*float64(simCostPerRequest))
	return time.Duration(float64(cpu) / min(1, max(share, minCPUShare)))
}

// minCPUShare bounds how busy predictionReserve takes the machine to be: below a tenth of a
// CPU the solve is given half the time limit anyway (ppipe.Options.Reserve's cap).
const minCPUShare = 0.1

// reserveFrom is ppipe.Options.Reserve for a solve that started at wall0 with the process
// at cpu0 of CPU time: the share is measured over the solve so far.
func reserveFrom(wall0 time.Time, cpu0 time.Duration) func(float64) time.Duration {
	return func(rps float64) time.Duration {
		share := 1.0
		if cpu, ok := cpuTime(); ok {
			if wall := time.Since(wall0); wall > 0 {
				share = float64(cpu-cpu0) / float64(wall)
			}
		}
		return predictionReserve(rps, share)
	}
}

// StatePrediction applies the rule a PPipe plan states its throughput by (ppipe.StateServed)
// to the plan plan solve is about to write, whose prediction is complete: every model's
// throughput_rps becomes what it serves within its SLO, the formulation's objective stays in
// provenance.objective. note says both for the summary; err refuses a plan where some model
// serves nothing within its SLO (planner.ErrInfeasible: the SLO cannot be met on this
// cluster by the plans the formulation admits), unless acceptMiss; and one that misses its
// target at the rates it states while the time limit stopped the search for what it serves
// before it found anything (sim.ErrHeadroomDeadline: not checked in time), unless
// acceptMiss.
func (o *Planner) StatePrediction(plan *formats.Plan, acceptMiss bool) (note string, err error) {
	pp := ppipesec.PlanOf(plan)
	if pp == nil || plan.Prediction == nil {
		return "", nil
	}
	capacity := map[string]float64{}
	for _, m := range pp.Models {
		for _, p := range m.Pipelines {
			capacity[m.Model] += p.ThroughputRPS
		}
	}
	if u := ppipe.Unchecked(plan); len(u) > 0 && !acceptMiss {
		return "", fmt.Errorf("%s: %w", strings.Join(u, "; "), sim.ErrHeadroomDeadline)
	}
	bad := ppipe.StateServed(plan)
	if len(bad) > 0 && !acceptMiss {
		var probs []string
		for _, u := range bad {
			probs = append(probs, u.String())
		}
		return "", fmt.Errorf("%s (nothing written; --accept-miss writes it with the miss recorded): %w", strings.Join(probs, "; "), planner.ErrInfeasible)
	}
	var parts []string
	for _, m := range ppipesec.PlanOf(plan).Models {
		parts = append(parts, fmt.Sprintf("%s %.4g req/s (capacity %.4g)", m.Model, m.ThroughputRPS, capacity[m.Model]))
	}
	return fmt.Sprintf("throughput stated as served within the SLO in simulation: %s; the formulation's objective %.4g (provenance.objective)",
		strings.Join(parts, ", "), plan.Provenance.Objective), nil
}

// rateMisses refuses a plan whose guaranteed rate (target_rps, load factor 1.0) is below a
// model's expected arrival rate (workload models[i].rate_rps): PPipe maximizes the weighted
// minimum rate on the cluster given, so such a plan is the best there and still misses the
// target (it was written as "optimal"). Throughput grows about linearly with
// GPUs at a fixed SLO, which sizes the hint.
func rateMisses(w *formats.Workload, plan *formats.Plan) error {
	if w == nil || ppipesec.PlanOf(plan) == nil {
		return nil
	}
	var probs []string
	for i, m := range ppipesec.ModelsOf(w) {
		if !(m.RateRPS > 0) {
			continue
		}
		for _, pm := range ppipesec.PlanOf(plan).Models {
			if pm.Model != m.Name || pm.TargetRPS >= m.RateRPS*(1-relTol) {
				continue
			}
			hint := "add GPUs or give a longer --slo"
			if pm.TargetRPS > 0 {
				hint = fmt.Sprintf("about %.1f× the cluster's GPUs would carry it, or give a longer --slo", m.RateRPS/pm.TargetRPS)
			}
			probs = append(probs, fmt.Sprintf("workload: models[%d].rate_rps: %g: %s: the best plan on this cluster guarantees %.1f req/s at SLO %v: %s",
				i, m.RateRPS, planner.ErrInfeasible, pm.TargetRPS, pm.SLO, hint))
		}
	}
	if len(probs) > 0 {
		return &planner.InputError{Problems: probs}
	}
	return nil
}

// Render prints the pipelines, per-model throughput and GPU use.
func Render(plan *formats.Plan) []planner.Table {
	pp := ppipesec.PlanOf(plan)
	ms := func(us float64) string { return strconv.FormatFloat(us/1000, 'f', 2, 64) }
	var t1, t2, t3 planner.Table
	t1.Header = []string{"MODEL", "PIPE", "STAGE", "BLOCKS", "GPU", "VGPU", "COUNT", "BATCH", "STAGE_MS", "XFER_MS", "STAGE_RPS", "PIPE_RPS", "PIPE_MS"}
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
				t1.Rows = append(t1.Rows, row)
			}
		}
	}
	// THROUGHPUT_RPS is what the plan states (what it serves within the SLO where it records
	// its prediction, ppipe.StateServed), CAPACITY_RPS what its pipelines carry.
	t2.Header = []string{"MODEL", "SLO", "BUDGET_MS", "WEIGHT", "PIPELINES", "THROUGHPUT_RPS", "CAPACITY_RPS", "TARGET_RPS"}
	for _, m := range pp.Models {
		capacity := capacityOf(&m)
		t2.Rows = append(t2.Rows, []string{m.Model, m.SLO.String(), ms(m.BudgetUs), fmt.Sprintf("%g", m.Weight), strconv.Itoa(len(m.Pipelines)),
			fmt.Sprintf("%.1f", m.ThroughputRPS), fmt.Sprintf("%.1f", capacity), fmt.Sprintf("%.1f", m.TargetRPS)})
	}
	t3.Header = []string{"GPU", "CLASS", "GPUS USED", "GPUS TOTAL", "USE"}
	for _, g := range pp.GPUUse {
		class := g.Class
		if class == "" {
			class = "none" // the cluster gives this type no class (high, low)
		}
		t3.Rows = append(t3.Rows, []string{g.GPU, class, fmt.Sprintf("%g", g.Used), strconv.Itoa(g.Total), fmt.Sprintf("%.0f%%", 100*g.Used/math.Max(1, float64(g.Total)))})
	}
	return []planner.Table{t1, t2, t3}
}

// Checker checks PPipe, NP and DART-r plans.
type Checker struct{}

// Verify implements planner.Checker.
func (Checker) Verify(plan *formats.Plan) ([]string, string) {
	var out []string
	for _, v := range ppipe.Verify(plan) {
		out = append(out, v.String())
	}
	n := 0
	for _, m := range ppipesec.PlanOf(plan).Models {
		n += len(m.Pipelines)
	}
	return out, fmt.Sprintf("%s plan, %d model(s), %d pipeline(s): GPU budget, latency ≤ budget, throughput arithmetic, contiguous cuts, batches", ppipesec.PlanOf(plan).Strategy, len(ppipesec.PlanOf(plan).Models), n)
}

// Compare implements planner.Checker: every model's throughput, and for plans of several
// models the max-min objective (the worst weight-normalised throughput) as well.
func (Checker) Compare(got, ref *formats.Plan, tol float64) []planner.Check {
	var out []planner.Check
	if ppipesec.PlanOf(ref) == nil {
		return []planner.Check{{Line: "reference is not a PPipe plan"}}
	}
	// Like with like: what two plans serve within the SLO where both state it from their
	// predictions (ppipe.StateServed), else what their pipelines carry (a re-solve has no
	// prediction, and its capacity against a plan's served rate would hide a loss).
	served := statesServed(got) && statesServed(ref)
	what, rate := "capacity", capacityOf
	if served {
		what, rate = "throughput", func(m *ppipesec.PPipeModelPlan) float64 { return m.ThroughputRPS }
	}
	name := func(m *ppipesec.PPipeModelPlan) string { return m.Model }
	out = planner.CompareByName("model", ppipesec.PlanOf(got).Models, ppipesec.PlanOf(ref).Models, name, func(g, r *ppipesec.PPipeModelPlan) []planner.Check {
		if ref.Fleet != nil {
			// A cost plan guarantees each model's rate (target_rps); throughput above it is
			// incidental, and its cost is compared by plan check itself.
			return []planner.Check{within("target_rps", r.Model, fmt.Sprintf("model %s: %s vs the rate served", r.Model, what), rate(g), r.TargetRPS, "rps", 0)}
		}
		return []planner.Check{within("throughput_rps", r.Model, fmt.Sprintf("model %s: %s", r.Model, what), rate(g), rate(r), "rps", tol)}
	})
	if len(ppipesec.PlanOf(ref).Models) > 1 && ref.Fleet == nil {
		out = append(out, within("worst_weighted_throughput_rps", "", fmt.Sprintf("worst weighted %s (max-min objective)", what), maxMin(ppipesec.PlanOf(got), rate), maxMin(ppipesec.PlanOf(ref), rate), "rps", tol))
	}
	return out
}

// statesServed says whether every model of a plan states what its recorded prediction
// serves (ppipe.ServedRPS applies, and the plan is not one stating its capacity by the rule
// before, ppipe.StatesCapacity).
func statesServed(p *formats.Plan) bool {
	pp := ppipesec.PlanOf(p)
	for _, m := range pp.Models {
		if _, ok := ppipe.ServedRPS(p, m); !ok {
			return false
		}
	}
	return len(pp.Models) > 0 && len(ppipe.StatesCapacity(p)) == 0
}

// Stale lists the models of a plan written by the rule before plans stated what they serve
// (ppipe.StatesCapacity: throughput_rps is the pipelines' capacity, the prediction serves
// less). Such a plan still loads, simulates and serves, with this as a warning; plan check
// fails it (a check's failure, exit 1: the plan states more than it serves), with the
// served rate as the limit, until it is re-solved.
func (Checker) Stale(plan *formats.Plan) []planner.Check {
	var out []planner.Check
	for _, s := range ppipe.StatesCapacity(plan) {
		stated, served := s.StatedRPS, s.ServedRPS
		out = append(out, planner.Check{Line: s.String(), Name: "stated_throughput", Subject: s.Model, Value: &stated, Limit: &served})
	}
	return out
}

// capacityOf is what a model's pipelines carry (Σ pipeline throughput_rps).
func capacityOf(m *ppipesec.PPipeModelPlan) float64 {
	s := 0.0
	for _, p := range m.Pipelines {
		s += p.ThroughputRPS
	}
	return s
}

func within(name, subject, what string, got, ref float64, unit string, tol float64) planner.Check {
	line := fmt.Sprintf("%s %.2f %s vs %.2f %s (%+.2f%%, tolerance %.2f%%)", what, got, unit, ref, unit, pctDiff(got, ref), tol*100)
	return planner.AtLeast(name, subject, got, ref, tol, line)
}

func maxMin(pp *ppipesec.PPipePlan, rate func(*ppipesec.PPipeModelPlan) float64) float64 {
	z := math.Inf(1)
	for i := range pp.Models {
		m := &pp.Models[i]
		w := m.Weight
		if w <= 0 {
			w = 1
		}
		z = math.Min(z, rate(m)/w)
	}
	return z
}

func pctDiff(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * (a - b) / b
}

// Resolve implements planner.Checker: the same strategy and recorded options.
func (Checker) Resolve(ctx context.Context, plan *formats.Plan, timeLimit time.Duration) (*formats.Plan, error) {
	e := plan.Provenance.Embedded
	if e == nil || e.Cluster == nil || len(e.Profiles) == 0 {
		return nil, fmt.Errorf("provenance.embedded holds no inputs: cannot re-solve")
	}
	opts, err := resolveOptions(plan, timeLimit)
	if err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	in := ppipe.Inputs{Cluster: e.Cluster, Workload: e.Workload}
	for i := range e.Profiles {
		in.Profiles = append(in.Profiles, &e.Profiles[i])
	}
	return ppipe.Solve(ctx, in, opts)
}

// resolveOptions rebuilds the solve options recorded in a plan's provenance. What a plan
// does not record takes the plan section's values (strategy, P, α) or what plans made before
// the option existed did: warm start, no surplus filling.
func resolveOptions(plan *formats.Plan, timeLimit time.Duration) (ppipe.Options, error) {
	f := ppipe.Flags{Strategy: ppipesec.PlanOf(plan).Strategy, MaxPartitions: ppipesec.PlanOf(plan).MaxPartitions, Alpha: ppipesec.PlanOf(plan).SLOMargin, WarmStart: true}
	if err := planner.ReadOptions(plan.Provenance.Options, &f); err != nil {
		return ppipe.Options{}, err
	}
	if timeLimit > 0 {
		f.TimeLimit = formats.Duration(timeLimit)
	}
	o := f.Options()
	o.Deterministic = true
	return o, nil
}
