// Package pard provisions multi-module inference pipelines for PARD (EuroSys '26, §5.1): per
// module a GPU type, a batch size and a worker count such that the expected rate is sustained
// within the end-to-end SLO at the fewest GPUs. The model is a small MILP (one multiple-choice
// selection per module) solved through solver. The paper does not say how batches were
// chosen; our default latency rule is Σ_path 2·d_k(b_k) ≤ 0.8·SLO (each module may take one
// batch wait plus one execution, PARD §4.2 Eq. 2; the remaining 20% covers queueing). The
// plan names the dropping policy and its parameters; the runtime's pipeline policies
// (dppard.PipelinePolicies) run it.
package pard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	dppard "github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/formats/sections/pardsec"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/solver"
)

// ErrBadInput marks errors in the inputs (a cycle, a module without a profile, an SLO below
// the sum of batch-1 latencies, a cluster too small): the CLI exits 2 on them.
var ErrBadInput = errors.New("bad input")

// Defaults.
const (
	DefaultSLOFraction = 0.8
	DefaultMaxBatch    = 32
	DefaultPolicy      = "pard"
	// DefaultRateRPS is the rate provisioned for when the workload gives none.
	DefaultRateRPS = 100
)

// Options tune Provision.
type Options struct {
	// SLOFraction is f in Σ_path 2·d ≤ f·SLO (default 0.8).
	SLOFraction float64
	// RateRPS overrides every pipeline's rate (0 = the workload's rate_rps, else
	// DefaultRateRPS).
	RateRPS float64
	// MaxBatch bounds batch sizes (default 32).
	MaxBatch int
	// Policy and Params go into the plan (default "pard", no parameters).
	Policy string
	Params map[string]float64
	// TimeLimit bounds the solver (default 10 s).
	TimeLimit time.Duration
	// ToolVersion is recorded in the plan's provenance ("" = "dev").
	ToolVersion string
	// Objective is "" (the fewest GPUs on the cluster's counts) or planner.ObjectiveCost: the
	// least cost per hour, each GPU type bounded by its available count (cost.go).
	Objective string
	// Fill provisions every pipeline for the most rate the cluster serves at the workload's
	// mix of rates (fill.go), instead of for the workload's rates on the fewest GPUs.
	Fill bool
	// RateScale multiplies every pipeline's rate (0 = 1); Fill searches it.
	RateScale float64
}

// Flags are PARD's `plan solve` options as a plan records them in provenance.options (the
// solved values, defaults resolved), read back by `plan check --resolve`.
type Flags struct {
	// SLOFraction is f of the provisioning rule Σ_path 2·d(b) ≤ f·SLO (default 0.8).
	SLOFraction float64 `json:"slo_fraction" flag:"slo-fraction" help:"PARD provisioning rule: Σ 2·d(b) ≤ f·SLO along every path"`
	// RateRPS provisions every pipeline for this rate (default: the workload's rate_rps).
	RateRPS float64 `json:"rate_rps,omitempty" flag:"rate" help:"provision every pipeline for this rate in req/s (default: the workload's rate_rps)"`
	// MaxBatch is the largest batch a module may run (default 32).
	MaxBatch int `json:"max_batch" flag:"max-batch" help:"largest batch size a module may run"`
	// Policy is the dropping policy the plan names as its default (default pard).
	Policy string `json:"policy" flag:"runtime-policy" help:"the dropping policy the plan names as its default (plan simulate/serve --policy overrides it)"`
	// Objective is cost for a least-cost fleet, absent for the fewest GPUs.
	Objective string `json:"objective,omitempty"`
	// Fill provisions for the most rate the cluster serves (fill.go), absent
	// for the workload's rates.
	Fill bool `json:"fill,omitempty" flag:"fill" help:"provision every pipeline for the most rate the cluster serves at the workload's mix of rates (not the workload's rates on the fewest GPUs): what plan simulate/serve --autopilot re-solves on shrunken clusters"`
}

// DefaultFlags are `plan solve`'s defaults for PARD.
func DefaultFlags() Flags {
	return Flags{SLOFraction: DefaultSLOFraction, MaxBatch: DefaultMaxBatch, Policy: DefaultPolicy}
}

// Inputs are the decoded documents.
type Inputs struct {
	Workload *formats.Workload
	Profiles []formats.Profile
	Cluster  *formats.Cluster
	// Refs name the input files for the provenance (optional).
	Refs []formats.InputRef
}

// option is one candidate (GPU type, batch) for a module.
type option struct {
	gpu     string
	batch   int
	latUs   float64
	workers int
}

func bad(path string, value any, rule string, args ...any) error {
	fe := &formats.FieldError{Path: path, Value: fmt.Sprint(value), Rule: fmt.Sprintf(rule, args...)}
	return fmt.Errorf("%w: %w", ErrBadInput, formats.ErrorList{fe})
}

// Provision solves the provisioning MILP for every pipeline of the workload. Errors wrap
// ErrBadInput for inputs no provisioning can satisfy, planner.ErrNoSolution when the time
// limit passed before the solver found any provisioning (raise TimeLimit), and the solver's
// errors otherwise.
func Provision(ctx context.Context, in Inputs, o Options) (*formats.Plan, error) {
	if in.Workload == nil || len(pardsec.PipelinesOf(in.Workload)) == 0 {
		return nil, bad("pipelines", "", "the workload has no pipelines")
	}
	if in.Cluster == nil || len(in.Cluster.GPUs) == 0 {
		return nil, bad("cluster.gpus", "", "the cluster has no GPUs")
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.Fill {
		return provisionFill(ctx, in, o)
	}
	apps, usedModels, err := appInfos(in, o)
	if err != nil {
		return nil, err
	}
	m, vars := provisionModel(apps, o, in.Cluster)
	if o.Objective == planner.ObjectiveCost {
		if m, vars, err = costModel(apps, o, in.Cluster); err != nil {
			return nil, err
		}
	}
	res, err := solver.Solve(ctx, m, solver.Options{TimeLimit: o.TimeLimit, Deterministic: true})
	if err != nil {
		return nil, fmt.Errorf("pard provisioning: %w", err)
	}
	if !res.HasSolution {
		if o.Objective == planner.ObjectiveCost && res.Status == solver.StatusInfeasible {
			return nil, costInfeasible(ctx, apps, in.Cluster)
		}
		return nil, infeasible(apps, o, in.Cluster, res)
	}
	plan, err := assemble(in, o, apps, vars, res, usedModels)
	if err == nil && o.Objective == planner.ObjectiveCost {
		if err = fleet.Finish(plan, in.Cluster); err == nil {
			recordCostBound(plan, res.Bound, apps, in.Cluster)
		}
	}
	return plan, err
}

// withDefaults fills o's zero values with the defaults and checks the fraction and policy.
func (o Options) withDefaults() (Options, error) {
	if o.SLOFraction == 0 {
		o.SLOFraction = DefaultSLOFraction
	}
	if !(o.SLOFraction > 0 && o.SLOFraction <= 1) {
		return o, bad("slo_fraction", o.SLOFraction, "must be in (0, 1]")
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Policy == "" {
		o.Policy = DefaultPolicy
	}
	if o.TimeLimit == 0 {
		o.TimeLimit = 10 * time.Second
	}
	known := false
	for _, n := range dppard.PipelinePolicies() {
		known = known || n == o.Policy
	}
	if !known {
		return o, bad("policy", o.Policy, "must be one of %s", strings.Join(dppard.PipelinePolicies(), ", "))
	}
	return o, nil
}

// modInfo is one module's candidate options; appInfo one pipeline with its rate and its
// source-to-sink paths (module indexes).
type modInfo struct {
	opts []option
}

type appInfo struct {
	pl    *pardsec.Pipeline
	rate  float64
	mods  []modInfo
	paths [][]int
}

// appInfos enumerates every module's options (GPU type, batch, workers at the rate) and
// checks that each SLO covers the batch-1 latencies along every path; usedModels are the
// profiled models the workload runs.
func appInfos(in Inputs, o Options) (apps []appInfo, usedModels map[string]bool, err error) {
	find := func(model string) *formats.ModelProfile {
		for i := range in.Profiles {
			if m, ok := in.Profiles[i].Model(model); ok {
				return m
			}
		}
		return nil
	}
	usedModels = map[string]bool{}
	for pi := range pardsec.PipelinesOf(in.Workload) {
		pl := &pardsec.PipelinesOf(in.Workload)[pi]
		pp := fmt.Sprintf("pipelines[%d]", pi)
		if pl.SLO <= 0 {
			return nil, nil, bad(pp+".slo", pl.SLO, "must be > 0")
		}
		rate := pl.RateRPS
		if o.RateRPS > 0 {
			rate = o.RateRPS
		}
		if rate <= 0 {
			rate = DefaultRateRPS
		}
		if o.RateScale > 0 {
			rate *= o.RateScale
		}
		paths, err := sourceSinkPaths(pl, pp)
		if err != nil {
			return nil, nil, err
		}
		ai := appInfo{pl: pl, rate: rate, paths: paths}
		for mi, m := range pl.Modules {
			mp := fmt.Sprintf("%s.modules[%d]", pp, mi)
			prof := find(m.Model)
			if prof == nil {
				return nil, nil, bad(mp+".model", m.Model, "no profile has this model (module %s)", m.Name)
			}
			usedModels[m.Model] = true
			var opts []option
			for _, g := range in.Cluster.GPUs {
				for b := 1; b <= o.MaxBatch; b++ {
					e, ok := prof.Lookup(g.Type, 1, b)
					if !ok {
						continue
					}
					lat := e.WholeUs()
					if e.TotalUs > 0 {
						lat = e.TotalUs
					}
					if !(lat > 0) {
						continue
					}
					n := int(math.Ceil(rate * lat / 1e6 / float64(b)))
					opts = append(opts, option{gpu: g.Type, batch: b, latUs: lat, workers: max(n, 1)})
				}
			}
			if len(opts) == 0 {
				return nil, nil, bad(mp+".model", m.Model, "the profile has no whole-GPU latency of this model on the cluster's GPU types")
			}
			ai.mods = append(ai.mods, modInfo{opts: prune(opts)})
		}
		// The SLO must at least cover the batch-1 latencies along every path (fastest GPU).
		for _, p := range paths {
			var sum float64
			var names []string
			for _, k := range p {
				best := math.Inf(1)
				for _, op := range ai.mods[k].opts {
					if op.batch == 1 {
						best = math.Min(best, op.latUs)
					}
				}
				if math.IsInf(best, 1) {
					best = ai.mods[k].opts[0].latUs
				}
				sum += best
				names = append(names, pl.Modules[k].Name)
			}
			if sum > float64(time.Duration(pl.SLO)/time.Microsecond) {
				return nil, nil, bad(pp+".slo", pl.SLO, "below the sum of batch-1 latencies %.1f ms along %s", sum/1000, strings.Join(names, " -> "))
			}
		}
		apps = append(apps, ai)
	}

	return apps, usedModels, nil
}

// vref is the binary variable of one option of one module of one pipeline.
type vref struct {
	app, mod, opt int
	v             solver.Var
}

// provisionModel is the MILP: one option per module, the latency rule Σ2·d ≤ f·SLO per
// path, the GPUs per type; it minimises the GPUs (workers) provisioned.
func provisionModel(apps []appInfo, o Options, cluster *formats.Cluster) (*solver.Model, []vref) {
	obj := func(ai *appInfo, op *option) float64 {
		// At equal GPU counts prefer the option with the most spare throughput (the
		// smallest fractional need rate·d/b): the autoscaler's rounding then leaves
		// headroom, and batches grow toward what the latency rule allows.
		need := ai.rate * op.latUs / 1e6 / float64(op.batch)
		return float64(op.workers) + 1e-3*need/float64(op.workers)
	}
	return optionModel("pard-provision", apps, o, obj, "gpus_", func(t string) (float64, bool) {
		pool, _ := cluster.Pool(t)
		return float64(pool.Count), true
	})
}

// optionModel builds the MILP both of PARD's provisioning objectives solve (§4.1): a binary
// per (module, option) whose objective coefficient is obj, one option per module, the latency
// rule Σ2·d ≤ f·SLO along every path, and a row per GPU type (rowPrefix + type, in name
// order) bounding the workers on that type by bound, left out where bound gives none.
func optionModel(name string, apps []appInfo, o Options, obj func(ai *appInfo, op *option) float64, rowPrefix string, bound func(gpu string) (float64, bool)) (*solver.Model, []vref) {
	m := solver.NewModel(name, solver.Minimize)
	var vars []vref
	perType := map[string][]solver.Term{}
	for a, ai := range apps {
		lat := make([][]solver.Term, len(ai.mods))
		for k, mi := range ai.mods {
			var byMod []solver.Term
			for j := range mi.opts {
				op := &mi.opts[j]
				v := m.AddBinary(fmt.Sprintf("x_%s_%s_%s_b%d", ai.pl.Name, ai.pl.Modules[k].Name, op.gpu, op.batch), obj(&ai, op))
				vars = append(vars, vref{a, k, j, v})
				byMod = append(byMod, solver.Term{Var: v, Coef: 1})
				lat[k] = append(lat[k], solver.Term{Var: v, Coef: 2 * op.latUs})
				perType[op.gpu] = append(perType[op.gpu], solver.Term{Var: v, Coef: float64(op.workers)})
			}
			m.AddRow(fmt.Sprintf("one_%s_%s", ai.pl.Name, ai.pl.Modules[k].Name), 1, 1, byMod...)
		}
		budget := o.SLOFraction * float64(time.Duration(ai.pl.SLO)/time.Microsecond)
		for pi, p := range ai.paths {
			var terms []solver.Term
			for _, k := range p {
				terms = append(terms, lat[k]...)
			}
			m.AddRow(fmt.Sprintf("slo_%s_p%d", ai.pl.Name, pi), -solver.Inf, budget, terms...)
		}
	}
	var types []string
	for t := range perType {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		if ub, ok := bound(t); ok {
			m.AddRow(rowPrefix+t, -solver.Inf, ub, perType[t]...)
		}
	}
	return m, vars
}

// infeasible explains a MILP without a solution: a pipeline whose latency rule cannot hold
// at its fastest options, a rate that needs more GPUs than the cluster has, or (neither
// alone) the pipelines together; a time limit with no input at fault is ErrNoSolution.
func infeasible(apps []appInfo, o Options, cluster *formats.Cluster, res *solver.Result) error {
	total := 0
	for _, g := range cluster.GPUs {
		total += g.Count
	}
	var errs formats.ErrorList
	need := 0
	for a, ai := range apps {
		pp := fmt.Sprintf("pipelines[%d]", a)
		// The latency rule alone: the fastest option of every module along the worst path.
		var worst float64
		var worstPath []int
		for _, p := range ai.paths {
			var s float64
			for _, k := range p {
				best := math.Inf(1)
				for _, op := range ai.mods[k].opts {
					best = math.Min(best, 2*op.latUs)
				}
				s += best
			}
			if s > worst {
				worst, worstPath = s, p
			}
		}
		budget := o.SLOFraction * float64(time.Duration(ai.pl.SLO)/time.Microsecond)
		if worst > budget {
			names := make([]string, len(worstPath))
			for i, k := range worstPath {
				names[i] = ai.pl.Modules[k].Name
			}
			minSLO := time.Duration(math.Ceil(worst/o.SLOFraction/100)) * 100 * time.Microsecond
			errs = append(errs, &formats.FieldError{Path: pp + ".slo", Value: time.Duration(ai.pl.SLO).String(),
				Rule: fmt.Sprintf("the provisioning rule Σ2·d ≤ %.0f%% of the SLO (%.1f ms) cannot hold: the fastest options need Σ2·d = %.1f ms along %s; the smallest feasible SLO is %s",
					100*o.SLOFraction, budget/1000, worst/1000, strings.Join(names, " -> "), minSLO)})
			continue
		}
		// The rate alone: the fewest workers of every module, whatever its latency.
		n := 0
		for _, mi := range ai.mods {
			fewest := math.MaxInt
			for _, op := range mi.opts {
				fewest = min(fewest, op.workers)
			}
			n += fewest
		}
		need += n
		if n > total {
			errs = append(errs, &formats.FieldError{Path: pp + ".rate_rps", Value: fmt.Sprint(ai.rate),
				Rule: fmt.Sprintf("needs at least %d GPUs at this rate, the cluster has %d", n, total)})
		}
	}
	if len(errs) == 0 && res.Status == solver.StatusTimeLimit {
		// No input is wrong: the solver ran out of time before its first provisioning.
		return fmt.Errorf("%w (%s, the solver found no feasible provisioning yet): raise --time-limit", planner.ErrNoSolution, o.TimeLimit)
	}
	if len(errs) == 0 {
		errs = append(errs, &formats.FieldError{Path: "pipelines", Rule: fmt.Sprintf(
			"no provisioning meets every pipeline's latency rule (Σ2·d ≤ %.0f%% of the SLO) at its rate within the cluster's %d GPUs (together they need at least %d; solver: %s): lower rate_rps, relax slo or add GPUs",
			100*o.SLOFraction, total, need, res.Status)})
	}
	return fmt.Errorf("%w: %w", ErrBadInput, errs)
}

// assemble writes the plan document of a solved provisioning.
func assemble(in Inputs, o Options, apps []appInfo, vars []vref, res *solver.Result, usedModels map[string]bool) (*formats.Plan, error) {
	params := o.Params
	if params == nil {
		// The defaults (λ, window: PARD §4.2; the μ/ε windows, which the paper does not give,
		// are ours), written out so a plan documents what it runs.
		params = map[string]float64{"lambda": 0.1, "window_s": 5, "smooth_window_s": 5, "eps_window_s": 30, "mu_window_s": 2}
	}
	plan := &pardsec.PARDPlan{Policy: o.Policy, Params: params}
	for a, ai := range apps {
		pa := pardsec.PARDApp{Name: ai.pl.Name, SLO: ai.pl.SLO, RateRPS: ai.rate}
		for k, mod := range ai.pl.Modules {
			for _, vr := range vars {
				if vr.app == a && vr.mod == k && res.Value(vr.v) > 0.5 {
					op := ai.mods[k].opts[vr.opt]
					pa.Modules = append(pa.Modules, pardsec.ModulePlan{Name: mod.Name, Model: mod.Model, GPU: op.gpu,
						Batch: op.batch, Workers: op.workers, LatencyUs: op.latUs})
				}
			}
		}
		plan.Apps = append(plan.Apps, pa)
	}
	emb := formats.EmbeddedInputs{Cluster: in.Cluster, Workload: in.Workload}
	emb.Profiles = planner.EmbedProfiles(in.Profiles, func(m string) bool { return usedModels[m] })
	digest, err := planner.InputDigest(&emb)
	if err != nil {
		return nil, err
	}
	opts := planner.RecordOptions(Flags{SLOFraction: o.SLOFraction, RateRPS: o.RateRPS, MaxBatch: o.MaxBatch, Policy: o.Policy, Objective: o.Objective, Fill: o.Fill})
	tool := planner.ToolVersion(o.ToolVersion)
	name := cmp.Or(in.Workload.Metadata.Name, "pard")
	out := pardsec.SetPlan(&formats.Plan{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindPlan},
		Metadata: formats.Metadata{Name: name, Description: "PARD pipeline provisioning"},
		Provenance: formats.Provenance{Tool: "plan", ToolVersion: tool, Solver: "highs", SolverVersion: solver.Version(),
			InputDigest: digest, Inputs: in.Refs, Strategy: "pard", Options: opts, Status: res.Status.String(),
			Objective: math.Round(res.Objective), Bound: formats.Proven(math.Round(res.Bound)), Gap: formats.Proven(res.Gap),
			SolveMs: float64(res.Wall.Microseconds()) / 1000, Nodes: res.Nodes, Embedded: &emb},
		Cluster: in.Cluster,
	}, plan)
	return out, nil
}

// prune drops dominated options: an option is dropped when another of the same GPU type is
// no slower, needs no more workers and has no less spare throughput (it would never be
// chosen; fewer binaries).
func prune(opts []option) []option {
	sort.Slice(opts, func(i, j int) bool {
		if opts[i].gpu != opts[j].gpu {
			return opts[i].gpu < opts[j].gpu
		}
		return opts[i].batch < opts[j].batch
	})
	need := func(o option) float64 { return o.latUs / float64(o.batch) }
	var out []option
	for i, a := range opts {
		dominated := false
		for j, b := range opts {
			if i == j || a.gpu != b.gpu {
				continue
			}
			if b.latUs <= a.latUs && b.workers <= a.workers && need(b) <= need(a) &&
				(b.latUs < a.latUs || b.workers < a.workers || need(b) < need(a) || j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, a)
		}
	}
	return out
}

// sourceSinkPaths checks the module graph (known edges, no cycle, one entry and one sink)
// and returns every entry→sink path as module indices.
func sourceSinkPaths(pl *pardsec.Pipeline, pp string) ([][]int, error) {
	if len(pl.Modules) == 0 {
		return nil, bad(pp+".modules", "", "must list at least one module")
	}
	index := map[string]int{}
	for i, m := range pl.Modules {
		if _, dup := index[m.Name]; dup {
			return nil, bad(fmt.Sprintf("%s.modules[%d].name", pp, i), m.Name, "duplicate module name")
		}
		index[m.Name] = i
	}
	succ := make([][]int, len(pl.Modules))
	indeg := make([]int, len(pl.Modules))
	for i, m := range pl.Modules {
		for j, e := range m.After {
			u, ok := index[e.Module]
			if !ok {
				return nil, bad(fmt.Sprintf("%s.modules[%d].after[%d].module", pp, i, j), e.Module, "unknown module")
			}
			succ[u] = append(succ[u], i)
			indeg[i]++
		}
	}
	// Kahn: what is left is on a cycle.
	deg := append([]int(nil), indeg...)
	var q []int
	for i, d := range deg {
		if d == 0 {
			q = append(q, i)
		}
	}
	seen := 0
	for len(q) > 0 {
		u := q[0]
		q = q[1:]
		seen++
		for _, v := range succ[u] {
			deg[v]--
			if deg[v] == 0 {
				q = append(q, v)
			}
		}
	}
	if seen != len(pl.Modules) {
		var cyc []string
		for i, d := range deg {
			if d > 0 {
				cyc = append(cyc, pl.Modules[i].Name)
			}
		}
		return nil, bad(pp+".modules", strings.Join(cyc, ", "), "the modules form a cycle")
	}
	var entries, sinks []string
	for i, m := range pl.Modules {
		if indeg[i] == 0 {
			entries = append(entries, m.Name)
		}
		if len(succ[i]) == 0 {
			sinks = append(sinks, m.Name)
		}
	}
	if len(entries) != 1 {
		return nil, bad(pp+".modules", strings.Join(entries, ", "), "a pipeline needs exactly one entry module (no after), found %d", len(entries))
	}
	if len(sinks) != 1 {
		return nil, bad(pp+".modules", strings.Join(sinks, ", "), "a pipeline needs exactly one last module (branches must merge), found %d", len(sinks))
	}
	var paths [][]int
	var walk func(u int, acc []int)
	walk = func(u int, acc []int) {
		acc = append(acc, u)
		if len(succ[u]) == 0 {
			paths = append(paths, append([]int(nil), acc...))
			return
		}
		for _, v := range succ[u] {
			walk(v, acc)
		}
	}
	walk(index[entries[0]], nil)
	return paths, nil
}
