package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	rt "github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats/llmspec"
)

// SweepConfig describes a load sweep.
type SweepConfig struct {
	Dep *rt.Deployment
	// Policies is the registry the policy comes from; Policy picks it (a fresh instance per
	// load point; Policy.Policy must name one that serves Dep).
	Policies *rt.Registry
	Policy   rt.Config
	Arrival  ArrivalSpec
	// BaseRPS overrides the per-app rate at load 1.0 (default: each app's planned RateRPS).
	BaseRPS  []float64
	Loads    []float64
	Duration rt.Time
	Seed     uint64
	Jitter   float64
	// Ctx, when set, stops every point's run once cancelled (Options.Ctx); Sweep sets it
	// from its own context when nil.
	Ctx context.Context
	// Parallel bounds concurrent load points (≤ 0: GOMAXPROCS).
	Parallel int
	// Progress, when set, is called after each finished point (from the calling goroutine's
	// perspective it may run concurrently; it must be safe for that).
	Progress func(done, total int, p *Point)
	// Labels for the report.
	PlanName, Strategy string
	// Failures are injected at every load point (Options.Failures).
	Failures []Failure
	// CancelFraction is the seeded share of requests their clients withdraw at every load
	// point (Options.CancelFraction).
	CancelFraction float64
	// Warmup excludes the requests arriving in the first Warmup of every load point from its
	// metrics (Options.Warmup; 0 = count every request).
	Warmup rt.Time
	// FindLimit extends the sweep past Loads while the highest load still holds the target
	// attainment (MaxLoadTarget): loads double from the highest given one up to LimitCap,
	// then the gap between the last passing and the first failing load is bisected
	// (limitBisections times), so a plan with headroom reports where it really stops.
	FindLimit bool
	// LimitCap bounds FindLimit's loads (≤ 0: DefaultLimitCap).
	LimitCap float64
	// LLM gives each application's LLM class (Options.LLM; nil: not an LLM plan).
	LLM []LLMClass
	// Replay, when set, replaces Arrival: the trace replayed exactly, each request once at
	// its time divided by the load factor (ExactReplay). BaseRPS should then be its
	// NativeRPS.
	Replay *ExactReplay
	// RecordRequests keeps every request's record in its Point (Point.Requests).
	RecordRequests bool
	// settle, when set (a prediction's sweeps), stops the run of every load but 1, whose
	// metrics the prediction reports, once it is certain to fail this judge (settle.go).
	settle *judge
	// probe, when set (a capacity probe, PoissonProbe), stops the run of every load once
	// any application is certain to fail this judge (settle.go).
	probe *judge
	// search, when set (a prediction's search under a deadline, searchstop.go), admits each
	// load the limit search adds.
	search *searchGuard
}

// traceName labels the arrivals in the report.
func (cfg *SweepConfig) traceName() string {
	if cfg.Replay != nil {
		return cfg.Replay.Name + " (exact replay)"
	}
	return cfg.Arrival.Name
}

// record is r's line of --requests-out.
func (cfg *SweepConfig) record(load float64, r *rt.Request) RequestRecord {
	rec := RequestRecord{Load: load, ID: int64(r.ID), Class: cfg.Dep.Apps[r.App].Name, ArrivalUs: int64(r.Arrival), DoneUs: int64(r.Done),
		Outcome: r.Outcome.String(), Reason: string(r.Reason()), InputTokens: r.Attrs.InTokens, OutputTokens: r.Attrs.OutTokens}
	if r.FirstToken != rt.Never {
		ft := int64(r.FirstToken)
		rec.FirstTokenUs = &ft
	}
	if cfg.Replay != nil && r.Attrs.Trace > 0 {
		if row := cfg.Replay.Row(r.App, r.Attrs.Trace-1); row >= 0 {
			rec.TraceRow = &row
		}
	}
	return rec
}

// MaxLoadTarget is the attainment a load must hold to count toward the report's max load
// factor (Report.MaxLoad99): every application at ≥ 99%, as the PPipe and PARD papers score.
const MaxLoadTarget = 0.99

// DefaultLimitCap is the highest load factor FindLimit tries by default: 8× the plan's rate.
const DefaultLimitCap = 8.0

// limitBisections is how many loads FindLimit adds between the last passing and the first
// failing doubling step (3: the limit to within 1/8 of that gap).
const limitBisections = 3

// RunPoint simulates one load factor.
func RunPoint(cfg *SweepConfig, load float64) (*Point, error) {
	s, err := newPointSimCompact(cfg, load, true)
	if err != nil {
		return nil, err
	}
	if j, first := cfg.settleJudge(load); j != nil {
		n, err := settleCounts(cfg, load)
		if err != nil {
			return nil, err
		}
		s.opts.settle = newSettleWatch(*j, n, first)
	}
	var recs []RequestRecord
	if cfg.RecordRequests {
		s.opts.OnFinish = func(_ rt.Time, r *rt.Request) {
			rec := cfg.record(load, r)
			if rr, ok := s.Engine.Policy().(llm.RequestReporter); ok {
				c, p := rr.RequestLLM(r.ID)
				rec.CachedTokens, rec.Preemptions = int32(c), int32(p)
			}
			recs = append(recs, rec)
		}
	}
	m, err := s.Run()
	if err != nil {
		return nil, err
	}
	var total float64
	for a := range m.Apps {
		rate := cfg.Dep.Apps[a].RateRPS
		if a < len(cfg.BaseRPS) {
			rate = cfg.BaseRPS[a]
		}
		m.Apps[a].OfferedRPS = round6(rate * load)
		total += rate * load
	}
	m.Total.OfferedRPS = round6(total)
	if recs != nil {
		sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	}
	return &Point{Load: load, Metrics: *m, Requests: recs, Stopped: s.stopped}, nil
}

// Sweep runs every load point, in parallel, and assembles the report in load order.
func Sweep(ctx context.Context, cfg *SweepConfig) (*Report, error) {
	if len(cfg.Loads) == 0 {
		return nil, fmt.Errorf("empty load range")
	}
	if cfg.Ctx == nil {
		c := *cfg
		c.Ctx = ctx
		cfg = &c
	}
	points, err := runPoints(ctx, cfg, cfg.Loads, 0)
	if err != nil {
		return nil, err
	}
	rep := &Report{
		APIVersion: "plan/v1", Kind: ReportKind, Plan: cfg.PlanName, Strategy: cfg.Strategy,
		Policy: cfg.Policy.Policy, Params: cfg.Policy.Params, Trace: cfg.traceName(),
		Seed: cfg.Seed, DurationUs: int64(cfg.Duration), Jitter: cfg.Jitter, WarmupUs: int64(cfg.Warmup),
	}
	if cfg.Dep.Judge != nil {
		rep.AccuracyOn = cfg.Dep.JudgeOn
		rep.AccuracyTarget = cfg.Dep.AccuracyTarget
	}
	if cfg.FindLimit {
		if points, err = findLimit(ctx, cfg, points); err != nil {
			return nil, err
		}
		rep.Extended = len(points) > len(cfg.Loads)
		rep.LimitCap = limitCap(cfg)
	}
	for a := range cfg.Dep.Apps {
		rate := cfg.Dep.Apps[a].RateRPS
		if a < len(cfg.BaseRPS) {
			rate = cfg.BaseRPS[a]
		}
		rep.BaseRPS = append(rep.BaseRPS, AppRate{App: cfg.Dep.Apps[a].Name, RPS: round6(rate)})
	}
	for _, p := range points {
		rep.Points = append(rep.Points, *p)
	}
	sort.SliceStable(rep.Points, func(i, j int) bool { return rep.Points[i].Load < rep.Points[j].Load })
	rep.MaxLoad99 = MaxLoadAt(rep.Points, MaxLoadTarget)
	return rep, nil
}

// runPoints simulates loads in parallel; the result is in the order of loads. done counts
// the points simulated before (Progress counts on from it).
func runPoints(ctx context.Context, cfg *SweepConfig, loads []float64, done int) ([]*Point, error) {
	points := make([]*Point, len(loads))
	errs, err := Parallel(ctx, len(loads), cfg.Parallel, func(i int) error {
		var err error
		points[i], err = RunPoint(cfg, loads[i])
		return err
	}, func(i, finished int, err error) {
		if cfg.Progress != nil && err == nil {
			cfg.Progress(done+finished, done+len(loads), points[i])
		}
	})
	if err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("load %g: %w", loads[i], err)
		}
	}
	return points, nil
}

func limitCap(cfg *SweepConfig) float64 {
	if cfg.LimitCap > 0 {
		return cfg.LimitCap
	}
	return DefaultLimitCap
}

// findLimit extends points (at cfg.Loads) while the highest load passes MaxLoadTarget:
// doubling up to the cap, then bisecting between the last pass and the first failure.
// Every added load is a deterministic function of the results so far, so the report stays
// reproducible. Under a deadline (cfg.search) it returns the points so far with
// errSearchStopped where the next load does not fit before it.
func findLimit(ctx context.Context, cfg *SweepConfig, points []*Point) ([]*Point, error) {
	pass := func(p *Point) bool { return MaxLoadAt([]Point{*p}, MaxLoadTarget) > 0 } // false when p.Stopped
	if cfg.settle != nil {
		// A prediction's search: a load passes by the verdict rule's test of one run (each
		// application at its own target, an LLM class each SLO at its percentile).
		pass = cfg.settle.all
	}
	hi := points[0]
	for _, p := range points {
		if p.Load > hi.Load {
			hi = p
		}
	}
	capLoad := limitCap(cfg)
	lo := hi // highest passing load so far
	var fail *Point
	// probe runs one more load and moves lo (it passes) or fail (it does not) to it.
	probe := func(load float64) error {
		if err := cfg.search.admit(1, load); err != nil {
			return err
		}
		ps, err := runPoints(ctx, cfg, []float64{load}, len(points))
		if err != nil {
			return cfg.search.check(err)
		}
		points = append(points, ps[0])
		if pass(ps[0]) {
			lo = ps[0]
		} else {
			fail = ps[0]
		}
		return nil
	}
	for pass(lo) && fail == nil && lo.Load < capLoad {
		if err := probe(round6(min(lo.Load*2, capLoad))); err != nil {
			return stoppedAt(points, err)
		}
	}
	if !pass(lo) || fail == nil {
		return points, nil
	}
	for i := 0; i < limitBisections; i++ {
		mid := round6((lo.Load + fail.Load) / 2)
		if mid <= lo.Load || mid >= fail.Load {
			break
		}
		if err := probe(mid); err != nil {
			return stoppedAt(points, err)
		}
	}
	return points, nil
}

// stoppedAt is a search's return where a step failed with err: the points so far with
// errSearchStopped where the deadline stopped it, else no points and err.
func stoppedAt(points []*Point, err error) ([]*Point, error) {
	if errors.Is(err, errSearchStopped) {
		return points, err
	}
	return nil, err
}

// ParseLoadRange parses "lo:hi:step" (inclusive), a single value "0.5", or a list
// "0.5,0.9". Values must be positive and finite; the result is sorted ascending without
// duplicates. Steps are counted in integers so 0.05:1.0:0.05 has exactly 20 points.
func ParseLoadRange(s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("load range is empty")
	}
	num := func(x string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("load range %q: %q is not a number", s, x)
		}
		return v, nil
	}
	var out []float64
	if strings.Contains(s, ":") {
		parts := strings.Split(s, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("load range %q: must be LO:HI:STEP", s)
		}
		lo, err := num(parts[0])
		if err != nil {
			return nil, err
		}
		hi, err := num(parts[1])
		if err != nil {
			return nil, err
		}
		step, err := num(parts[2])
		if err != nil {
			return nil, err
		}
		if step <= 0 {
			return nil, fmt.Errorf("load range %q: step must be > 0", s)
		}
		if hi < lo {
			return nil, fmt.Errorf("load range %q is empty: %g > %g", s, lo, hi)
		}
		n := int(math.Floor((hi-lo)/step+absTol)) + 1
		if n > 10000 {
			return nil, fmt.Errorf("load range %q: %d points (at most 10000)", s, n)
		}
		for i := 0; i < n; i++ {
			v := lo + float64(i)*step
			if r := math.Round(v*1e9) / 1e9; !math.IsInf(r, 0) && !math.IsNaN(r) {
				v = r // 0.05·3 prints as 0.15, not 0.15000000000000002
			}
			out = append(out, v)
		}
	} else {
		for _, x := range strings.Split(s, ",") {
			v, err := num(x)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	sort.Float64s(out)
	uniq := out[:0]
	for i, v := range out {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("load range %q: load %g must be a positive finite number", s, v)
		}
		if i == 0 || v != out[i-1] {
			uniq = append(uniq, v)
		}
	}
	if len(uniq) == 0 {
		return nil, fmt.Errorf("load range %q is empty", s)
	}
	return uniq, nil
}

// PoissonPoint simulates dep under policy pol (of policies) at its apps' planned rates for
// dur of seeded Poisson arrivals, the requests arriving before warmup not counted (< 0: the
// default warm-up), with LLM classes classes (nil for other systems): one `plan simulate
// --load 1` point. Planners that size by simulation are handed this function by the registry
// (planner and sim never import each other, DESIGN.md).
func PoissonPoint(dep *rt.Deployment, policies *rt.Registry, pol string, classes []llmspec.LLMClass, dur, warmup rt.Time, seed uint64) (*Point, error) {
	cfg, err := poissonConfig(dep, policies, pol, classes, dur, warmup, seed)
	if err != nil {
		return nil, err
	}
	return RunPoint(cfg, 1)
}

// poissonConfig is the sweep of PoissonPoint's one point (PoissonProbe's too).
func poissonConfig(dep *rt.Deployment, policies *rt.Registry, pol string, classes []llmspec.LLMClass, dur, warmup rt.Time, seed uint64) (*SweepConfig, error) {
	spec, err := ParseArrival("poisson")
	if err != nil {
		return nil, err
	}
	if warmup < 0 {
		warmup = DefaultWarmup(dep, dur)
	}
	cfg := &SweepConfig{Dep: dep, Policies: policies, Policy: rt.Config{Policy: pol}, Arrival: spec,
		Loads: []float64{1}, Duration: dur, Seed: seed, Warmup: warmup}
	if classes != nil {
		cfg.LLM = LLMClassesOf(dep, classes)
	}
	return cfg, nil
}
