package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// The prediction a plan carries (formats.Prediction): the plan simulated at its own rates
// (load factor 1: the workload's rates, or the throughput a plan states), under its own
// runtime policy, recording per application the attainment with its sampling error, drops,
// latency percentiles and the load factor the plan holds its targets up to. `plan solve`
// writes it and `plan check` re-runs it from the plan's own inputs.

const (
	// predictHeadroomCap is the highest load factor the headroom search tries.
	predictHeadroomCap = 2.0
)

// predictBelow are the load factors tried when a plan misses at load 1, to say what it does
// sustain (its headroom below 1).
var predictBelow = []float64{PredictLowestLoad, 0.5, 0.7, 0.8, 0.9, 0.95}

// PredictLowestLoad is the lowest load factor a prediction tries: a plan with headroom 0
// misses there too.
const PredictLowestLoad = 0.25

// PredictInput is what a prediction simulates: the plan, its deployment and default policy
// (its system's deployer), the registry the policy is built from, the arrivals' seed and
// the span's multiple (1: predictSpan; 10 for a long-run comparison).
type PredictInput struct {
	Plan      *formats.Plan
	Dep       *dataplane.Deployment
	Policies  *dataplane.Registry
	Policy    string
	Seed      int64
	SpanScale float64
	// RatesOnly runs load 1 and its replications only: attainment, margin and percentiles,
	// with Headroom and every SustainedRPS left 0 (an independent check of a prediction's
	// verdict needs no headroom search, which is most of a prediction's runs).
	RatesOnly bool
	// Arrivals is the arrival process simulated, a generator's spelling (PredictArrivals):
	// "" or "poisson", "bursty:CV" (Gamma renewal) or "mmpp". Planners size for mean rates;
	// traffic burstier than Poisson queues more at the same mean, and a plan that holds its
	// SLO on Poisson arrivals may not hold it there.
	Arrivals string
	// Deadline, when set, ends the runs at the plan's rates (load 1 and its replications)
	// that StartPrediction makes: one still going then is cancelled and StartPrediction
	// returns ErrPredictionDeadline, so a command's --time-limit bounds its prediction too.
	// The headroom search has its own (Prediction.CompleteBy).
	Deadline time.Time
}

// ErrPredictionDeadline is StartPrediction's error when PredictInput.Deadline ended the
// runs at the plan's rates before they finished: without them there is no verdict.
var ErrPredictionDeadline = errors.New("the time limit ended the plan's prediction at its rates before it finished")

// ErrHeadroomDeadline is a planner's refusal of a plan whose prediction misses its target at
// the rates it states while the headroom search, stopped by the time limit, established no
// load it holds: what the plan serves is unknown, so nothing true can be stated for it.
var ErrHeadroomDeadline = errors.New("the time limit stopped the prediction's search for the load the plan holds before it established any")

// PredictArrivals parses a prediction's arrival process (PredictInput.Arrivals: "" is
// Poisson) and returns it with its canonical spelling, the one a prediction records
// ("bursty" is "bursty:3"). Trace files are not arrival processes a plan's own rates can be
// scaled to, and are refused.
func PredictArrivals(s string) (ArrivalSpec, string, error) {
	if s == "" {
		s = "poisson"
	}
	spec, err := workload.ParseArrival(s)
	if err != nil {
		_, why, _ := strings.Cut(err.Error(), ": ")
		return ArrivalSpec{}, "", fmt.Errorf("%q: %s", s, strings.Replace(why, ", mmpp or a trace file", " or mmpp", 1))
	}
	switch spec.Kind {
	case "bursty":
		return spec, "bursty:" + strconv.FormatFloat(spec.CV, 'g', -1, 64), nil
	default:
		return spec, spec.Kind, nil
	}
}

// Predict simulates the plan at its own rates and returns its prediction.
func Predict(ctx context.Context, in PredictInput) (*formats.Prediction, error) {
	p, err := StartPrediction(ctx, in)
	if err != nil {
		return nil, err
	}
	if in.RatesOnly {
		return p.Rates(), nil
	}
	return p.Complete(ctx)
}

// Prediction is a prediction under way: the plan's run at load 1 and its replications are
// done, which is all its verdict at its rates needs (Rates); Complete adds the headroom
// search. A caller that may discard the plan on that verdict (the solve's rate lever, which
// solves again at a margin when a plan misses) completes only the prediction it keeps: the
// search is most of a prediction's runs, and a plan that misses at its rates needs the most
// of them (the loads below 1).
type Prediction struct {
	in              PredictInput
	cfg             *SweepConfig
	j               judge
	basis, arrivals string
	secs            float64
	at1             *Point
	reps1           []Point
	v               *sustainCheck
	done            *formats.Prediction
	// one and batch are the wall times of the run at load 1 alone and of its replications
	// side by side: what the search's steps are sized by under a deadline (CompleteBy).
	// now is the clock (a test's own).
	one, batch time.Duration
	now        func() time.Time
}

// StartPrediction runs the plan at load 1 and its replications.
func StartPrediction(ctx context.Context, in PredictInput) (*Prediction, error) {
	dep := in.Dep
	// Load 1 is the workload's rate of every application that has one (what the plan was
	// sized for: a cost plan's pipelines carry more than that); where the workload gives
	// none (a PPipe throughput plan, a cascade's QPS range), the plan's stated rate.
	basis, rates := formats.PredictionBasisStated, make([]float64, len(dep.Apps))
	var wl *formats.Workload
	if e := in.Plan.Provenance.Embedded; e != nil {
		wl = e.Workload
	}
	for i, a := range dep.Apps {
		rates[i] = a.RateRPS
		if r := workloadRate(wl, a.Name); r > 0 {
			rates[i], basis = r, formats.PredictionBasisRates
		}
	}
	spec, arrivals, err := PredictArrivals(in.Arrivals)
	if err != nil {
		return nil, fmt.Errorf("predicting the plan: arrivals %w", err)
	}
	secs := predictSpan(rates) * in.SpanScale
	d := dataplane.Time(secs * float64(dataplane.Second))
	cfg := &SweepConfig{
		Dep: dep, Policies: in.Policies, Policy: dataplane.Config{Policy: in.Policy}, Arrival: spec, BaseRPS: rates,
		Loads: []float64{1}, Duration: d, Seed: uint64(in.Seed), Warmup: DefaultWarmup(dep, d),
		LimitCap: predictHeadroomCap, PlanName: "prediction", Strategy: in.Plan.Provenance.Strategy,
	}
	cfg.LLM = PlanLLMClasses(in.Plan, dep)
	p := &Prediction{in: in, cfg: cfg, j: judge{targets: appTargets(dep, cfg.LLM), llm: cfg.LLM, dep: dep},
		basis: basis, arrivals: arrivals, secs: secs, now: time.Now}
	cfg.settle = &p.j
	if !in.Deadline.IsZero() {
		// The runs at the rates stop at the deadline; the headroom search sets its own
		// context on its copy of cfg (CompleteBy), so cfg keeps none past this function.
		rctx, cancel := context.WithDeadlineCause(ctx, in.Deadline, ErrPredictionDeadline)
		defer cancel()
		ctx, cfg.Ctx = rctx, rctx
		defer func() { cfg.Ctx = nil }()
	}
	stopped := func(err error) error {
		// A caller's own deadline on ctx (not its cancellation) ends them as this one does.
		if errors.Is(err, ErrPredictionDeadline) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w (load 1 and its replications, %.4g s of simulated traffic each)", ErrPredictionDeadline, secs)
		}
		return nil
	}
	t0 := p.now()
	if p.at1, err = RunPoint(cfg, 1); err != nil {
		if e := stopped(err); e != nil {
			return nil, e
		}
		return nil, fmt.Errorf("predicting the plan: load 1: %w", err)
	}
	t1 := p.now()
	// Replications: the same span twice more with other arrivals. Misses come in bursts
	// (a queue that builds holds many requests late at once), so a run's attainment
	// scatters more than the binomial of its request count says; the spread of independent
	// replications measures it (PARD at 20 s: 99.29% ± 0.26 binomial, another seed 97.79%).
	// A plan meets its targets at its rates when the first run and every replication do:
	// one lucky run is no verdict (bursty arrivals scatter runs most).
	p.v = &sustainCheck{cfg: cfg, seed: in.Seed, j: p.j, reps: map[float64][]Point{}}
	if p.reps1, err = p.v.replications(ctx, 1); err != nil {
		if e := stopped(err); e != nil {
			return nil, e
		}
		return nil, err
	}
	p.one, p.batch = t1.Sub(t0), p.now().Sub(t1)
	return p, nil
}

// Rates is the prediction at the plan's rates alone: every field but Headroom and each
// application's SustainedRPS (0 here) is the complete prediction's.
func (p *Prediction) Rates() *formats.Prediction {
	pr, _ := p.assemble(context.Background(), nil) // without a search, nothing can fail
	return pr
}

// Complete runs the headroom search and returns the whole prediction (once: later calls
// return the same).
func (p *Prediction) Complete(ctx context.Context) (*formats.Prediction, error) {
	return p.CompleteBy(ctx, time.Time{})
}

// CompleteBy is Complete with the headroom search ended by deadline (zero: none;
// searchstop.go): a step expected to end past it is not started, a run still going at it is
// cancelled, and the prediction is assembled from the loads established by then, its
// HeadroomSearch saying that it stopped early and what it tried. A prediction stopped so is
// not kept: a later call searches again.
func (p *Prediction) CompleteBy(ctx context.Context, deadline time.Time) (*formats.Prediction, error) {
	if p.done != nil {
		return p.done, nil
	}
	g := newSearchGuard(ctx, deadline, p.one, p.batch, p.cfg.Parallel, p.now)
	defer g.close()
	sctx, cfg := g.context(ctx), *p.cfg
	if g != nil {
		cfg.Ctx, cfg.search = sctx, g
	}
	v := *p.v
	v.cfg = &cfg
	// Above 1, where load 1 holds MaxLoadTarget: doubling to the cap, then bisecting.
	found, err := findLimit(sctx, &cfg, []*Point{p.at1})
	if err != nil && !errors.Is(err, errSearchStopped) {
		return nil, fmt.Errorf("predicting the plan: %w", err)
	}
	var points []Point
	for _, q := range found {
		points = append(points, *q)
	}
	held1 := p.j.all(p.at1)
	for k := range p.reps1 {
		held1 = held1 && p.j.all(&p.reps1[k])
	}
	if !held1 && !g.isStopped() {
		// Where it does hold: the loads below 1 (the search above 1 found nothing, or
		// what it found did not hold in the replications).
		low, partial, err := v.below(sctx, g)
		if err != nil && !errors.Is(err, errSearchStopped) {
			return nil, fmt.Errorf("predicting the plan: %w", err)
		}
		points = append(points, low...)
		// The grid says where between its loads each application stops holding; the rate
		// a user sizes by (sustained_rps) is bisected there, every load held in each run.
		for app := -1; app < len(p.at1.Apps) && !g.isStopped(); app++ {
			if points, err = v.bisect(sctx, points, app); err != nil && !errors.Is(err, errSearchStopped) {
				return nil, fmt.Errorf("predicting the plan: %w", err)
			}
		}
		if partial {
			g.stopped = true // the grid's lower loads were not tried
		}
	}
	v.points = points
	pr, err := p.assembleWith(sctx, &v, points)
	if err != nil {
		return nil, err
	}
	if g.isStopped() {
		pr.HeadroomSearch = &formats.HeadroomSearch{StoppedEarly: true, Reason: formats.SearchStoppedDeadline, LoadsTried: loadsTried(points)}
		return pr, nil
	}
	p.v.points, p.v.reps = v.points, v.reps
	p.done = pr
	return pr, nil
}

// HoldsAt reports whether application app holds its targets at load in its first run and in
// every replication, seeded as the headroom search seeds each load it tries: the test
// sustained applies. A load a search established as held (a recorded sustained_rps) holds
// here again while the plan, its inputs and the runtime are unchanged, whatever other loads
// another search tried: where attainment sits within the sampling noise of the target over
// a range of rates it is not monotone in the rate, and two searches over different loads
// can stop a resolution step or more apart.
func (p *Prediction) HoldsAt(ctx context.Context, load float64, app int) (bool, error) {
	if app < 0 || app >= len(p.at1.Apps) || !(load > 0) {
		return false, fmt.Errorf("predicting the plan: no application %d at load %g", app, load)
	}
	cfg := *p.cfg
	v := *p.v
	v.cfg, v.reps = &cfg, map[float64][]Point{}
	first, err := v.establish(ctx, load)
	if err != nil {
		return false, err
	}
	held := p.j.app(first, app)
	for k := range v.reps[load] {
		held = held && p.j.app(&v.reps[load][k], app)
	}
	return held, nil
}

// loadsTried are the loads of points, ascending, each once.
func loadsTried(points []Point) []float64 {
	var out []float64
	for _, q := range points {
		if !slices.Contains(out, q.Load) {
			out = append(out, q.Load)
		}
	}
	sort.Float64s(out)
	return out
}

// assemble builds the prediction from load 1, its replications and, when points are given
// (the search's loads), the headroom and each application's sustained rate.
func (p *Prediction) assemble(ctx context.Context, points []Point) (*formats.Prediction, error) {
	return p.assembleWith(ctx, p.v, points)
}

// assembleWith is assemble with the sustained rates checked by v (a search's own, under its
// deadline).
func (p *Prediction) assembleWith(ctx context.Context, v *sustainCheck, points []Point) (*formats.Prediction, error) {
	at1, reps1, j := p.at1, p.reps1, p.j
	reps := make([][]float64, len(at1.Apps))
	for i, a := range at1.Apps {
		reps[i] = []float64{a.Attainment}
		for _, q := range reps1 {
			if i < len(q.Apps) && q.Apps[i].Requests > 0 {
				reps[i] = append(reps[i], q.Apps[i].Attainment)
			}
		}
	}
	hr := 0.0
	if points != nil {
		var err error
		if hr, err = v.sustained(ctx, headroom(points, j), -1); err != nil {
			return nil, err
		}
	}
	pr := &formats.Prediction{
		Method: formats.PredictionMethodSim, Basis: p.basis, Policy: p.in.Policy, Arrivals: p.arrivals, Seed: p.in.Seed,
		DurationS: p.secs, Headroom: hr, HeadroomCap: predictHeadroomCap, Meets: true, Rule: formats.VerdictEveryRun,
	}
	noise := noiseOf(p.in.Plan)
	for i, a := range at1.Apps {
		ap := formats.AppPrediction{
			Name: a.Name, RateRPS: a.OfferedRPS, Requests: a.Requests, Target: j.targets[i],
			Attainment: a.Attainment, Margin: min(1, max(samplingMargin(a.Attainment, a.Requests), replicationMargin(reps[i]))),
			Dropped: a.Dropped + a.Cancelled, Late: a.Late,
			P50Ms: usToMs(a.Latency.P50Us), P90Ms: usToMs(a.Latency.P90Us), P99Ms: usToMs(a.Latency.P99Us),
		}
		if a.LLM != nil {
			ttft, tpot := usToMs(a.LLM.TTFT.P99Us), usToMs(a.LLM.TPOT.P99Us)
			ap.TTFTP99Ms, ap.TPOTP99Ms = &ttft, &tpot
		}
		if i < len(j.llm) && j.llm[i].Model != "" {
			ap.ExpectedError = expectedError(p.in.Plan, p.in.Dep, j.llm[i].Model)
		} else if a.LLM == nil {
			var reps [][2]float64
			for _, q := range reps1 {
				if i < len(q.Apps) && q.Apps[i].Requests > 0 {
					reps = append(reps, [2]float64{float64(q.Apps[i].Latency.P50Us), float64(q.Apps[i].Latency.P99Us)})
				}
			}
			ap.LatencyError = latencyError([2]float64{float64(a.Latency.P50Us), float64(a.Latency.P99Us)}, reps, noise)
		}
		first, slos := j.run(at1, i, p.in.Seed)
		ap.SLOs = slos
		ap.Runs = append(ap.Runs, first)
		for k := range reps1 {
			r, _ := j.run(&reps1[k], i, replicationSeed(p.in.Seed, k))
			if len(slos) == 0 {
				// The SLOs judged are the first run's (none where it had no requests):
				// every run is judged on the same ones.
				r.SLOShares = nil
			}
			ap.Runs = append(ap.Runs, r)
		}
		ap.Meets = formats.AppMeets(&ap)
		if points != nil {
			h, err := v.sustained(ctx, appHeadroom(points, i, j), i)
			if err != nil {
				return nil, err
			}
			ap.SustainedRPS = math.Round(h*a.OfferedRPS*1e4) / 1e4
		}
		pr.Meets = pr.Meets && ap.Meets
		pr.Apps = append(pr.Apps, ap)
	}
	if len(pr.Apps) == 0 {
		pr.Meets = false
	}
	return pr, nil
}

// PlanLLMClasses are the plan's LLM classes, parallel to dep.Apps (nil: not an LLM plan): the
// classes of the workload it embeds. An LLM plan embeds the workload its classes come from;
// a plan of any other system embeds a workload with none (a workload is one system's).
func PlanLLMClasses(p *formats.Plan, dep *dataplane.Deployment) []LLMClass {
	e := p.Provenance.Embedded
	if e == nil {
		return nil
	}
	return LLMClassesOf(dep, llmspec.ClassesOf(e.Workload))
}

// workloadRate is the rate (requests/s) the workload asks of the application named name, as
// its section says (formats.RateTargeter: a model's, pipeline's, LLM class's or workflow
// app's rate_rps); 0 = none given. A rate that bounds a range the plan covers (a cascade's
// qps_max, formats.RateTarget.Range) is no rate asked for: the plan's stated rate stands.
func workloadRate(w *formats.Workload, name string) float64 {
	for _, t := range w.RateTargets() {
		if t.Name == name && !t.Range {
			return t.RateRPS
		}
	}
	return 0
}

// predictSpan is the simulated span in seconds (workload.PredictionSpan: the planners that
// size by simulation judge capacity on the same runs).
func predictSpan(base []float64) float64 { return workload.PredictionSpan(base) }

// appTargets are the applications' attainment targets: an LLM class's E2E percentile, the
// percentile an application's SLO is stated at (a cascade's p95), else MaxLoadTarget.
func appTargets(dep *dataplane.Deployment, llm []LLMClass) []float64 {
	t := make([]float64, len(dep.Apps))
	for i, a := range dep.Apps {
		t[i] = MaxLoadTarget
		if p := a.SLOPercentile; p > 0 && p < 1 {
			t[i] = p
		}
		if i < len(llm) && llm[i].Model != "" {
			t[i] = llm[i].E2EP // an LLM class's attainment line
		}
	}
	return t
}

// judge decides whether an application meets its targets at a simulated point: an LLM
// class each SLO at its own percentile (workload.LLMChecks), any other application its
// attainment target.
type judge struct {
	targets []float64
	llm     []LLMClass
	dep     *dataplane.Deployment
}

// checks are application i's SLO checks at metrics a (nil: not an LLM class).
func (j judge) checks(a *workload.AppMetrics, i int) []workload.SLOCheck {
	if i >= len(j.llm) || j.llm[i].Model == "" || i >= len(j.dep.Apps) {
		return nil
	}
	return workload.LLMChecks(j.llm[i].SLOs(j.dep.Apps[i].SLO), a)
}

// run is application i's outcome in run p (arrival seed seed), with its SLOs judged at
// their percentiles for an LLM class (nil otherwise). A run stopped certain to fail
// (settle.go) counted some of every application's requests (the misses that settled it),
// and misses for each.
func (j judge) run(p *Point, i int, seed int64) (formats.RunOutcome, []formats.PredictedSLO) {
	a := &p.Apps[i]
	r := formats.RunOutcome{Seed: seed, Requests: a.Requests, Attainment: a.Attainment, Stopped: p.Stopped}
	var slos []formats.PredictedSLO
	for _, c := range j.checks(a, i) {
		slos = append(slos, formats.PredictedSLO{SLO: c.SLO, LimitMs: c.LimitUs / 1000, Percentile: c.Percentile, Share: c.Share, Meets: c.Met})
		r.SLOShares = append(r.SLOShares, c.Share)
	}
	return r, slos
}

// app says whether application i holds its target in run p, by the verdict rule's test of
// one run (formats.RunHolds): the headroom and sustained-rate searches hold a load by the
// same test the verdict at load 1 applies to each of its runs.
func (j judge) app(p *Point, i int) bool {
	r, slos := j.run(p, i, 0)
	return formats.RunHolds(r, j.targets[i], slos)
}

func (j judge) all(p *Point) bool {
	for i := range p.Apps {
		if !j.app(p, i) {
			return false
		}
	}
	return true
}

// headroom is the highest load factor at which every application meets its target and every
// lower load tried does too (0 when the lowest load tried misses).
func headroom(points []Point, j judge) float64 {
	ps := append([]Point(nil), points...)
	sort.SliceStable(ps, func(i, k int) bool { return ps[i].Load < ps[k].Load })
	h := 0.0
	for i := range ps {
		if !j.all(&ps[i]) {
			break
		}
		h = ps[i].Load
	}
	return math.Round(h*1e4) / 1e4
}

// appHeadroom is headroom for application a alone.
func appHeadroom(points []Point, a int, j judge) float64 {
	ps := append([]Point(nil), points...)
	sort.SliceStable(ps, func(i, k int) bool { return ps[i].Load < ps[k].Load })
	h := 0.0
	for i := range ps {
		if !j.app(&ps[i], a) {
			break
		}
		h = ps[i].Load
	}
	return h
}

// sustainCheck holds a headroom to the replications' standard. The headroom search runs one
// seed, and a load that passes on it by luck would overstate sustained_rps, and with it the
// autoscaling thresholds built on it (export.Capacity). A load counts as held only where
// the replications (other arrivals, as at load 1) hold it too; where they do not, the next
// lower load tried is checked the same way.
type sustainCheck struct {
	cfg    *SweepConfig
	seed   int64
	j      judge
	points []Point
	reps   map[float64][]Point // replication points per load, run once each
}

// replications runs (once per load) the predictReplications runs at load beside the first.
// Under a deadline (cfg.search) it returns errSearchStopped where they do not fit before it.
func (v *sustainCheck) replications(ctx context.Context, load float64) ([]Point, error) {
	if ps, ok := v.reps[load]; ok {
		return ps, nil
	}
	if err := v.cfg.search.admit(predictReplications, load); err != nil {
		return nil, err
	}
	ps, err := v.run(ctx, load, false)
	if err != nil {
		return nil, err
	}
	v.reps[load] = ps
	return ps, nil
}

// establish runs load's first run and its replications side by side, as one step of the
// search (what the grid and sustained run as two), and returns the first run; the
// replications are kept in v.reps as replications keeps them.
func (v *sustainCheck) establish(ctx context.Context, load float64) (*Point, error) {
	if err := v.cfg.search.admit(1+predictReplications, load); err != nil {
		return nil, err
	}
	ps, err := v.run(ctx, load, true)
	if err != nil {
		return nil, err
	}
	v.reps[load] = ps[1:]
	return &ps[0], nil
}

// run runs load side by side: the replications, after the first run (v.cfg's own seed)
// where first.
func (v *sustainCheck) run(ctx context.Context, load float64, first bool) ([]Point, error) {
	n, skip := predictReplications, 0
	if first {
		n, skip = n+1, 1
	}
	ps := make([]Point, n)
	errs, err := Parallel(ctx, len(ps), v.cfg.Parallel, func(r int) error {
		c := *v.cfg
		if r >= skip {
			c.Seed, c.Progress = uint64(replicationSeed(v.seed, r-skip)), nil
		}
		p, err := RunPoint(&c, load)
		if err != nil {
			return err
		}
		ps[r] = *p
		return nil
	}, nil)
	if err == nil {
		err = errors.Join(errs...)
	}
	if err = v.cfg.search.check(err); errors.Is(err, errSearchStopped) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("predicting the plan: load %g: %w", load, err)
	}
	return ps, nil
}

// sustained is the highest load ≤ h tried at which application app (-1: every application)
// holds its targets in every replication as well as in the first run (0 when none does).
// Under a deadline, a load whose replications the search stopped before is not established
// and is passed over.
func (v *sustainCheck) sustained(ctx context.Context, h float64, app int) (float64, error) {
	var loads []float64
	for _, p := range v.points {
		if p.Load <= h && p.Load > 0 && !slices.Contains(loads, p.Load) {
			loads = append(loads, p.Load)
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(loads)))
	for _, load := range loads {
		ps, err := v.replications(ctx, load)
		if errors.Is(err, errSearchStopped) {
			continue
		}
		if err != nil {
			return 0, err
		}
		held := true
		for k := range ps {
			if (app < 0 && !v.j.all(&ps[k])) || (app >= 0 && !v.j.app(&ps[k], app)) {
				held = false
				break
			}
		}
		if held {
			return math.Round(load*1e4) / 1e4, nil
		}
	}
	return 0, nil
}

// sustainResolution is how closely bisect brackets a sustained load below 1: within 1% of
// the plan's own rates.
const sustainResolution = 0.01

// bisect narrows the load application app (-1: every application) sustains, by the same
// test sustained applies (its first run and every replication hold), between the highest
// load held among points and the lowest load tried above it, to within sustainResolution.
// It returns points with the first runs of the loads it tried added; their replications
// are in v.reps. Under a deadline it returns them with errSearchStopped where the next load
// does not fit before it.
func (v *sustainCheck) bisect(ctx context.Context, points []Point, app int) ([]Point, error) {
	for {
		v.points = points
		h := headroom(points, v.j)
		if app >= 0 {
			h = appHeadroom(points, app, v.j)
		}
		lo, err := v.sustained(ctx, h, app)
		if err != nil {
			return nil, err
		}
		hi := math.Inf(1)
		for _, q := range points {
			if q.Load > lo && q.Load < hi {
				hi = q.Load
			}
		}
		mid := math.Round((lo+hi)/2*1e4) / 1e4
		if v.cfg.search.isStopped() {
			return points, errSearchStopped // lo was passed over loads not established
		}
		if math.IsInf(hi, 1) || hi-lo <= sustainResolution || mid <= lo || mid >= hi {
			return points, nil
		}
		if err := v.cfg.search.admit(1, mid); err != nil {
			return points, err
		}
		q, err := RunPoint(v.cfg, mid)
		if err = v.cfg.search.check(err); errors.Is(err, errSearchStopped) {
			return points, err
		}
		if err != nil {
			return nil, fmt.Errorf("load %g: %w", mid, err)
		}
		points = append(points, *q)
	}
}

// predictReplications are the runs beside the first whose spread bounds a prediction's
// margin (replicationMargin); replicationSeedStride keeps their seeds clear of the seeds a
// caller passes for an independent run (seed + 1000 in the property test).
const (
	predictReplications   = workload.PredictionReplications
	replicationSeedStride = workload.ReplicationSeedStride
)

// replicationSeed is the arrival seed of replication r (from 0) of a run seeded seed.
func replicationSeed(seed int64, r int) int64 { return seed + int64(r+1)*replicationSeedStride }

// replicationMargin is the 95% range of one run's attainment from independent replications:
// 1.96 × their sample standard deviation (0 with fewer than two).
func replicationMargin(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var mean, ss float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Round(1.96*math.Sqrt(ss/float64(len(xs)-1))*1e6) / 1e6
}

// samplingMargin is the 95% sampling error of an attainment a measured on n requests (the
// normal approximation of the binomial, at least one request's share).
func samplingMargin(a float64, n int64) float64 {
	if n <= 0 {
		return 1
	}
	m := 1.96 * math.Sqrt(a*(1-a)/float64(n))
	return math.Round(max(m, 1/float64(n))*1e6) / 1e6
}

func usToMs(us int64) float64 { return math.Round(float64(us)) / 1e3 }
