package sim

import (
	"context"
	"sync"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestWarmupExcludesStartUp: requests arriving before Warmup run but are not counted,
// and the report records the window.
func TestWarmupExcludesStartUp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		warmup dataplane.Time
	}{
		{"none", 0},
		{"quarter", 250 * dataplane.Millisecond},
		{"half", 500 * dataplane.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sweepCfg(t, 1)
			cfg.Warmup = tc.warmup
			s, err := newPointSim(cfg, 1.0)
			if err != nil {
				t.Fatal(err)
			}
			var all, measured int64
			s.opts.OnFinish = func(_ dataplane.Time, r *dataplane.Request) {
				all++
				if r.Arrival >= tc.warmup {
					measured++
				}
			}
			m, err := s.Run()
			if err != nil {
				t.Fatal(err)
			}
			if m.Total.Requests != measured {
				t.Errorf("counted %d requests, want the %d arriving at or after %d µs (of %d)", m.Total.Requests, measured, tc.warmup, all)
			}
			if tc.warmup > 0 && measured == all {
				t.Fatalf("no request arrived in the warm-up window: the test checks nothing")
			}
			rep, err := Sweep(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.WarmupUs != int64(tc.warmup) {
				t.Errorf("report warmup_us = %d, want %d", rep.WarmupUs, tc.warmup)
			}
		})
	}
}

// TestFindLimit: a sweep whose highest given load passes goes on until attainment falls
// (or the cap), and a sweep without FindLimit keeps its loads as given.
func TestFindLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		loads     []float64
		find      bool
		cap       float64
		wantExtra bool
	}{
		{"explicit loads kept", []float64{0.4}, false, 0, false},
		{"extends past a passing load", []float64{0.4}, true, 0, true},
		{"stops at the cap", []float64{0.1}, true, 0.3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sweepCfg(t, 0)
			cfg.Loads, cfg.FindLimit, cfg.LimitCap = tc.loads, tc.find, tc.cap
			var mu sync.Mutex
			lastDone, lastTotal := 0, 0
			cfg.Progress = func(done, total int, _ *Point) {
				mu.Lock()
				defer mu.Unlock()
				lastDone, lastTotal = max(lastDone, done), max(lastTotal, total)
			}
			rep, err := Sweep(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if lastDone != len(rep.Points) || lastTotal != len(rep.Points) {
				t.Errorf("progress ended at %d/%d, want %d/%d (every point, extension included)", lastDone, lastTotal, len(rep.Points), len(rep.Points))
			}
			if !tc.wantExtra {
				if len(rep.Points) != len(tc.loads) || rep.Extended {
					t.Fatalf("%d points (extended %v), want the %d given", len(rep.Points), rep.Extended, len(tc.loads))
				}
				return
			}
			if !rep.Extended || len(rep.Points) <= len(tc.loads) {
				t.Fatalf("sweep not extended: %d points", len(rep.Points))
			}
			if rep.MaxLoad99 <= tc.loads[len(tc.loads)-1] {
				t.Fatalf("max load %g: not past the given %v", rep.MaxLoad99, tc.loads)
			}
			capLoad := tc.cap
			if capLoad == 0 {
				capLoad = DefaultLimitCap
			}
			failsAbove := false
			for i, p := range rep.Points {
				if i > 0 && p.Load <= rep.Points[i-1].Load {
					t.Fatalf("points not in increasing load order: %g after %g", p.Load, rep.Points[i-1].Load)
				}
				if p.Load > capLoad+1e-9 {
					t.Fatalf("load %g past the cap %g", p.Load, capLoad)
				}
				if p.Load > rep.MaxLoad99 && MaxLoadAt([]Point{p}, MaxLoadTarget) == 0 {
					failsAbove = true
				}
			}
			if !failsAbove && rep.MaxLoad99 < capLoad {
				t.Fatalf("max load %g below the cap %g with no failing load above it", rep.MaxLoad99, capLoad)
			}
		})
	}
}
