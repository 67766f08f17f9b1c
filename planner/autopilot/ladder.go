// Package autopilot is the autopilot's solver (issue 35 item 3): it re-plans a served plan
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
	"sync"

	ap "github.com/plan-dev/plan/dataplane/autopilot"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

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

	base  *formats.Plan
	apps  []string
	steps int
	mu    sync.Mutex
	rungs map[int]rung
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
	return &Ladder{Resolve: resolve, Deploy: deploy, base: base, apps: apps, steps: steps, rungs: map[int]rung{}}, nil
}

// Steps returns the number of rungs.
func (l *Ladder) Steps() int { return l.steps }

// Cluster returns rung k's cluster: every pool keeps ⌈count·k/steps⌉ GPUs, at least one.
func (l *Ladder) Cluster(k int) *formats.Cluster {
	c := *l.base.Provenance.Embedded.Cluster
	c.GPUs = append([]formats.GPUPool(nil), c.GPUs...)
	for i := range c.GPUs {
		p := &c.GPUs[i]
		p.Count = max(1, int(math.Ceil(float64(p.Count*k)/float64(l.steps)-1e-9)))
		if p.PerServer > p.Count {
			p.PerServer = p.Count
		}
	}
	return &c
}

// Rung solves (or recalls) rung k ∈ [1, steps].
func (l *Ladder) Rung(ctx context.Context, k int) (ap.Candidate, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.rungs[k]; ok {
		return r.c, r.err
	}
	c, err := l.solve(ctx, k)
	if ctx.Err() == nil {
		l.rungs[k] = rung{c, err}
	}
	return c, err
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
	for i, name := range l.apps {
		found := false
		for _, a := range dep.Apps {
			if a.Name == name {
				c.Capacity[i], found = a.RateRPS, true
			}
		}
		if !found {
			return ap.Candidate{}, fmt.Errorf("autopilot: the re-solved plan serves no application %q", name)
		}
	}
	cl := p.Cluster
	if cl == nil && p.Provenance.Embedded != nil {
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
func (l *Ladder) Solve(ctx context.Context, d ap.Demand) (ap.Candidate, error) {
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
