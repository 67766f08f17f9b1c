// Package autopilot is the autopilot's solver: it re-plans a served plan
// for a forecast demand by re-solving the plan's own embedded inputs (the system's planner,
// as `plan check --resolve` does: PPipe's MILP, QLM's stochastic program) on a ladder of
// shrunken clusters, and picks the rung with the fewest GPUs whose plan serves the demand
// within the GPU budget. Rungs are solved lazily and cached, so a load that returns to a
// level it had costs no second solve. The loop itself (observe, forecast, decide) is
// dataplane/autopilot; this package is its Solver.
package autopilot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	ap "github.com/plan-dev/plan/dataplane/autopilot"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// ErrNoCapacityModel marks a plan whose planned rates do not follow its GPUs (a PARD or DyOrc
// plan states the workload's rates, not its capacity) and whose system has no capacity model
// (Ladder.Capacity; QLM's is planner/qlm PlanCapacity): the ladder cannot size it.
var ErrNoCapacityModel = errors.New("autopilot: the plan's planned rates do not follow its GPUs (they are the workload's, not its capacity)")

// DefaultSteps is how many rungs the ladder has: rung k gives every GPU pool ⌈k/Steps⌉ of
// its GPUs (rung Steps is the whole cluster).
const DefaultSteps = 16

// Ladder implements ap.Solver over one plan's embedded inputs.
type Ladder struct {
	// Resolve re-plans p from its embedded inputs (the system's planner.Checker.Resolve).
	Resolve func(ctx context.Context, p *formats.Plan) (*formats.Plan, error)
	// Deploy builds a plan's deployment (the registry's Deploy): its applications' planned
	// rates are the plan's capacity.
	Deploy func(p *formats.Plan) (*dataplane.Deployment, error)
	// Digest names a plan (serve's digest); nil: formats.Digest.
	Digest func(p *formats.Plan) (string, error)
	// Capacity is the system's capacity model (internal/registry/system.Sizing): the most each
	// application serves. nil: the deployment's planned rates.
	Capacity func(p *formats.Plan, dep *dataplane.Deployment) (map[string]float64, error)

	base  *formats.Plan
	apps  []string
	steps int
	mu    sync.Mutex
	rungs map[int]*rungEntry
	// slots bounds the rung solves that run at once (SolverSlots; nil: no bound), and
	// solving counts the Solve calls under way: a prefetch yields to them (prefetch.go).
	slots   chan struct{}
	solving atomic.Int32
}

type rung struct {
	c   ap.Candidate
	err error
}

// NewLadder makes the ladder of base (a plan with embedded inputs) with steps rungs (≤ 0:
// DefaultSteps). apps are the application names in the loop's order.
func NewLadder(base *formats.Plan, apps []string, steps int, resolve func(context.Context, *formats.Plan) (*formats.Plan, error), deploy func(*formats.Plan) (*dataplane.Deployment, error)) (*Ladder, error) {
	e := base.Provenance.Embedded
	switch {
	case e == nil || e.Cluster == nil:
		return nil, errors.New("autopilot: the plan embeds no cluster (provenance.embedded.cluster): it cannot be re-solved")
	case len(e.Cluster.Servers) > 0:
		return nil, errors.New("autopilot: the plan's cluster lists its servers explicitly (cluster.servers): the autopilot only scales gpus[].count")
	}
	if steps <= 0 {
		steps = DefaultSteps
	}
	return &Ladder{Resolve: resolve, Deploy: deploy, base: base, apps: apps, steps: steps, rungs: map[int]*rungEntry{},
		slots: make(chan struct{}, SolverSlots())}, nil
}

// Steps returns the number of rungs.
func (l *Ladder) Steps() int { return l.steps }

// Cluster returns rung k's cluster: every pool keeps ⌈count·k/steps⌉ GPUs, at least one.
func (l *Ladder) Cluster(k int) *formats.Cluster {
	c := *l.base.Provenance.Embedded.Cluster
	c.GPUs = append([]formats.GPUPool(nil), c.GPUs...)
	for i := range c.GPUs {
		p := &c.GPUs[i]
		p.Count = max(1, int(math.Ceil(float64(p.Count*k)/float64(l.steps)-absTol)))
		if p.PerServer > p.Count {
			p.PerServer = p.Count
		}
	}
	return &c
}

// Rung solves (or recalls) rung k ∈ [1, steps]. A rung another goroutine is solving (the
// prefetch) is waited for, not solved twice.
func (l *Ladder) Rung(ctx context.Context, k int) (ap.Candidate, error) {
	return l.rung(ctx, k)
}

func (l *Ladder) solve(ctx context.Context, k int) (ap.Candidate, error) {
	in := *l.base
	prov := in.Provenance
	emb := *prov.Embedded
	emb.Cluster = l.Cluster(k)
	prov.Embedded = &emb
	in.Provenance = prov
	in.Cluster = emb.Cluster
	p, err := l.Resolve(ctx, &in)
	if err != nil {
		return ap.Candidate{}, fmt.Errorf("rung %d/%d: %w", k, l.steps, err)
	}
	return l.Candidate(p)
}

// Candidate describes plan p for the loop: its digest, the GPUs its cluster holds and each
// application's planned rate.
func (l *Ladder) Candidate(p *formats.Plan) (ap.Candidate, error) {
	dep, err := l.Deploy(p)
	if err != nil {
		return ap.Candidate{}, err
	}
	c := ap.Candidate{Plan: p, Capacity: make([]float64, len(l.apps))}
	var capacity map[string]float64
	if l.Capacity != nil {
		if capacity, err = l.Capacity(p, dep); err != nil {
			return ap.Candidate{}, fmt.Errorf("autopilot: the plan's capacity: %w", err)
		}
	}
	for i, name := range l.apps {
		found := false
		for _, a := range dep.Apps {
			if a.Name == name {
				c.Capacity[i], found = a.RateRPS, true
			}
		}
		if capacity != nil {
			c.Capacity[i], found = capacity[name]
		}
		if !found {
			return ap.Candidate{}, fmt.Errorf("autopilot: the re-solved plan serves no application %q", name)
		}
	}
	cl := p.Cluster
	if p.Fleet != nil {
		// A cost plan's fleet is what it deploys (and pays for).
		for _, g := range p.Fleet.GPUsUsed {
			c.GPUs += g.Count
		}
		cl = nil
	} else if cl == nil && p.Provenance.Embedded != nil {
		cl = p.Provenance.Embedded.Cluster
	}
	if cl != nil {
		for _, g := range cl.GPUs {
			c.GPUs += g.Count
		}
	}
	digest := l.Digest
	if digest == nil {
		digest = func(p *formats.Plan) (string, error) { return formats.Digest(p) }
	}
	if c.Digest, err = digest(p); err != nil {
		return ap.Candidate{}, err
	}
	return c, nil
}

// Solve implements ap.Solver: the first rung (fewest GPUs) whose plan serves every rate of
// d within the budget; when none does, the rung within the budget that serves the largest
// share of the demand, marked OverBudget. A rung that fails to solve (too few GPUs for the
// SLO) is skipped.
//
// A plan whose capacity does not depend on its GPUs (its planned rates are planning inputs,
// not the most it serves) cannot be sized this way: when a smaller rung reports exactly the
// whole cluster's capacity, Solve fails with ErrNoCapacityModel and the loop keeps the plan.
func (l *Ladder) Solve(ctx context.Context, d ap.Demand) (ap.Candidate, error) {
	l.solving.Add(1)
	defer l.solving.Add(-1)
	full, ferr := l.Rung(ctx, l.steps)
	if ctx.Err() != nil {
		return ap.Candidate{}, ctx.Err()
	}
	var best ap.Candidate
	bestShare, found := -1.0, false
	var lastErr error
	for k := 1; k <= l.steps; k++ {
		c, err := l.Rung(ctx, k)
		if ctx.Err() != nil {
			return ap.Candidate{}, ctx.Err()
		}
		if err != nil {
			lastErr = err
			continue
		}
		if d.GPUBudget > 0 && c.GPUs > d.GPUBudget {
			break
		}
		if ferr == nil && k < l.steps && c.GPUs < full.GPUs && slices.Equal(c.Capacity, full.Capacity) {
			return ap.Candidate{}, fmt.Errorf("%w: %d GPUs serve %v rps, as many as the whole cluster's %d", ErrNoCapacityModel, c.GPUs, c.Capacity, full.GPUs)
		}
		share := math.Inf(1)
		for i, r := range d.Rates {
			if r > 0 && i < len(c.Capacity) {
				share = math.Min(share, c.Capacity[i]/r)
			}
		}
		if share >= 1 {
			return c, nil
		}
		if share > bestShare {
			best, bestShare, found = c, share, true
		}
	}
	if !found {
		if lastErr == nil {
			lastErr = fmt.Errorf("no rung fits the GPU budget %d", d.GPUBudget)
		}
		return ap.Candidate{}, fmt.Errorf("autopilot: no plan: %w", lastErr)
	}
	best.OverBudget = true
	return best, nil
}

// RateSolver implements ap.Solver for a plan solved with `--objective cost`: it
// re-solves the plan's embedded inputs with each model's rate_rps set to the demand, so the
// planner picks the least-cost fleet that serves it. Demands are rounded up to a geometric
// grid (RateStep) and their plans cached, so a load that returns costs no second solve.
type RateSolver struct {
	l     *Ladder
	mu    sync.Mutex
	cache map[string]rung
	// solving counts the Solve calls under way: a prefetch yields to them (prefetch.go).
	solving atomic.Int32
}

// RateStep is the ratio between neighbouring demands RateSolver solves for.
const RateStep = 1.1

// NewRateSolver makes the cost-objective solver of base, whose embedded workload must give
// each of the loop's applications a rate (formats.RateTargeter: PPipe's models, PARD's
// pipelines, CascadeServe's cascades, DyOrc's apps, QLM's llm_classes): a re-solve sets each
// one's rate to its application's demand.
func NewRateSolver(base *formats.Plan, apps []string, resolve func(context.Context, *formats.Plan) (*formats.Plan, error), deploy func(*formats.Plan) (*dataplane.Deployment, error)) (*RateSolver, error) {
	e := base.Provenance.Embedded
	var targets []formats.RateTarget
	if e != nil {
		targets = e.Workload.RateTargets()
	}
	if len(targets) == 0 {
		return nil, errors.New("autopilot: the cost objective re-solves a plan's embedded workload at each application's demand (provenance.embedded.workload): this plan embeds no workload application with a rate")
	}
	for _, a := range apps {
		if !slices.ContainsFunc(targets, func(t formats.RateTarget) bool { return t.Name == a }) {
			return nil, fmt.Errorf("autopilot: the plan's embedded workload has no application %q with a rate", a)
		}
	}
	return &RateSolver{l: &Ladder{Resolve: resolve, Deploy: deploy, base: base, apps: apps}, cache: map[string]rung{}}, nil
}

// SetCapacity sets the system's capacity model (Ladder.Capacity).
func (r *RateSolver) SetCapacity(f func(p *formats.Plan, dep *dataplane.Deployment) (map[string]float64, error)) {
	r.l.Capacity = f
}

// Candidate describes plan p for the loop.
func (r *RateSolver) Candidate(p *formats.Plan) (ap.Candidate, error) { return r.l.Candidate(p) }

// Solve implements ap.Solver: the least-cost plan for d's rates (rounded up to the grid);
// over d's GPU budget, the plan for the largest share of the demand that fits, marked
// OverBudget.
func (r *RateSolver) Solve(ctx context.Context, d ap.Demand) (ap.Candidate, error) {
	r.solving.Add(1)
	defer r.solving.Add(-1)
	for share, i := 1.0, 0; i < 24; share, i = share/RateStep, i+1 {
		rates := make([]float64, len(d.Rates))
		for k, x := range d.Rates {
			rates[k] = gridUp(x * share)
		}
		c, err := r.solve(ctx, rates)
		if err != nil {
			return ap.Candidate{}, err
		}
		if d.GPUBudget <= 0 || c.GPUs <= d.GPUBudget {
			c.OverBudget = i > 0
			return c, nil
		}
	}
	return ap.Candidate{}, fmt.Errorf("autopilot: no plan within the GPU budget %d", d.GPUBudget)
}

// gridUp rounds x > 0 up to the grid RateStep^k (1 rps at least).
func gridUp(x float64) float64 {
	if x <= 1 {
		return 1
	}
	return math.Pow(RateStep, math.Ceil(math.Log(x)/math.Log(RateStep)-absTol))
}

func (r *RateSolver) solve(ctx context.Context, rates []float64) (ap.Candidate, error) {
	key := fmt.Sprint(rates)
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.cache[key]; ok {
		return c.c, c.err
	}
	in := *r.l.base
	prov := in.Provenance
	emb := *prov.Embedded
	w := *emb.Workload
	setRates(&w, r.l.apps, rates) // the models' (or LLM classes') rate_rps (classes.go)
	emb.Workload = &w
	prov.Embedded = &emb
	in.Provenance = prov
	p, err := r.l.Resolve(ctx, &in)
	var c ap.Candidate
	if err == nil {
		c, err = r.l.Candidate(p)
	}
	if err != nil {
		err = fmt.Errorf("re-solving for %v rps: %w", rates, err)
	}
	if ctx.Err() == nil {
		r.cache[key] = rung{c, err}
	}
	return c, err
}
