package solver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// Automatic racing (Options.Race == 0).
const (
	// RaceMinTimeLimit is the smallest Options.TimeLimit with which a MIP
	// races automatically (0, no limit, races too). A race returns an
	// optimal solution, but which one, and its bound and node count, depend
	// on timing; plan's planners promise byte-identical plans under
	// --deterministic with their default limits (ppipe 60 s, PARD 10 s)
	// and do not pass Options.Deterministic down, so the threshold lies
	// above those defaults: races are for solves a user lets run long.
	RaceMinTimeLimit = 2 * time.Minute
	// RaceDelay is how long the first instance runs alone before the other
	// racers start.
	RaceDelay = time.Second
	// maxAutoRacers bounds automatic races: every racer holds a full copy
	// of HiGHS's working memory.
	maxAutoRacers = 4
)

// racers returns the number of instances to run and how long to wait
// before starting all but the first.
func (o *Options) racers(m *Model) (int, time.Duration) {
	switch {
	case o.Deterministic || m.nInt == 0 || o.Race == 1:
		return 1, 0
	case o.Race > 1:
		return o.Race, 0
	case o.TimeLimit != 0 && o.TimeLimit < RaceMinTimeLimit:
		return 1, 0
	}
	if n := min(runtime.GOMAXPROCS(0), maxAutoRacers); n >= 2 {
		return n, RaceDelay
	}
	return 1, 0
}

// setRaceOptions diversifies racer v >= 1: another random seed, and more or
// less effort on primal heuristics than HiGHS's default 0.05.
func setRaceOptions(ctx context.Context, in *highs.Instance, v int) error {
	if err := in.SetIntOption(ctx, "random_seed", v); err != nil {
		return err
	}
	effort := [...]float64{0.05, 0.2, 0.02}[v%3]
	return in.SetDoubleOption(ctx, "mip_heuristic_effort", effort)
}

// outcome is what one racer ended with.
type outcome struct {
	i        int
	res      *Result
	err      error
	panicked bool
	panicVal any
}

// decisive reports whether o settles the race.
func (o *outcome) decisive() bool {
	if o.err != nil || o.res == nil {
		return false
	}
	switch o.res.Status {
	case StatusOptimal, StatusInfeasible, StatusUnbounded:
		return true
	}
	return false
}

// race solves m with n diversified instances. Racer 0 runs exactly what a
// single solve would (same options, Log); racers 1..n-1 start after delay
// unless racer 0 has finished by then.
func race(ctx context.Context, eng *highs.Engine, m *Model, opts Options, start time.Time, n int, delay time.Duration) (*Result, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var prog *raceProgress
	if opts.Progress != nil {
		prog = &raceProgress{fn: opts.Progress, max: m.sense == Maximize, nodes: make([]int64, n)}
	}
	out := make(chan outcome, n)
	launch := func(i int) {
		s := &session{ctx: rctx, m: m, opts: opts, start: start, variant: i}
		if i == 0 {
			s.log = opts.Log
		}
		if prog != nil {
			s.progress = func(p Progress) { prog.update(i, p) }
		}
		go func() {
			o := outcome{i: i}
			defer func() {
				// A panicking Progress callback is re-raised in the caller,
				// as without a race, once every racer has stopped.
				if r := recover(); r != nil {
					o.panicked, o.panicVal = true, r
				}
				out <- o
			}()
			o.res, o.err = solveOne(rctx, eng, s)
		}()
	}

	launch(0)
	started := 1
	var later <-chan time.Time
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		later = t.C
	} else {
		for ; started < n; started++ {
			launch(started)
		}
	}
	done := make([]outcome, 0, n)
	winner := -1
	for len(done) < started {
		select {
		case <-later:
			later = nil
			if winner < 0 {
				for ; started < n; started++ {
					launch(started)
				}
			}
		case o := <-out:
			done = append(done, o)
			switch {
			case o.panicked:
				cancel()
			case winner < 0 && o.decisive():
				winner = len(done) - 1
				cancel()
			}
		}
	}
	for _, o := range done {
		if o.panicked {
			panic(o.panicVal)
		}
	}
	if winner >= 0 {
		return done[winner].res, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCanceled, err)
	}
	return bestOf(m, done)
}

// bestOf merges outcomes none of which settled the race (time limit): the
// best incumbent, the best proven bound. Without any result it returns the
// error of the lowest-numbered racer.
func bestOf(m *Model, done []outcome) (*Result, error) {
	better := func(a, b float64) bool { // a strictly better objective than b
		if m.sense == Maximize {
			return a > b
		}
		return a < b
	}
	var best *outcome
	var firstErr *outcome
	bound := math.NaN()
	for k := range done {
		o := &done[k]
		if o.res == nil {
			if o.err != nil && !errors.Is(o.err, ErrCanceled) && (firstErr == nil || o.i < firstErr.i) {
				firstErr = o
			}
			continue
		}
		if !math.IsNaN(o.res.Bound) && (math.IsNaN(bound) || better(bound, o.res.Bound)) {
			// A higher lower bound (minimizing) is the tighter one.
			bound = o.res.Bound
		}
		switch {
		case best == nil,
			o.res.HasSolution && !best.res.HasSolution,
			o.res.HasSolution == best.res.HasSolution && better(o.res.Objective, best.res.Objective),
			o.res.HasSolution == best.res.HasSolution && o.res.Objective == best.res.Objective && o.i < best.i:
			best = o
		}
	}
	if best == nil {
		if firstErr != nil {
			return nil, firstErr.err
		}
		return nil, fmt.Errorf("%w: every racer was canceled", ErrSolveFailed)
	}
	res := *best.res
	if !math.IsNaN(bound) && bound != res.Bound {
		res.Bound = bound
		if res.HasSolution {
			res.Gap = relGap(res.Objective, bound)
		}
	}
	return &res, nil
}

// relGap is |obj-bound| / |obj| (0 if both are 0, +Inf if only obj is).
func relGap(obj, bound float64) float64 {
	d := math.Abs(obj - bound)
	switch {
	case d == 0:
		return 0
	case obj == 0:
		return math.Inf(1)
	}
	return d / math.Abs(obj)
}

// raceProgress merges the racers' progress into one view and calls the
// user's callback one at a time.
type raceProgress struct {
	mu    sync.Mutex
	fn    func(Progress)
	max   bool
	nodes []int64 // latest node count per racer
	best  Progress
	any   bool
}

func (r *raceProgress) update(i int, p Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes[i] = p.Nodes
	b := &r.best
	if !r.any {
		*b, r.any = p, true
	} else {
		better := func(x, y float64) bool { return (r.max && x > y) || (!r.max && x < y) }
		if p.HasIncumbent && (!b.HasIncumbent || better(p.Incumbent, b.Incumbent)) {
			b.Incumbent, b.HasIncumbent = p.Incumbent, true
		}
		// The tightest bound is the largest lower bound when minimizing.
		if !math.IsNaN(p.Bound) && (math.IsNaN(b.Bound) || better(b.Bound, p.Bound)) {
			b.Bound = p.Bound
		}
	}
	b.Elapsed = max(b.Elapsed, p.Elapsed)
	b.Nodes = 0
	for _, n := range r.nodes {
		b.Nodes += n
	}
	b.Gap = math.Inf(1)
	if b.HasIncumbent && !math.IsInf(b.Bound, 0) && !math.IsNaN(b.Bound) {
		b.Gap = relGap(b.Incumbent, b.Bound)
	}
	r.fn(*b)
}
