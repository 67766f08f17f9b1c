package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestSearchGuardAdmit: a step is admitted while half of what it is expected to take fits
// before the deadline: one run, the run at load 1 alone (1 s here) times its load; several,
// the batch at load 1 side by side (2 s) times the largest load, or the loads' total over
// the runs side by side (two) where that is more. Once a step is not admitted, the search
// has stopped and admits nothing more. No guard admits all.
func TestSearchGuardAdmit(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		left  time.Duration // deadline − now
		runs  int
		loads []float64
		ok    bool
	}{
		{"one run at 2× (2 s): half fits 1.1 s", 1100 * time.Millisecond, 1, []float64{2}, true},
		{"one run at 2× (2 s): half does not fit 0.9 s", 900 * time.Millisecond, 1, []float64{2}, false},
		{"two replications side by side at 1× (2 s): half fits 1.1 s", 1100 * time.Millisecond, 2, []float64{1}, true},
		{"two replications: half does not fit 0.9 s", 900 * time.Millisecond, 2, []float64{1}, false},
		{"the grid below 1: its total over two (4.1 s), half fits 2.1 s", 2100 * time.Millisecond, 1, predictBelow, true},
		{"the grid below 1: half does not fit 2 s", 2 * time.Second, 1, predictBelow, false},
		{"a passed deadline", -time.Second, 1, []float64{0.25}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newSearchGuard(context.Background(), base.Add(tc.left), time.Second, 2*time.Second, 2, func() time.Time { return base })
			defer g.close()
			err := g.admit(tc.runs, tc.loads...)
			if (err == nil) != tc.ok || g.isStopped() == tc.ok {
				t.Fatalf("admit(%d, %v) = %v, stopped %v: want admitted %v", tc.runs, tc.loads, err, g.isStopped(), tc.ok)
			}
			if !tc.ok && !errors.Is(g.admit(1, 0.01), errSearchStopped) {
				t.Fatal("a stopped search admitted a later step")
			}
		})
	}
	var none *searchGuard
	if err := none.admit(100, 8); err != nil || none.isStopped() {
		t.Fatalf("no guard: admit %v, stopped %v", err, none.isStopped())
	}
	if g := newSearchGuard(context.Background(), time.Time{}, time.Second, time.Second, 2, time.Now); g != nil {
		t.Fatal("a zero deadline made a guard")
	}
}

// TestSearchGuardGridFits: the grid below 1 runs as one step where it and its top load's
// replications are expected to end before the deadline, whole (not admitShare of it): with
// a batch at load 1 of 2 s over two runs side by side, the grid 4.1 s and 0.95's two
// replications 1.9 s. Without a guard it always runs; asking stops nothing.
func TestSearchGuardGridFits(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		left time.Duration
		fits bool
	}{{6 * time.Second, true}, {5900 * time.Millisecond, false}, {-time.Second, false}} {
		g := newSearchGuard(context.Background(), base.Add(tc.left), time.Second, 2*time.Second, 2, func() time.Time { return base })
		if got := g.gridFits(); got != tc.fits || g.isStopped() {
			t.Errorf("%s left: gridFits %v, stopped %v; want %v, not stopped", tc.left, got, g.isStopped(), tc.fits)
		}
		g.close()
	}
	var none *searchGuard
	if !none.gridFits() {
		t.Error("no guard: the grid does not fit")
	}
}

// TestSearchGuardCheck: a step's error is the search's stop where the deadline cancelled
// its runs, and stays what it was where the caller cancelled or the run failed on its own.
func TestSearchGuardCheck(t *testing.T) {
	failed := errors.New("deploy failed")
	passed := func() *searchGuard {
		return newSearchGuard(context.Background(), time.Now().Add(-time.Second), time.Second, time.Second, 2, time.Now)
	}
	g := passed()
	<-g.ctx.Done()
	if err := g.check(fmt.Errorf("interrupted: %w", context.Cause(g.ctx))); !errors.Is(err, errSearchStopped) || !g.isStopped() {
		t.Fatalf("a run the deadline cancelled: %v, stopped %v", err, g.isStopped())
	}
	g = passed()
	if err := g.check(context.DeadlineExceeded); !errors.Is(err, errSearchStopped) {
		t.Fatalf("Parallel's error at the deadline: %v", err)
	}
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	g = newSearchGuard(parent, time.Now().Add(time.Hour), time.Second, time.Second, 2, time.Now)
	if err := g.check(context.Canceled); !errors.Is(err, context.Canceled) || g.isStopped() {
		t.Fatalf("the caller's cancellation: %v, stopped %v", err, g.isStopped())
	}
	g = newSearchGuard(context.Background(), time.Now().Add(time.Hour), time.Second, time.Second, 2, time.Now)
	if err := g.check(failed); err != failed || g.isStopped() {
		t.Fatalf("a run's own failure: %v, stopped %v", err, g.isStopped())
	}
}

// ticking is a clock that moves step on at every reading: a search under it stops after a
// fixed number of steps, whatever the machine's speed.
type ticking struct {
	t    time.Time
	step time.Duration
}

func (c *ticking) now() time.Time {
	c.t = c.t.Add(c.step)
	return c.t
}

// TestCompleteByDeadline: a prediction completed by a deadline already passed stops at
// once, with the loads at 1 alone tried and what they establish; one stopped part way (a
// clock that runs out after a few steps) reports the loads it tried; either's headroom and
// sustained rates are at most the complete search's, it says it stopped, it validates, and
// it is not kept: Complete afterwards searches in full, as a prediction never stopped does.
func TestCompleteByDeadline(t *testing.T) {
	cfg, plan, over := searchCases(t)
	for _, tc := range []struct {
		name string
		in   PredictInput
		// partWay is the deadline, after the start by the ticking clock, that stops the
		// search after its first steps: above 1, the run at 2× (its replications do not
		// fit); below, where the grid and its top load's replications (3 s expected) fit
		// from the first reading, the grid, and where they do not, the grid from its top.
		// tried and headroom are what the search stopped part way tried and established:
		// above 1, load 1 held (the run at 2× held once, unreplicated); below, the grid,
		// 0.9 replicated and held, and the bisection toward 0.9125 not begun; from the
		// top (a clock moving half a second a reading), 0.95 missed beside its
		// replications, then 0.9 and 0.8 held, the lower loads skipped, 0.9 replicated and
		// held, and the bisection toward 0.9125 not begun.
		partWay  time.Duration
		tick     time.Duration // the clock's step: a second where zero
		tried    []float64
		headroom float64
	}{
		{"holds at its rates", PredictInput{Plan: plan, Dep: cfg.Dep, Policies: cfg.Policies, Policy: cfg.Policy.Policy},
			2500 * time.Millisecond, 0, []float64{1, 2}, 1},
		{"misses at its rates", PredictInput{Plan: &formats.Plan{}, Dep: &over, Policies: testPolicies, Policy: "ppipe"},
			4200 * time.Millisecond, 0, []float64{0.25, 0.5, 0.7, 0.8, 0.9, 0.95, 1}, 0.9},
		{"misses at its rates, the grid does not fit", PredictInput{Plan: &formats.Plan{}, Dep: &over, Policies: testPolicies, Policy: "ppipe"},
			2900 * time.Millisecond, 500 * time.Millisecond, []float64{0.8, 0.9, 0.95, 1}, 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Seed, in.SpanScale = 1, 0.1
			whole, err := Predict(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			if whole.HeadroomSearch != nil {
				t.Fatalf("a search without a deadline says it stopped: %+v", whole.HeadroomSearch)
			}
			lowerBound := func(t *testing.T, got *formats.Prediction) {
				t.Helper()
				h := got.HeadroomSearch
				if h == nil || !h.StoppedEarly || h.Reason != formats.SearchStoppedDeadline || !slices.Contains(h.LoadsTried, 1) || !slices.IsSorted(h.LoadsTried) {
					t.Fatalf("headroom_search %+v: want stopped early at the time limit, load 1 among the loads tried", h)
				}
				if got.Headroom > whole.Headroom {
					t.Errorf("headroom %g past the complete search's %g", got.Headroom, whole.Headroom)
				}
				for i, a := range got.Apps {
					if a.SustainedRPS > whole.Apps[i].SustainedRPS {
						t.Errorf("%s: sustained %g req/s past the complete search's %g", a.Name, a.SustainedRPS, whole.Apps[i].SustainedRPS)
					}
				}
				rest := *got
				rest.HeadroomSearch, rest.Headroom, rest.Apps = nil, whole.Headroom, slices.Clone(got.Apps)
				for i := range rest.Apps {
					rest.Apps[i].SustainedRPS = whole.Apps[i].SustainedRPS
				}
				if !reflect.DeepEqual(&rest, whole) {
					t.Errorf("the stopped prediction differs from the complete one past its search:\n%+v\n%+v", &rest, whole)
				}
				c := *plan
				c.Prediction = got
				for _, e := range c.Validate(intree.Sections()) {
					if strings.Contains(e.Error(), "headroom") {
						t.Errorf("a stopped prediction does not validate: %v", e)
					}
				}
			}

			p, err := StartPrediction(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.CompleteBy(t.Context(), time.Now().Add(-time.Second))
			if err != nil {
				t.Fatal(err)
			}
			lowerBound(t, got)
			if !reflect.DeepEqual(got.HeadroomSearch.LoadsTried, []float64{1}) {
				t.Errorf("a passed deadline tried loads %v, want only 1", got.HeadroomSearch.LoadsTried)
			}
			if full, err := p.Complete(t.Context()); err != nil || !reflect.DeepEqual(full, whole) {
				t.Fatalf("Complete after a stopped search: %v\n%+v\nwant\n%+v", err, full, whole)
			}

			// Part way: each clock reading moves tick on, a batch at load 1 takes 1 s, and
			// the deadline is an hour ahead in wall time, so only the clock stops it.
			p, err = StartPrediction(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			clock := &ticking{t: time.Now().Add(time.Hour), step: cmp.Or(tc.tick, time.Second)}
			p.now, p.one, p.batch = clock.now, time.Second, time.Second
			got, err = p.CompleteBy(t.Context(), clock.t.Add(tc.partWay))
			if err != nil {
				t.Fatal(err)
			}
			lowerBound(t, got)
			if !reflect.DeepEqual(got.HeadroomSearch.LoadsTried, tc.tried) || got.Headroom != tc.headroom || got.Headroom == whole.Headroom {
				t.Errorf("stopped part way: loads %v, headroom %g (the complete search's %g); want loads %v, headroom %g",
					got.HeadroomSearch.LoadsTried, got.Headroom, whole.Headroom, tc.tried, tc.headroom)
			}
		})
	}
}

// TestStartPredictionDeadline: a deadline ends the runs at the plan's rates. Passed, load 1
// is cancelled at once with ErrPredictionDeadline; a run cut part way ends soon after the
// deadline (the engine looks at its context every CancelCheckEvents events), not when its
// span is simulated; a deadline that leaves the runs their time changes nothing, and the
// headroom search after them is not bound by it.
func TestStartPredictionDeadline(t *testing.T) {
	cfg, plan, _ := searchCases(t)
	in := PredictInput{Plan: plan, Dep: cfg.Dep, Policies: cfg.Policies, Policy: cfg.Policy.Policy, Seed: 1, SpanScale: 0.1}
	whole, err := Predict(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}

	passed := in
	passed.Deadline = time.Now().Add(-time.Second)
	if _, err := StartPrediction(t.Context(), passed); !errors.Is(err, ErrPredictionDeadline) {
		t.Fatalf("a passed deadline: %v, want ErrPredictionDeadline", err)
	}

	// Part way: the whole span (10× this one) takes far longer than the 20 ms allowed.
	long := in
	long.SpanScale = 1
	long.Deadline = time.Now().Add(20 * time.Millisecond)
	began := time.Now()
	_, err = StartPrediction(t.Context(), long)
	took := time.Since(began)
	if !errors.Is(err, ErrPredictionDeadline) {
		t.Fatalf("a deadline 20 ms ahead: %v after %s, want ErrPredictionDeadline", err, took)
	}
	t.Logf("cut at 20 ms, returned after %s", took)

	ample := in
	ample.Deadline = time.Now().Add(time.Hour)
	p, err := StartPrediction(t.Context(), ample)
	if err != nil {
		t.Fatal(err)
	}
	if p.cfg.Ctx != nil {
		t.Error("the runs' deadline context outlives StartPrediction")
	}
	got, err := p.Complete(t.Context())
	if err != nil || !reflect.DeepEqual(got, whole) {
		t.Fatalf("with an ample deadline: %v\n%+v\nwant\n%+v", err, got, whole)
	}
}
