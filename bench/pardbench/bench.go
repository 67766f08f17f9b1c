package pardbench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/bench"
	dppard "github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	plpard "github.com/plan-dev/plan/planner/pard"

	rt "github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	demo "github.com/plan-dev/plan/internal/onformats/demo/pard"
	"github.com/plan-dev/plan/sim"
)

// BenchOptions configure RunBench (`plan bench pard`).
type BenchOptions struct {
	// Apps, Traces and Policies select subsets (default all).
	Apps, Traces, Policies []string
	// Seeds per workload (default 5), trace length in seconds (default 1200), mean rate.
	Seeds   int
	Seconds int
	RateRPS float64
	// ColdStart is the autoscaler's cold start in seconds (default 15).
	ColdStart float64
	// Headroom: the autoscaler provisions rate × headroom (default 1: n = ceil(rate·d/b)).
	Headroom float64
	// Samples is M for the batch-wait quantile (default 2000 in the bench; the runtime
	// default is 10000 — at λ = 0.1 the quantile's standard error is already < 1% of d).
	Samples int
	// StressFactors are the fixed-capacity load multipliers (default 0.5, 1, 1.5, 2, 3).
	StressFactors []float64
	// StressApps are run in the stress test (default lv).
	StressApps []string
	// StressPolicies are run in the stress test (default none, nexus, clipper++, pard and the
	// baselines' strongest readings, nexus-split and clipper++-local).
	StressPolicies []string
	// RPCMs is a per-request serving overhead (ms) on every edge between modules, on top of
	// the planned network hop: serialization and RPC of each request (the paper's gRPC
	// testbed; our simulator has none by default). BatchOverheadMs is added to every batch's
	// execution (batch formation and launch), in the profile the policies read as well.
	RPCMs, BatchOverheadMs float64
	// Parallel runs at once (default GOMAXPROCS).
	Parallel int
	// Progress, when set, is called after every finished run.
	Progress func(done, total int) `json:"-"`
}

// QuickBench is the --quick configuration: every app, trace and policy, one seed, 300 s.
func QuickBench() BenchOptions {
	return BenchOptions{Seeds: 1, Seconds: 300, StressFactors: []float64{0.5, 1, 2, 3}}
}

// BenchRow aggregates one (app, trace, policy) over seeds (means).
type BenchRow struct {
	App    string `json:"app"`
	Trace  string `json:"trace"`
	Policy string `json:"policy"`
	Seeds  int    `json:"seeds"`
	// Goodput over the whole run and over the seconds where naive misses the SLO for > 1%.
	Goodput      float64 `json:"goodput"`
	BurstGoodput float64 `json:"burst_goodput"`
	DropRate     float64 `json:"drop_rate"`
	InvalidRate  float64 `json:"invalid_rate"`
	LaterShare   float64 `json:"later_share"`
	// Shares[i] is the share of drops at module i (pipeline order).
	Shares []float64 `json:"shares"`
	// MinGoodput[i] is the minimum goodput over windows of WindowSizes[i] seconds.
	MinGoodput []float64 `json:"min_goodput"`
	MeanWaitMs float64   `json:"mean_wait_ms"`
	Requests   int64     `json:"requests"`
	// Decisions is the per-module decision trace, averaged over seeds (counts per seed).
	Decisions []ModuleTrace `json:"decisions"`
}

// StressRow is one fixed-capacity point.
type StressRow struct {
	App    string  `json:"app"`
	Factor float64 `json:"factor"`
	Policy string  `json:"policy"`
	// Goodput is on-time completions / capacity-limited ideal min(rate, capacity).
	OfIdeal  float64 `json:"of_ideal"`
	DropRate float64 `json:"drop_rate"`
	// Decisions is the run's per-module decision trace.
	Decisions []ModuleTrace `json:"decisions"`
}

// Comparison is PARD against one baseline on one workload.
type Comparison struct {
	App, Trace, Baseline string
	// GoodputGain is PARD's goodput / the baseline's − 1; DropRatio and InvalidRatio are the
	// baseline's rate / PARD's (∞ when PARD has none).
	GoodputGain, BurstGain, DropRatio, InvalidRatio float64
}

// Module is a provisioned module as the bench reports it.
type Module struct {
	App, Name      string
	Batch, Workers int
	LatencyMs      float64
	// SumTwoD is the longest entry→sink path's Σ 2·d (ms) and SLOFrac its share of the SLO.
	SumTwoD, SLOFrac float64
}

// BenchResult is the full benchmark output.
type BenchResult struct {
	Options     BenchOptions  `json:"options"`
	Modules     []Module      `json:"modules"`
	Rows        []BenchRow    `json:"rows"`
	Comparisons []Comparison  `json:"comparisons"`
	Stress      []StressRow   `json:"stress"`
	TraceCV     []TraceCVStat `json:"trace_cv"`
}

// TraceCVStat records a generated trace's calibration.
type TraceCVStat struct {
	Trace  string  `json:"trace"`
	Seed   uint64  `json:"seed"`
	CV     float64 `json:"cv"`
	Target float64 `json:"target"`
}

// Row returns the aggregated row for (app, trace, policy).
func (r *BenchResult) Row(app, trace, policy string) *BenchRow {
	for i := range r.Rows {
		x := &r.Rows[i]
		if x.App == app && x.Trace == trace && x.Policy == policy {
			return x
		}
	}
	return nil
}

func (o *BenchOptions) defaults() {
	if len(o.Apps) == 0 {
		for _, a := range demo.Apps {
			o.Apps = append(o.Apps, a.Name)
		}
	}
	if len(o.Traces) == 0 {
		for _, t := range PARDTraces {
			o.Traces = append(o.Traces, t.Name)
		}
	}
	if len(o.Policies) == 0 {
		// Every pipeline policy, plus PARD without our min-end purge and (for the DAG) with
		// sibling cancellation: both are our choices, so report them both ways.
		o.Policies = append(dppard.PipelinePolicies(), "pard:purge=0", "pard:sibling_cancel=1")
	}
	if o.Seeds == 0 {
		o.Seeds = 5
	}
	if o.Seconds == 0 {
		o.Seconds = 1200
	}
	if o.RateRPS == 0 {
		o.RateRPS = demo.DefaultRateRPS
	}
	if o.ColdStart == 0 {
		o.ColdStart = 15
	}
	if o.Headroom == 0 {
		o.Headroom = 1
	}
	if o.Samples == 0 {
		o.Samples = 2000
	}
	if o.StressFactors == nil {
		o.StressFactors = []float64{0.5, 1, 1.5, 2, 3}
	}
	if o.StressApps == nil {
		o.StressApps = []string{"lv"}
	}
	if o.StressPolicies == nil {
		o.StressPolicies = []string{"none", "nexus", "clipper++", "pard", "nexus-split", "clipper++-local"}
	}
	if o.Parallel <= 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
}

// ocThreshold is pard-oc's tuned T per trace (PARD §5.3, footnote 10).
func ocThreshold(trace string) string {
	if trace == "wiki" {
		return "20"
	}
	return "25"
}

// RunBench runs the PARD benchmark: provision each bundled app (MILP), then every trace ×
// policy × seed with autoscaling and cold starts, plus the fixed-capacity stress test.
func RunBench(ctx context.Context, o BenchOptions) (*BenchResult, error) {
	o.defaults()
	for _, p := range append(append([]string{}, o.Policies...), o.StressPolicies...) {
		name, params, err := splitPolicy(p)
		if err == nil {
			_, err = dppard.NewPipeline(name, rt.Config{Params: params})
		}
		if err != nil {
			return nil, fmt.Errorf("%w: --policies: %v", plpard.ErrBadInput, err)
		}
	}
	res := &BenchResult{Options: o}
	plans, err := benchPlans(ctx, o)
	if err != nil {
		return nil, err
	}
	res.moduleRows(o, plans)
	traces, err := res.benchTraces(o)
	if err != nil {
		return nil, err
	}
	jobs := benchJobs(o)
	results, err := runJobs(ctx, o, jobs, plans, traces)
	if err != nil {
		return nil, err
	}
	res.aggregate(o, jobs, results)
	res.stress(jobs, results)
	return res, nil
}

// benchJob is one simulation of the bench: an app under a policy on a trace and seed, or
// (factor > 0) the fixed-capacity stress test at factor × capacity.
type benchJob struct {
	app, trace, policy string
	seed               int
	factor             float64 // > 0: stress
}

// traceKey names one seed of a trace.
func traceKey(tr string, seed int) string { return tr + "/" + strconv.Itoa(seed) }

// benchPlans provisions every application the bench runs (PARD's planner on the demo
// profiles).
func benchPlans(ctx context.Context, o BenchOptions) (map[string]*formats.Plan, error) {
	plans := map[string]*formats.Plan{}
	for _, name := range append(append([]string{}, o.Apps...), o.StressApps...) {
		if _, done := plans[name]; done {
			continue
		}
		app, ok := demo.AppByName(name)
		if !ok {
			return nil, fmt.Errorf("%w: unknown app %q (tm, lv, ga, da)", plpard.ErrBadInput, name)
		}
		wl := demo.Workload(o.RateRPS)
		pardsec.SetPipelines(wl, []pardsec.Pipeline{demo.Pipeline(app, o.RateRPS)})
		pl, err := plpard.Provision(ctx, plpard.Inputs{Workload: wl, Profiles: []formats.Profile{*demo.Profile()}, Cluster: demo.Cluster()}, plpard.Options{})
		if err != nil {
			return nil, fmt.Errorf("provisioning %s: %w", name, err)
		}
		plans[name] = pl
	}
	return plans, nil
}

// moduleRows lists every module of the bench's applications (batch, workers, latency).
func (res *BenchResult) moduleRows(o BenchOptions, plans map[string]*formats.Plan) {
	for _, name := range o.Apps {
		pa := pardsec.PlanOf(plans[name]).Apps[0]
		app, _ := demo.AppByName(name)
		sum := longestTwoD(app, pa.Modules)
		for _, m := range pa.Modules {
			res.Modules = append(res.Modules, Module{App: name, Name: m.Name, Batch: m.Batch, Workers: m.Workers,
				LatencyMs: m.LatencyUs / 1000, SumTwoD: sum / 1000, SLOFrac: sum / float64(time.Duration(pa.SLO).Microseconds())})
		}
	}
}

// benchTraces generates every trace × seed and records its coefficient of variation.
func (res *BenchResult) benchTraces(o BenchOptions) (map[string]RateSeries, error) {
	traces := map[string]RateSeries{}
	for _, tr := range o.Traces {
		target := 0.0
		for _, t := range PARDTraces {
			if t.Name == tr {
				target = t.CV
			}
		}
		for s := 1; s <= o.Seeds; s++ {
			r, err := PARDTrace(tr, o.Seconds, o.RateRPS, uint64(s))
			if err != nil {
				return nil, fmt.Errorf("%w: %v", plpard.ErrBadInput, err)
			}
			traces[traceKey(tr, s)] = r
			res.TraceCV = append(res.TraceCV, TraceCVStat{Trace: tr, Seed: uint64(s), CV: math.Round(r.CV()*1000) / 1000, Target: target})
		}
	}
	return traces, nil
}

// benchJobs lists the simulations: every app × trace × seed × policy (the naive baseline
// always, its needs-dropping windows weigh the burst goodput) and the stress test.
func benchJobs(o BenchOptions) []benchJob {
	var jobs []benchJob
	pols := append([]string{}, o.Policies...)
	hasNone := false
	for _, p := range pols {
		hasNone = hasNone || p == "none"
	}
	if !hasNone {
		pols = append([]string{"none"}, pols...) // the needs-dropping windows come from naive
	}
	for _, a := range o.Apps {
		for _, tr := range o.Traces {
			for s := 1; s <= o.Seeds; s++ {
				for _, p := range pols {
					jobs = append(jobs, benchJob{a, tr, p, s, 0})
				}
			}
		}
	}
	stressPols := o.StressPolicies
	for _, a := range o.StressApps {
		for _, f := range o.StressFactors {
			for _, p := range stressPols {
				jobs = append(jobs, benchJob{a, "stress", p, 1, f})
			}
		}
	}
	return jobs
}

// runJobs runs the simulations in parallel.
func runJobs(ctx context.Context, o BenchOptions, jobs []benchJob, plans map[string]*formats.Plan, traces map[string]RateSeries) ([]*PipelineMetrics, error) {
	results := make([]*PipelineMetrics, len(jobs))
	errs, err := sim.Parallel(ctx, len(jobs), o.Parallel, func(i int) error {
		j := jobs[i]
		name, extra, _ := splitPolicy(j.policy)
		params := map[string]string{"samples": strconv.Itoa(o.Samples), "seed": strconv.Itoa(j.seed)}
		var rates RateSeries
		if j.factor > 0 {
			rates = nil
		} else {
			params["autoscale"] = "1"
			params["cold_start_s"] = strconv.FormatFloat(o.ColdStart, 'g', -1, 64)
			params["headroom"] = strconv.FormatFloat(o.Headroom, 'g', -1, 64)
			rates = traces[traceKey(j.trace, j.seed)]
		}
		if name == "pard-oc" {
			params["oc_t_ms"] = ocThreshold(j.trace)
		}
		for k, v := range extra {
			params[k] = v
		}
		dep, err := dppard.FromPARDPlan(plans[j.app])
		if err == nil {
			AddOverheads(dep, o.RPCMs, o.BatchOverheadMs)
		}
		if err == nil && j.factor > 0 {
			// Stress: the planned workers only, a constant rate of factor × capacity.
			FixCapacity(dep)
			rates = StressRates(PipelineCapacity(dep), j.factor, min(o.Seconds, 120))
		}
		if err == nil {
			results[i], err = RunPipeline(PipelineRun{Policies: dppard.Registry(), Dep: dep, Rates: rates, Seed: uint64(j.seed),
				Policy: rt.Config{Policy: name, Params: params}})
		}
		return err
	}, bench.Finished(o.Progress, len(jobs)))
	if err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			j := jobs[i]
			return nil, fmt.Errorf("%s/%s/%s seed %d: %w", j.app, j.trace, j.policy, j.seed, err)
		}
	}
	return results, nil
}

// aggregate averages each app × trace × policy over its seeds and compares PARD with the
// baselines.
func (res *BenchResult) aggregate(o BenchOptions, jobs []benchJob, results []*PipelineMetrics) {
	// Aggregate.
	naive := map[string]*PipelineMetrics{}
	for i, j := range jobs {
		if j.factor == 0 && j.policy == "none" {
			naive[j.app+"/"+traceKey(j.trace, j.seed)] = results[i]
		}
	}
	for _, a := range o.Apps {
		for _, tr := range o.Traces {
			for _, p := range o.Policies {
				row := BenchRow{App: a, Trace: tr, Policy: p}
				for i, j := range jobs {
					if j.factor != 0 || j.app != a || j.trace != tr || j.policy != p {
						continue
					}
					m := results[i]
					row.Seeds++
					row.Requests += m.Requests
					row.Goodput += m.Goodput
					row.BurstGoodput += m.GoodputOver(naive[a+"/"+traceKey(tr, j.seed)].NeedsDropping())
					row.DropRate += m.DropRate
					row.InvalidRate += m.InvalidRate
					row.LaterShare += m.LaterShare
					row.MeanWaitMs += m.MeanWaitMs
					if row.Shares == nil {
						row.Shares = make([]float64, len(m.Shares))
						row.MinGoodput = make([]float64, len(m.Windows))
					}
					for k, s := range m.Shares {
						row.Shares[k] += s.Share
					}
					for k, w := range m.Windows {
						row.MinGoodput[k] += w.MinGoodput
					}
					row.addTrace(m.Decisions)
				}
				n := float64(max(row.Seeds, 1))
				r6 := func(x float64) float64 { return math.Round(x/n*1e6) / 1e6 }
				row.Goodput, row.BurstGoodput, row.DropRate = r6(row.Goodput), r6(row.BurstGoodput), r6(row.DropRate)
				row.InvalidRate, row.LaterShare, row.MeanWaitMs = r6(row.InvalidRate), r6(row.LaterShare), r6(row.MeanWaitMs)
				for k := range row.Shares {
					row.Shares[k] = r6(row.Shares[k])
				}
				for k := range row.MinGoodput {
					row.MinGoodput[k] = r6(row.MinGoodput[k])
				}
				for k := range row.Decisions {
					mt := &row.Decisions[k]
					mt.Ran, mt.Dropped, mt.Late, mt.BudgetIn = r6(mt.Ran), r6(mt.Dropped), r6(mt.Late), r6(mt.BudgetIn)
					mt.BudgetAtDrop, mt.WaitMs, mt.WastedGPUs = r6(mt.BudgetAtDrop), r6(mt.WaitMs), r6(mt.WastedGPUs)
				}
				res.Rows = append(res.Rows, row)
			}
			pard := res.Row(a, tr, "pard")
			for _, b := range baselines(o.Policies) {
				base := res.Row(a, tr, b)
				if pard == nil || base == nil {
					continue
				}
				res.Comparisons = append(res.Comparisons, Comparison{App: a, Trace: tr, Baseline: b,
					GoodputGain: ratio(pard.Goodput, base.Goodput) - 1, BurstGain: ratio(pard.BurstGoodput, base.BurstGoodput) - 1,
					DropRatio: ratio(base.DropRate, pard.DropRate), InvalidRatio: ratio(base.InvalidRate, pard.InvalidRate)})
			}
		}
	}
}

// stress reports the stress test's goodput against the ideal.
func (res *BenchResult) stress(jobs []benchJob, results []*PipelineMetrics) {
	for i, j := range jobs {
		if j.factor == 0 {
			continue
		}
		m := results[i]
		ideal := math.Min(1, 1/j.factor) // min(rate, capacity)/rate
		res.Stress = append(res.Stress, StressRow{App: j.app, Factor: j.factor, Policy: j.policy,
			OfIdeal: math.Round(m.Goodput/ideal*1e4) / 1e4, DropRate: m.DropRate, Decisions: m.Decisions})
	}
	sort.SliceStable(res.Stress, func(x, y int) bool {
		if res.Stress[x].App != res.Stress[y].App {
			return res.Stress[x].App < res.Stress[y].App
		}
		return res.Stress[x].Factor < res.Stress[y].Factor
	})
}

// baselines lists the reactive baselines among the bench's policies: nexus and clipper++ (the
// readings the paper ran) first, then their other readings (nexus-split, clipper++-local, ...).
func baselines(pols []string) []string {
	out := []string{"nexus", "clipper++"}
	for _, p := range pols {
		if p != "nexus" && p != "clipper++" && (strings.HasPrefix(p, "nexus") || strings.HasPrefix(p, "clipper++")) {
			out = append(out, p)
		}
	}
	return out
}

// Infinite stands for a ratio against zero (PARD had no drops or no waste).
const Infinite = 1e9

// splitPolicy parses a bench policy "name[:key=value...]" (a pipeline policy with
// parameters, e.g. pard:purge=0 or pard:lambda=0.2:window_s=3; ":" because --policies
// splits on commas).
func splitPolicy(s string) (string, map[string]string, error) {
	parts := strings.Split(s, ":")
	params := map[string]string{}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", nil, fmt.Errorf("policy %q: %q must be key=value", s, kv)
		}
		params[k] = v
	}
	return parts[0], params, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return Infinite // JSON has no ∞
	}
	return math.Round(a/b*1e4) / 1e4
}

// longestTwoD is the largest Σ 2·d over the app's entry→sink paths, in µs: the quantity PARD's
// provisioning bounds by f·SLO on every path (PARD §4, the 2·d rule per module). Summing every
// module instead counts both branches of a fork (da's face ∥ pose) and reported da at 105% of
// its SLO where its longest path takes 80%.
func longestTwoD(app demo.App, mods []pardsec.ModulePlan) float64 {
	lat := map[string]float64{}
	for _, m := range mods {
		lat[m.Name] = m.LatencyUs
	}
	after := map[string][]string{}
	for _, m := range app.Modules {
		after[m.Name] = m.After
	}
	// done[m] is the longest Σ 2·d of a path from an entry module through m (the module graph
	// is a DAG: the planner rejected cycles before provisioning it).
	done := map[string]float64{}
	var upTo func(string) float64
	upTo = func(n string) float64 {
		if v, ok := done[n]; ok {
			return v
		}
		var best float64
		for _, u := range after[n] {
			best = max(best, upTo(u))
		}
		done[n] = best + 2*lat[n]
		return done[n]
	}
	var out float64
	for _, m := range app.Modules {
		out = max(out, upTo(m.Name))
	}
	return out
}
