package autopilot

import (
	"context"
	"fmt"
	"runtime"

	ap "github.com/plan-dev/plan/dataplane/autopilot"
)

// Pre-solved rungs (serve and simulate agree on a step up). Simulate re-solves in
// zero virtual time; serve solves in wall time (0.6–1 s for the demo plan's six rungs on a
// loaded 2-core machine), during which the shrunk plan is overloaded. Serve therefore solves
// ahead, on a goroutine of its own after every switch and at start, the rungs a next re-solve
// from the served rung asks for first, so that a step up usually finds them cached and
// switches as soon as the loop decides — as simulate does.
//
// Every rung solve takes one of SolverSlots slots: with GOMAXPROCS P's, at most
// GOMAXPROCS−1 solves run at once (at least one), so a P is always left to the request
// path (HTTP handlers, the driver's event loop), whose goroutines would otherwise queue
// behind a busy solver for up to the scheduler's 10 ms time slice — most of a 14 ms SLO.

// SolverSlots is how many rung solves may run at once: GOMAXPROCS−1, at least 1.
func SolverSlots() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// rungEntry is one rung's solve: done closes once c and err are set (ok) or the solve was
// cancelled (!ok: the entry left the cache, and a waiter solves it again).
type rungEntry struct {
	done chan struct{}
	c    ap.Candidate
	err  error
	ok   bool
}

// rung returns rung k, solving it unless it is cached or being solved (then it waits).
func (l *Ladder) rung(ctx context.Context, k int) (ap.Candidate, error) {
	for {
		l.mu.Lock()
		e, found := l.rungs[k]
		if !found {
			e = &rungEntry{done: make(chan struct{})}
			l.rungs[k] = e
			l.mu.Unlock()
			l.fill(ctx, k, e)
		} else {
			l.mu.Unlock()
			select {
			case <-e.done:
			case <-ctx.Done():
				return ap.Candidate{}, ctx.Err()
			}
		}
		if e.ok {
			return e.c, e.err
		}
		if err := ctx.Err(); err != nil {
			return ap.Candidate{}, err
		}
		// Its solver was cancelled (a prefetch that shutdown or a newer switch ended): solve
		// it here.
	}
}

// fill solves rung k into e within a solver slot. A solve cut short by ctx is not cached.
func (l *Ladder) fill(ctx context.Context, k int, e *rungEntry) {
	defer close(e.done)
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
			defer func() { <-l.slots }()
		case <-ctx.Done():
			l.forget(k)
			return
		}
	}
	c, err := l.solve(ctx, k)
	if ctx.Err() != nil {
		l.forget(k)
		return
	}
	e.c, e.err, e.ok = c, err, true
}

func (l *Ladder) forget(k int) {
	l.mu.Lock()
	delete(l.rungs, k)
	l.mu.Unlock()
}

// Cached reports whether rung k is solved (successfully or not).
func (l *Ladder) Cached(k int) bool {
	l.mu.Lock()
	e, found := l.rungs[k]
	l.mu.Unlock()
	if !found {
		return false
	}
	select {
	case <-e.done:
		return e.ok
	default:
		return false
	}
}

// RungOf returns the rung whose cluster holds gpus GPUs: the highest rung with at most as
// many (1 when even rung 1 holds more).
func (l *Ladder) RungOf(gpus int) int {
	k := 1
	for j := 1; j <= l.steps; j++ {
		n := 0
		for _, g := range l.Cluster(j).GPUs {
			n += g.Count
		}
		if n <= gpus {
			k = j
		}
	}
	return k
}

// PrefetchUp is how far up Prefetch solves: past k+2, on until a rung serves PrefetchUp
// times what rung k serves (every application), so that a load that doubles finds its rung.
const PrefetchUp = 2.0

// PrefetchOrder is the order Prefetch solves the rungs around rung k in: the whole cluster
// (every Solve asks for it first, to check the plan has a capacity model), k+1 and k+2 (a
// step up: Solve walks up from rung 1, and the rungs up to k are cached from the solve that
// chose k), then the rungs below k, lowest first (a step down: Solve walks them in that
// order; after a switch of the loop's they are cached already, so this is k−1 at most, but
// the operator's plan served at start has none cached). Prefetch goes on up past k+2 while
// the rungs serve less than PrefetchUp times rung k.
func (l *Ladder) PrefetchOrder(k int) []int {
	order := []int{l.steps}
	for _, j := range []int{k + 1, k + 2} {
		if j < l.steps {
			order = append(order, j)
		}
	}
	for j := 1; j < min(k, l.steps); j++ {
		order = append(order, j)
	}
	return order
}

// Prefetch solves, one at a time, the rungs around rung k that are not cached
// (PrefetchOrder, then on up to PrefetchUp times rung k's capacity), and returns how many it
// solved. It is meant for a goroutine of its own: it stops at ctx's end, and before each
// rung once a Solve is under way (Solve solves what it needs itself, and a rung the
// prefetch is solving is shared with it, not solved twice).
func (l *Ladder) Prefetch(ctx context.Context, k int) (int, error) {
	n := 0
	step := func(j int) (ap.Candidate, bool, error) {
		if l.solving.Load() > 0 {
			return ap.Candidate{}, false, nil
		}
		if err := ctx.Err(); err != nil {
			return ap.Candidate{}, false, err
		}
		if !l.Cached(j) {
			n++
		}
		c, err := l.rung(ctx, j)
		if ctx.Err() != nil {
			return ap.Candidate{}, false, ctx.Err()
		}
		return c, err == nil, nil
	}
	for _, j := range l.PrefetchOrder(k) {
		if _, ok, err := step(j); err != nil || (!ok && l.solving.Load() > 0) {
			return n, err
		}
	}
	base, ok := l.cachedRung(k)
	for j := k + 3; ok && j < l.steps && !serves(l.peek(j-1), base, PrefetchUp); j++ {
		if _, _, err := step(j); err != nil || l.solving.Load() > 0 {
			return n, err
		}
	}
	return n, nil
}

// cachedRung returns rung k's candidate when it is cached and solved.
func (l *Ladder) cachedRung(k int) (ap.Candidate, bool) {
	if !l.Cached(k) {
		return ap.Candidate{}, false
	}
	l.mu.Lock()
	e := l.rungs[k]
	l.mu.Unlock()
	return e.c, e.err == nil
}

// peek is rung j's capacity when cached and solved (nil otherwise).
func (l *Ladder) peek(j int) []float64 {
	c, ok := l.cachedRung(j)
	if !ok {
		return nil
	}
	return c.Capacity
}

// serves reports whether capacity c is at least factor times base's for every application
// (false for an unknown c).
func serves(c []float64, base ap.Candidate, factor float64) bool {
	if c == nil || len(c) != len(base.Capacity) {
		return false
	}
	for i, x := range c {
		if x < factor*base.Capacity[i] {
			return false
		}
	}
	return true
}

// PrefetchAround is Prefetch around the rung of the served plan c (RungOf its GPUs), the
// form serve's autopilot calls.
func (l *Ladder) PrefetchAround(ctx context.Context, c ap.Candidate) (int, error) {
	return l.Prefetch(ctx, l.RungOf(c.GPUs))
}

// PrefetchAround implements serve/autopilot's Prefetcher for the cost objective: it solves the grid
// demands a step up from the served plan c asks for first — c's capacity (every
// application alike) times RateStep, RateStep², … up to PrefetchUp times it, rounded up to
// the grid as Solve rounds — one at a time, stopping at ctx's end and before each once a
// Solve is under way. It returns how many it solved. A step up whose demand changes the
// mix between applications asks for other grid points, and solves them itself.
func (r *RateSolver) PrefetchAround(ctx context.Context, c ap.Candidate) (int, error) {
	n := 0
	for f := RateStep; f <= PrefetchUp*RateStep; f *= RateStep {
		if r.solving.Load() > 0 {
			return n, nil
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		rates := make([]float64, len(c.Capacity))
		for i, x := range c.Capacity {
			rates[i] = gridUp(x * f)
		}
		r.mu.Lock()
		_, cached := r.cache[fmt.Sprint(rates)]
		r.mu.Unlock()
		if cached {
			continue
		}
		if _, err := r.solve(ctx, rates); err != nil && ctx.Err() != nil {
			return n, ctx.Err()
		}
		n++
	}
	return n, nil
}
