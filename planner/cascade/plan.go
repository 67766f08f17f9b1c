package cascade

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

// Strategies: the CascadeServe planner and the baselines of CascadeServe §6.2 and §6.6,
// planned on the same inputs. DynBa and MS+ choose single models; no-switch uses one gear for
// all ranges; no-cascade restricts gears to single models. Cocktail+ (§6.2) provisions its
// largest fleet like DynBa — one model, one gear for every QPS, at the planned peak — but with
// CascadeServe's batching; its runtime policy (dataplane/cascade, cocktail+) then scales the
// replicas in use with the measured QPS and loads the model on every replica that joins.
const (
	StrategyCascadeServe = "cascadeserve"
	StrategyNoSwitch     = "no-switch"
	StrategyNoCascade    = "no-cascade"
	StrategyDynBa        = "dynba"
	StrategyMSPlus       = "ms+"
	StrategyCocktail     = "cocktail+"
)

// Strategies lists the strategies, the default first.
var Strategies = []string{StrategyCascadeServe, StrategyNoSwitch, StrategyNoCascade, StrategyDynBa, StrategyMSPlus, StrategyCocktail}

// Options are the planner's settings.
type Options struct {
	Strategy string
	// Latency (> 0) is a latency SLO at Percentile (maximize accuracy); Accuracy (> 0) is an
	// accuracy SLO (minimize weighted latency). Both: the latency SLO with an accuracy floor
	// (a cell of the paper's Fig. 7). Zero values take the workload's.
	Latency    time.Duration
	Percentile float64
	Accuracy   float64
	// AccuracyMargin plans that much above the accuracy target (the validation estimate is
	// an estimate: plan solve --accuracy-margin); 0 = none. The plan records
	// the target it was planned for (target + margin) as its accuracy_slo.
	AccuracyMargin float64
	// GPUs uses the first GPUs of the cluster (0 = all); MinGPUs searches the fewest GPUs
	// whose plan meets the SLO (and the accuracy floor).
	GPUs    int
	MinGPUs bool
	// Ranges overrides the workload's qps_ranges (the paper gives no n_ranges; default 64,
	// or width 1 QPS when qps_max ≤ 64, as in the authors' artifact); QPSMax its qps_max.
	Ranges int
	QPSMax float64
	// TimeWeights weights range accuracy by time, as CascadeServe App. C.2 does, instead of by
	// requests, which is what serving measures (high-QPS periods count more).
	TimeWeights bool
	Search      SearchOptions
	Sim         SimOptions
	// Budget bounds the loop's iterations (0 = 10,000).
	Budget int
	// ToolVersion is recorded in the plan's provenance ("" = "dev").
	ToolVersion string
	// Provision is DynBa's and MS+'s provisioning rule: ProvisionQueue (default: the
	// paper's, peaks absorbed by queueing) or ProvisionPeak (every gear sized for its peak).
	Provision string
	// lpSolve replaces solver.Solve (tests: an engine that fails).
	lpSolve func(context.Context, *solver.Model, solver.Options) (*solver.Result, error)
}

// Flags are CascadeServe's `plan solve` options as a plan records them in
// provenance.options (GPUs, ranges and qps_max as solved), read back by `plan check
// --resolve`. Zero values of the optional ones take the workload's.
type Flags struct {
	// Strategy: cascadeserve (default) or a baseline.
	Strategy string `json:"strategy"`
	// LatencySLO (plan solve --slo) and AccuracySLO (--accuracy): the SLOs planned for
	// (default: the workload's); Percentile is the latency SLO's (default 0.95).
	LatencySLO  formats.Duration `json:"latency_slo,omitempty"`
	AccuracySLO float64          `json:"accuracy_slo,omitempty" flag:"accuracy" help:"accuracy SLO in (0,1]: minimize latency at this weighted accuracy (with --slo: the accuracy floor of a latency SLO)"`
	Percentile  float64          `json:"percentile" flag:"percentile" help:"latency SLO percentile (default: the workload's, or 0.95)"`
	// AccuracyMargin plans this much above the accuracy target (Options.AccuracyMargin);
	// a plan records it inside accuracy_slo (target + margin), not apart.
	AccuracyMargin float64 `json:"-" flag:"accuracy-margin" help:"plan this much above the accuracy target (the validation estimate's error; the plan records target + margin)"`
	// GPUs uses the first GPUs of the cluster (0 = all); MinGPUs searches the fewest.
	GPUs    int  `json:"gpus" flag:"gpus" help:"use only the first N GPUs of the cluster (0 = all)"`
	MinGPUs bool `json:"min_gpus,omitempty" flag:"min-gpus" help:"search the fewest GPUs whose plan meets every SLO"`
	// Ranges is the number of QPS ranges (gears) up to QPSMax (default: the workload's).
	Ranges int     `json:"ranges" flag:"ranges" help:"number of QPS ranges (gears) (default: the workload's qps_ranges, else 64 or 1 per QPS)"`
	QPSMax float64 `json:"qps_max" flag:"qps-max" help:"highest planned QPS (default: the workload's qps_max)"`
	// Levels is the threshold grid per model (default 20), MaxLen the longest cascade
	// (default 0: the workload's own, 3 over validation records and a candidates table's
	// longest over one; a plan records the length searched), Monotone keeps only
	// cost-ascending cascades (CascadeServe §4.1).
	Levels   int  `json:"levels" flag:"levels" help:"threshold levels per model (certainty quantiles)"`
	MaxLen   int  `json:"max_len" flag:"max-len" help:"longest cascade: 1..3 over validation records (default 3); a candidates table is searched whole (default: its longest)"`
	Monotone bool `json:"monotone" flag:"monotone" help:"only cost-ascending cascades"`
	// Weights weights range accuracy by requests (default) or time (App. C.2).
	Weights string `json:"weights" flag:"weights" help:"range accuracy weights: requests (ω ∝ time·QPS) or time"`
	// Provision is the DynBa and MS+ provisioning rule: queue (default) or peak.
	Provision string `json:"provision,omitempty" flag:"provision" help:"dynba and ms+ fleet sizing: queue (the paper's: the rate all but the SLO's tail of requests arrive below, peaks queued) or peak (default queue)"`
	// Objective is cost for a least-cost fleet (cost.go), absent otherwise.
	Objective string `json:"objective,omitempty"`
}

// DefaultFlags are `plan solve`'s defaults for CascadeServe.
func DefaultFlags() Flags { return Flags{Levels: 20, Weights: "requests"} }

// Result is a solved plan with the planner's bookkeeping.
type Result struct {
	Task      *Task
	Pareto    []Cascade
	Placement []Replica
	Gears     []Gear
	HW        Hardware
	// Acc is the plan's weighted accuracy; Weights the per-range ω.
	Acc     float64
	Weights []float64
	// Provisioned is the highest QPS the gears were planned for (below qps_max under
	// ProvisionQueue: the last gear also serves the peaks above it, queueing).
	Provisioned float64
	// GPUsUsed counts GPUs holding at least one replica.
	GPUsUsed   int
	Iterations int
	LPs        int
	Sims       int
	Elapsed    time.Duration
	Opt        Options
}

// planning is one co-optimization run.
type planning struct {
	ctx   context.Context
	t     *Task
	hw    Hardware
	P     []Cascade
	q     []float64 // per range: evaluation QPS (upper bound: the SLO must hold over the range)
	lo    []float64
	w     []float64 // ω_r
	opt   Options
	lb    *lbSolver
	sims  int
	iters int
	cache map[string]Gear
}

// Plan runs the planner for task t on hardware hw with workload entry c (QPS settings and
// histogram).
func Plan(ctx context.Context, t *Task, c *cascadesec.Cascade, hw Hardware, o Options) (*Result, error) {
	start := time.Now()
	if o.Strategy == "" {
		o.Strategy = StrategyCascadeServe
	}
	if !slices.Contains(Strategies, o.Strategy) {
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf("strategy %q: must be one of %v", o.Strategy, Strategies)}}
	}
	if o.Latency == 0 && o.Accuracy == 0 {
		if c.LatencySLO != nil {
			o.Latency = time.Duration(c.LatencySLO.Latency)
			if o.Percentile == 0 {
				o.Percentile = c.LatencySLO.Percentile
			}
		} else {
			o.Accuracy = c.AccuracySLO
		}
	}
	if o.Accuracy > 0 && o.AccuracyMargin > 0 {
		o.Accuracy = min(1, o.Accuracy+o.AccuracyMargin)
	}
	if o.Percentile == 0 {
		o.Percentile = 0.95
	}
	o.Sim.Percentile = o.Percentile
	if o.QPSMax == 0 {
		o.QPSMax = c.QPSMax
	}
	if o.Ranges == 0 {
		o.Ranges = c.QPSRanges
	}
	if o.Ranges == 0 {
		o.Ranges = 64
		if o.QPSMax <= 64 {
			o.Ranges = max(1, int(math.Ceil(o.QPSMax)))
		}
	}
	if !o.MinGPUs {
		if o.GPUs > 0 && o.GPUs < hw.N {
			hw.N = o.GPUs
		}
		res, err := planOn(ctx, t, c, hw, o)
		if res != nil {
			res.Elapsed = time.Since(start)
		}
		return res, err
	}
	var last error
	lim := hw.N
	if o.GPUs > 0 {
		lim = min(lim, o.GPUs)
	}
	var lps, sims int
	for n := 1; n <= lim; n++ {
		h := hw
		h.N = n
		res, err := planOn(ctx, t, c, h, o)
		if res != nil {
			lps += res.LPs
			sims += res.Sims
		}
		if err == nil && res.meets(o) {
			res.Elapsed, res.LPs, res.Sims = time.Since(start), lps, sims
			return res, nil
		}
		if err != nil && !errors.Is(err, planner.ErrInfeasible) {
			return nil, err
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("%w: %d GPUs: %s", planner.ErrInfeasible, n, res.shortfall(o))
		}
	}
	return nil, fmt.Errorf("no GPU count up to %d meets the SLO: %w", lim, last)
}

// meets reports whether a plan meets every SLO of o (for MinGPUs): no overloaded gear, the
// accuracy floor, and the latency bound at every gear.
func (r *Result) meets(o Options) bool { return r.shortfall(o) == "" }

func (r *Result) shortfall(o Options) string {
	if o.Accuracy > 0 && r.Acc < o.Accuracy-absTol {
		return fmt.Sprintf("accuracy %.4f < %.4f", r.Acc, o.Accuracy)
	}
	for i, g := range r.Gears {
		if g.Overload || !g.Sim.Sustained {
			return fmt.Sprintf("gear %d (QPS %g) overloaded", i, g.QHi)
		}
		if o.Latency > 0 && g.Sim.PLat > o.Latency.Seconds()+absTol {
			return fmt.Sprintf("gear %d (QPS %g): p%g latency %.0f ms > %v", i, g.QHi, o.Percentile*100, g.Sim.PLat*1000, o.Latency)
		}
	}
	return ""
}

// weights returns per-range weights ω_r: time fractions from the histogram (fraction of
// time at integer QPS i), else Zipf s=1 over range indices (App. C.2 assumes Zipf but gives
// no exponent); times the range's mean QPS for request weights.
func weights(c *cascadesec.Cascade, lo, hi []float64, timeOnly bool) []float64 {
	n := len(lo)
	w := make([]float64, n)
	if len(c.QPSHistogram) > 0 {
		for i, f := range c.QPSHistogram {
			q := float64(i)
			r := sort.Search(n, func(j int) bool { return hi[j] > q })
			if r >= n {
				r = n - 1
			}
			w[r] += f
		}
	} else {
		for r := range w {
			w[r] = 1 / float64(r+1)
		}
	}
	var sum float64
	for r := range w {
		if !timeOnly {
			w[r] *= math.Max((lo[r]+hi[r])/2, 1e-9)
		}
		sum += w[r]
	}
	for r := range w {
		if sum > 0 {
			w[r] /= sum
		} else {
			w[r] = 1 / float64(n)
		}
	}
	return w
}

func planOn(ctx context.Context, t *Task, c *cascadesec.Cascade, hw Hardware, o Options) (*Result, error) {
	if hw.N < 1 {
		// No GPU to place a replica on: every cascade is infeasible, and the gear simulator
		// has no server to route to.
		return nil, fmt.Errorf("%w: the cluster has no GPU (gpus[].count sums to 0)", planner.ErrInfeasible)
	}
	p := &planning{ctx: ctx, t: t, hw: hw, opt: o, lb: &lbSolver{ctx: ctx, t: t, nGPU: hw.N, cache: map[string]lbResult{}, solveLP: o.lpSolve}, cache: map[string]Gear{}}
	// SP1: cascade search with Pareto filtering (§4.2).
	so := o.Search
	switch o.Strategy {
	case StrategyNoCascade, StrategyDynBa, StrategyMSPlus, StrategyCocktail:
		so.Singles = true
	}
	p.P = Pareto(t.Enumerate(so))
	n := o.Ranges
	width := provisioned(c, o) / float64(n)
	for r := 0; r < n; r++ {
		p.lo = append(p.lo, float64(r)*width)
		p.q = append(p.q, float64(r+1)*width)
	}
	p.w = weights(c, p.lo, p.q, o.TimeWeights)
	if o.Strategy == StrategyNoSwitch || o.Strategy == StrategyDynBa || o.Strategy == StrategyCocktail {
		// One gear for every QPS: plan a single range at qps_max, then stretch it.
		p.lo, p.q, p.w = []float64{0}, []float64{provisioned(c, o)}, []float64{1}
	}
	var gears []Gear
	var pl []Replica
	var err error
	if o.Accuracy > 0 && o.Latency == 0 && o.Strategy != StrategyMSPlus {
		// MS+ has no accuracy-SLO search: it serves each QPS with the most accurate single
		// model its capacity rule admits (latencyLoop), whatever the target; planning it
		// with the accuracy loop made it the no-cascade ablation.
		gears, pl, err = p.accuracyLoop()
	} else {
		gears, pl, err = p.latencyLoop()
	}
	res := &Result{Task: t, Pareto: p.P, HW: hw, Opt: o, LPs: p.lb.LPs, Sims: p.sims, Weights: p.w, Iterations: p.iters, Provisioned: p.q[len(p.q)-1]}
	if err == nil {
		err = p.lbFailure(gears)
	}
	if err != nil {
		return res, err
	}
	if last := len(gears) - 1; last >= 0 && gears[last].QHi < o.QPSMax {
		// provisioned below the peak (ProvisionQueue): the last gear serves up to qps_max
		gears[last].QHi = o.QPSMax
	}
	res.Gears, res.Placement = gears, pl
	for i, g := range gears {
		res.Acc += p.w[i] * g.C.Acc
	}
	usedGPU := map[int]bool{}
	for _, r := range pl {
		for _, d := range r.GPUs {
			usedGPU[d] = true
		}
	}
	res.GPUsUsed = len(usedGPU)
	return res, nil
}

// lbFailure is the solver's failure when a gear was left without load shares (the LP
// engine is missing or failed: an accuracy-SLO plan keeps soft failures, so without this
// check a plan with share-less gears reached Document and panicked there).
func (p *planning) lbFailure(gears []Gear) error {
	for i, g := range gears {
		if len(g.Share) == len(g.C.Models) {
			continue
		}
		if p.lb.err != nil {
			return fmt.Errorf("gear %d (QPS %g): the load-balancing LP (CascadeServe §4.4) failed: %w", i, g.QHi, p.lb.err)
		}
		return fmt.Errorf("%w: gear %d (QPS %g): no placement gives %s load shares", planner.ErrInfeasible, i, g.QHi, p.t.Names(&g.C))
	}
	return nil
}

// gear evaluates cascade a at range r on placement pl: shares from the LP at the SP4 batch
// size, then SP4's b1 search with the planner simulator (§4.5).
func (p *planning) gear(a, r int, pl []Replica, plKey string) (Gear, *planErr) {
	c := &p.P[a]
	key := fmt.Sprintf("%d|%g|%s", a, p.q[r], plKey)
	if g, ok := p.cache[key]; ok {
		g.QLo, g.QHi = p.lo[r], p.q[r]
		if g.Overload {
			return g, &planErr{kind: "throughput", rng: r, model: c.Models[max(g.Sim.Bottleneck, 0)]}
		}
		return g, nil
	}
	g, perr := p.tuneBatching(a, r, pl, plKey)
	p.cache[key] = g
	return g, perr
}

// batchGrid is SP4's b1 scan [ours: a geometric grid of the artifact's 1..B_prof, keeping
// the planner's cost bounded at BERT's 7,600 QPS].
var batchGrid = []int{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 80, 100, 128, 160, 200, 256}

func (p *planning) tuneBatching(a, r int, pl []Replica, plKey string) (Gear, *planErr) {
	c := &p.P[a]
	q := p.q[r]
	g := Gear{QLo: p.lo[r], QHi: q, C: *c, B1: 1}
	lastBottleneck := 0
	var best *Gear
	grid := batchGrid
	if p.opt.Strategy == StrategyDynBa || p.opt.Strategy == StrategyMSPlus {
		grid = []int{1} // a free GPU runs everything queued (DynBa; MS+'s adaptive batching)
	}
	for _, b1 := range grid {
		lb := p.lb.solve(c, pl, plKey, p.batchTimes(c, b1), true)
		if math.IsInf(lb.u, 1) {
			return g, &planErr{kind: "throughput", rng: r, model: c.Models[0]}
		}
		g.Share = make([][]float64, len(c.Models))
		for i := range c.Models {
			g.Share[i] = normShares(lb.x[i])
		}
		// pre-check (§4.5; per GPU, unlike the authors' artifact's, which prices later
		// stages at lat(1)): Σ_ρ x_ρ/b_ρ·lat(b_ρ) ≤ 1.
		if len(grid) > 1 && !p.precheck(c, pl, lb, b1, q) {
			continue
		}
		g.B1 = b1
		g.Sim = p.t.SimulateGear(pl, p.hw.N, &g, q, p.opt.Sim)
		g.Simulated = true
		p.sims++
		if !g.Sim.Sustained {
			lastBottleneck = g.Sim.Bottleneck
			continue
		}
		if best == nil || g.Sim.PLat < best.Sim.PLat {
			cp := g
			best = &cp
		}
		if p.opt.Latency > 0 && g.Sim.PLat > p.opt.Latency.Seconds() {
			continue // the artifact keeps growing b1 here too
		}
		return g, nil
	}
	kind := "throughput"
	if best != nil {
		g = *best
		kind = "latency"
	} else if !g.Simulated {
		g.Sim = SimResult{Bottleneck: 0, PLat: math.Inf(1)}
	}
	g.Overload = best == nil
	m := c.Models[min(max(lastBottleneck, 0), len(c.Models)-1)]
	return g, &planErr{kind: kind, rng: r, model: m}
}

func (p *planning) precheck(c *Cascade, pl []Replica, lb lbResult, b1 int, q float64) bool {
	load := make([]float64, p.hw.N)
	for i, m := range c.Models {
		b := max(1, int(math.Round(c.Reach[i]*float64(b1))))
		k := 0
		for _, r := range pl {
			if r.Model != m {
				continue
			}
			x := lb.x[i][k] * q
			k++
			if x <= 0 {
				continue
			}
			// [ours] x/b batches per second, not ceil(x/b): below b QPS a batch takes more
			// than a second to fill, which is latency (the simulation's call), not load.
			t := x / float64(b) * p.t.Models[m].Lat(b) / 1e6
			for _, d := range r.GPUs {
				load[d] += t
			}
		}
	}
	for _, l := range load {
		if l > 1 {
			return false
		}
	}
	return true
}

// latencyLoop is Algorithm 1 under a latency SLO (§4.1, §4.3 latency branch): every range
// starts at the most accurate Pareto cascade; throughput, latency and OOM errors flow back
// — SP4 errors first raise the bottleneck model's replica count (SP3), then downgrade the
// range (SP2) — until a full pass is clean.
func (p *planning) latencyLoop() ([]Gear, []Replica, error) {
	n := len(p.q)
	assign := make([]int, n)
	if p.opt.Strategy == StrategyMSPlus {
		// MS+ (§6.2): for each QPS, the most accurate single model whose n·B/lat(B) covers it.
		for r := range assign {
			assign[r] = len(p.P) - 1
			for a := range p.P {
				m := &p.t.Models[p.P[a].Models[0]]
				B := len(m.LatUs) - 1
				if float64(p.hw.N)*float64(B)/(m.Lat(B)/1e6) >= p.q[r] {
					assign[r] = a
					break
				}
			}
		}
	}
	minCount := map[int]int{}
	budget := p.opt.Budget
	if budget <= 0 {
		budget = 10000
	}
	downgrade := func(r int) error {
		if assign[r] >= len(p.P)-1 {
			// [ours] r already runs the cheapest cascade: the shortfall comes from memory or
			// GPU time the other ranges' models take, so a range using the most
			// memory-hungry model gives way (the highest such range).
			best, bestMem := -1, int64(-1)
			for r2 := n - 1; r2 >= 0; r2-- {
				if assign[r2] >= len(p.P)-1 {
					continue
				}
				var mem int64
				for _, m := range p.P[assign[r2]].Models {
					var b int64
					for _, x := range p.t.Models[m].Parts {
						b += x
					}
					mem = max(mem, b)
				}
				if mem > bestMem {
					best, bestMem = r2, mem
				}
			}
			if best >= 0 {
				r = best
			}
		}
		assign[r]++
		if assign[r] >= len(p.P) {
			return p.infeasible(r)
		}
		// [ours] a higher-QPS range never keeps a more accurate (slower) cascade than a
		// lower one that had to give way: it would fail the same way.
		for r2 := r + 1; r2 < n; r2++ {
			assign[r2] = max(assign[r2], assign[r])
		}
		return nil
	}
	for it := 0; it < budget; it++ {
		p.iters++
		if err := p.ctx.Err(); err != nil {
			return nil, nil, err
		}
		// SP3 quick reject (§4.4): Σ λ_m·rt(m) > n_gpus at the optimistic time.
		bad := -1
		for r := 0; r < n && bad < 0; r++ {
			if p.q[r]*p.P[assign[r]].Work > float64(p.hw.N) {
				bad = r
			}
		}
		if bad >= 0 {
			if err := downgrade(bad); err != nil {
				return nil, nil, err
			}
			continue
		}
		pl, perr := p.place(assign, minCount)
		if perr != nil {
			if err := downgrade(perr.rng); err != nil {
				return nil, nil, err
			}
			continue
		}
		plKey := placementKey(pl)
		gears := make([]Gear, n)
		var fail *planErr
		for r := 0; r < n && fail == nil; r++ {
			g, e := p.gear(assign[r], r, pl, plKey)
			gears[r] = g
			fail = e
		}
		if fail == nil {
			if p.opt.Strategy != StrategyMSPlus {
				gears, pl = p.upgradePass(assign, minCount, gears, pl)
			}
			return gears, pl, nil
		}
		// SP4 → SP3: one more replica of the bottleneck model, if there is room to add
		// one; otherwise SP3 passes a throughput error to SP2.
		m := fail.model
		cnt := 0
		for _, r := range pl {
			if r.Model == m {
				cnt++
			}
		}
		maxCnt := len(p.t.fullReplication(p.hw, onlyModel(len(p.t.Models), m)))
		if m >= 0 && cnt < maxCnt && minCount[m] < cnt+1 && fullUse(pl, p.t, p.hw) {
			minCount[m] = cnt + 1
			continue
		}
		if err := downgrade(fail.rng); err != nil {
			return nil, nil, err
		}
	}
	return nil, nil, fmt.Errorf("%w: the co-optimization loop did not converge within %d iterations", planner.ErrNoSolution, budget)
}

// upgradePass is [ours] backtracking once the downgrade loop has converged. Algorithm 1
// (§4.1) only moves ranges to cheaper cascades, and a placement (OOM) error blames the
// highest range using the pruned model, so a range can give way early — while lower
// ranges still hold memory-hungry cascades that later give way too — and is never
// revisited: on the Llama stand-ins a 6-GPU plan served every range above 7.5 QPS with
// OpenLlama-3B alone (accuracy 0.52) although 3B→13B (0.61) fits there beside the other
// ranges, and planned lower accuracy than the 5-GPU plan. Each range, lowest QPS first,
// climbs to more accurate Pareto cascades (never above its lower neighbour's, the
// downgrade's monotone rule) while a full re-plan — placement, then every gear's LP and
// simulation — stays clean; two failed steps in a row among cascades of placed models end
// its climb. Accuracy only rises
// and every kept plan passed the same checks as the loop's.
func (p *planning) upgradePass(assign []int, minCount map[int]int, gears []Gear, pl []Replica) ([]Gear, []Replica) {
	n := len(assign)
	assign = slices.Clone(assign)
	try := make([]int, n)
	for r := 0; r < n; r++ {
		lo := 0
		if r > 0 {
			lo = assign[r-1]
		}
		misses, fresh := 0, 0
		for a := assign[r] - 1; a >= lo && misses < 2; a-- {
			if p.ctx.Err() != nil {
				return gears, pl
			}
			// Pareto neighbours alternate model sets: a cascade bringing a model the
			// placement lacks needs memory pruning may not find; its failures do not end
			// the climb, but only three such tries are made per range.
			placed := true
			for _, m := range p.P[a].Models {
				placed = placed && slices.ContainsFunc(pl, func(x Replica) bool { return x.Model == m })
			}
			if !placed {
				if fresh >= 3 {
					continue
				}
				fresh++
			}
			copy(try, assign)
			try[r] = a
			ok := p.q[r]*p.P[a].Work <= float64(p.hw.N) // SP3's quick reject
			var pl2 []Replica
			var g2 []Gear
			if ok {
				var perr *planErr
				pl2, perr = p.place(try, minCount)
				ok = perr == nil
			}
			if ok {
				key := placementKey(pl2)
				g2 = make([]Gear, n)
				for r2 := 0; r2 < n && ok; r2++ {
					var e *planErr
					g2[r2], e = p.gear(try[r2], r2, pl2, key)
					ok = e == nil
				}
			}
			if !ok {
				if placed {
					misses++
				}
				continue
			}
			misses = 0
			assign[r] = a
			gears, pl = g2, pl2
		}
	}
	return gears, pl
}

// fullUse reports whether pruning removed any replica (otherwise raising a replica count
// cannot help: every model already sits everywhere).
func fullUse(pl []Replica, t *Task, hw Hardware) bool {
	use := make([]bool, len(t.Models))
	for _, r := range pl {
		use[r.Model] = true
	}
	return len(t.fullReplication(hw, use)) > len(pl)
}

func onlyModel(n, m int) []bool {
	u := make([]bool, n)
	if m >= 0 && m < n {
		u[m] = true
	}
	return u
}

// infeasible names the best attainable point when range r has no cascade left.
func (p *planning) infeasible(r int) error {
	cheap := &p.P[len(p.P)-1]
	msg := fmt.Sprintf("no cascade serves %g QPS", p.q[r])
	if p.opt.Latency > 0 {
		// best attainable: the cheapest cascade's simulated latency at this range
		pl := p.t.fullReplication(p.hw, onlyModelSet(len(p.t.Models), cheap.Models))
		g := Gear{QLo: p.lo[r], QHi: p.q[r], C: *cheap, B1: 1}
		best := math.Inf(1)
		for _, b1 := range batchGrid {
			g.B1 = b1
			s := p.t.SimulateGear(pl, p.hw.N, &g, p.q[r], p.opt.Sim)
			if s.Sustained {
				best = math.Min(best, s.PLat)
			}
		}
		if !math.IsInf(best, 1) && best <= p.opt.Latency.Seconds() {
			msg += fmt.Sprintf(" together with the other ranges on %d GPU(s): %s alone meets p%g ≤ %v (%.0f ms), but no placement serves every range", p.hw.N, p.t.Names(cheap), p.opt.Percentile*100, p.opt.Latency, best*1000)
		} else if !math.IsInf(best, 1) {
			msg += fmt.Sprintf(" within p%g ≤ %v on %d GPU(s): the best attainable is %.0f ms (cascade %s)", p.opt.Percentile*100, p.opt.Latency, p.hw.N, best*1000, p.t.Names(cheap))
		} else {
			msg += fmt.Sprintf(" on %d GPU(s) at any latency: even %s cannot keep up", p.hw.N, p.t.Names(cheap))
		}
	}
	return fmt.Errorf("%w: %s", planner.ErrInfeasible, msg)
}

func onlyModelSet(n int, ms []int) []bool {
	u := make([]bool, n)
	for _, m := range ms {
		u[m] = true
	}
	return u
}
