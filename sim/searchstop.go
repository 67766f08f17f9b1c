package sim

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sort"
	"time"
)

// A prediction's headroom search under a deadline (Prediction.CompleteBy): `plan solve
// --time-limit` bounds the whole command, and the search below a plan that misses at its
// rates costs several times what the search above one that holds does, so no reserve made
// before it runs fits every plan. The search stops before a step it expects to end past
// the deadline, and a run still going at the deadline is cancelled (Options.Ctx); what it
// established by then stands (each load held in its first run and every replication), and
// the prediction says it stopped (formats.HeadroomSearch), its headroom and sustained rates
// then lower bounds of a complete search's.

// errSearchStopped ends a step of the headroom search its deadline does not leave room for.
var errSearchStopped = errors.New("the headroom search stopped at its deadline")

// searchGuard decides whether a step of the search still fits before the deadline.
type searchGuard struct {
	parent context.Context // the caller's: its cancellation (SIGINT) is an error, not a stop
	ctx    context.Context // parent, also cancelled at the deadline
	cancel context.CancelFunc
	// deadline is when the search must have ended; now the clock it is read by.
	deadline time.Time
	now      func() time.Time
	// one is the wall time of the plan's own run at load 1, alone, and batch that of its
	// replications at load 1, side by side: the measure of what each further step costs on
	// this machine, as loaded as it is now.
	one, batch time.Duration
	// width is how many runs a step runs side by side (Options.Parallel, else GOMAXPROCS).
	width int
	// stopped says the search stopped early; tried are the loads it simulated (first runs).
	stopped bool
}

// newSearchGuard bounds a search by deadline (zero: none, and the guard is nil: every step
// runs). one and batch are the measured wall times of a run at load 1 alone and of runs at
// load 1 side by side, par the parallelism.
func newSearchGuard(parent context.Context, deadline time.Time, one, batch time.Duration, par int, now func() time.Time) *searchGuard {
	if deadline.IsZero() {
		return nil
	}
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithDeadlineCause(parent, deadline, errSearchStopped)
	return &searchGuard{parent: parent, ctx: ctx, cancel: cancel, deadline: deadline, now: now, one: one, batch: batch, width: max(par, 1)}
}

// context is the context the search's runs heed (the caller's without a guard).
func (g *searchGuard) context(ctx context.Context) context.Context {
	if g == nil {
		return ctx
	}
	return g.ctx
}

// close releases the deadline's timer.
func (g *searchGuard) close() {
	if g != nil {
		g.cancel()
	}
}

// admit reports (nil) whether runs runs at each of loads, side by side as the search runs
// them, may end before the deadline. Their expected wall time grows with their loads'
// requests: one run, the run at load 1 alone times its load; several, the batch at load 1
// times the largest load, or the loads' total over the runs side by side where that is
// more. That is an upper bound (a run certain to fail stops early, settle.go, and a run
// just below a plan's limit simulates fewer requests than at load 1), so a step is started
// while admitShare of it fits; one still running at the deadline is cancelled, so starting
// it costs no time past the deadline. Where even that share does not fit, or the search
// already stopped, the search stops and admit returns errSearchStopped.
func (g *searchGuard) admit(runs int, loads ...float64) error {
	if g == nil {
		return nil
	}
	if g.stopped {
		return errSearchStopped
	}
	if g.now().Add(time.Duration(admitShare * float64(g.expect(runs, loads...)))).After(g.deadline) {
		g.stopped = true
		return errSearchStopped
	}
	return nil
}

// expect is the wall time admit expects runs runs at each of loads, side by side, to take.
func (g *searchGuard) expect(runs int, loads ...float64) time.Duration {
	var most, total float64
	for _, l := range loads {
		most, total = math.Max(most, l), total+l*float64(runs)
	}
	if n := runs * len(loads); n > 1 {
		return time.Duration(math.Max(most, total/float64(min(g.width, n))) * float64(g.batch))
	}
	return time.Duration(total * float64(g.one))
}

// gridFits says whether the grid below 1 (predictBelow) and the replications of its highest
// load are expected to end before the deadline (true without a guard): the least the grid
// needs to establish a load. Their whole expectation must fit, not admitShare of it, since
// what it chooses is how to search (sustainCheck.below), not whether to start a step the
// deadline may cancel.
func (g *searchGuard) gridFits() bool {
	if g == nil {
		return true
	}
	est := g.expect(1, predictBelow...) + g.expect(predictReplications, slices.Max(predictBelow))
	return !g.now().Add(est).After(g.deadline)
}

// check turns the error of a step whose runs the deadline cancelled into errSearchStopped
// (and marks the search stopped); any other error, the caller's cancellation included, is
// returned as it is.
func (g *searchGuard) check(err error) error {
	if err == nil || g == nil {
		return err
	}
	if errors.Is(err, errSearchStopped) || (g.parent.Err() == nil && g.ctx.Err() != nil) {
		g.stopped = true
		return errSearchStopped
	}
	return err
}

// admitShare is the share of a step's expected wall time that must fit before the deadline
// for it to start: on the PPipe regression cases under --time-limit 3s and 4s, admitting
// only steps whose whole expectation fitted stopped searches with 0.3–0.5 s left that the
// search before deadlines finished within the limit.
const admitShare = 0.5

// isStopped says whether the search has stopped early (false without a guard).
func (g *searchGuard) isStopped() bool { return g != nil && g.stopped }

// below runs the loads under 1 the search tries where load 1 misses (predictBelow) and
// returns their first runs. Where the grid fits before the deadline (searchGuard.gridFits;
// always without one) it runs as one step, side by side. Where it does not, it runs from
// its top: the highest load's first run beside its replications (sustainCheck.establish),
// then the rest, as many loads a step as run side by side, and it stops after the first
// step that leaves the lowest load tried held. A plan just short of its rates (the common
// case a short --time-limit meets) then has a load established before the deadline, where
// the whole grid would leave that load's replications no time (real-shaped PPipe cases at
// 2 s: the grid ended with 155 ms left, the replications needed 218). partial says it
// skipped lower loads; headroom then counts only the loads tried, so the caller reports the
// search as stopped early.
func (v *sustainCheck) below(ctx context.Context, g *searchGuard) (points []Point, partial bool, err error) {
	sweep := func(loads []float64) ([]Point, error) {
		if err := g.admit(1, loads...); err != nil {
			return nil, err
		}
		cfg := *v.cfg
		cfg.Loads = loads
		low, err := Sweep(ctx, &cfg)
		if err = g.check(err); err != nil {
			return nil, err
		}
		return low.Points, nil
	}
	if g.gridFits() {
		low, err := sweep(predictBelow)
		return low, false, err
	}
	loads := slices.Clone(predictBelow)
	sort.Sort(sort.Reverse(sort.Float64Slice(loads)))
	top, err := v.establish(ctx, loads[0])
	if err != nil {
		return nil, false, err
	}
	points = append(points, *top)
	for i := 1; headroom(points, v.j) == 0; i += g.width {
		step := loads[i:min(i+g.width, len(loads))]
		low, err := sweep(step)
		if err != nil {
			return points, false, err
		}
		points = append(points, low...)
		if i+len(step) >= len(loads) {
			return points, false, nil
		}
	}
	return points, true, nil
}
