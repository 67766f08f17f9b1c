package sim

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// twoPlans is a fake solver between a small and a large candidate of one plan: the small one
// claims half the plan's rate, the large one all of it.
type twoPlans struct{ small, large ap.Candidate }

func (s twoPlans) Solve(_ context.Context, d ap.Demand) (ap.Candidate, error) {
	if d.Rates[0] <= s.small.Capacity[0] {
		return s.small, nil
	}
	return s.large, nil
}

// TestAutopilotSwitchLosesNothing: a load that steps from 0.3 to 0.9 of the plan's capacity
// and back makes the loop switch (small → large → small) under load; every arrival is
// answered exactly once, on one segment, and the segments cover the trace.
func TestAutopilotSwitchLosesNothing(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "testdata", "serve", "demo-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, err := dpppipe.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	rate := dep.Apps[0].RateRPS
	small := ap.Candidate{Digest: "small", GPUs: 8, Capacity: []float64{rate / 2}, Plan: p}
	large := ap.Candidate{Digest: "large", GPUs: 16, Capacity: []float64{rate}, Plan: p}
	// Arrivals: 10 s at 0.3, 10 s at 0.9, 10 s at 0.3 of the plan's rate, evenly spaced.
	var ts []dataplane.Time
	t0 := dataplane.Time(0)
	for _, seg := range []float64{0.3, 0.9, 0.3} {
		gap := dataplane.Time(1e6 / (seg * rate))
		for at := t0; at < t0+10*dataplane.Second; at += gap {
			ts = append(ts, at)
		}
		t0 += 10 * dataplane.Second
	}
	seen := map[int64]int{}
	run := &AutopilotRun{
		Loop:     ap.Config{Window: dataplane.Second, MinInterval: 3 * dataplane.Second, Hold: 1},
		Start:    small,
		Solver:   twoPlans{small, large},
		Arrivals: [][]dataplane.Time{ts},
		Duration: 30 * dataplane.Second,
		LoadTime: 500 * dataplane.Millisecond,
		Seed:     1,
		Deploy: func(c ap.Candidate) (*dataplane.Deployment, dataplane.Policy, error) {
			d, err := dpppipe.FromPlan(c.Plan.(*formats.Plan))
			if err != nil {
				return nil, nil, err
			}
			pol, err := testPolicies.New(d, dataplane.Config{Policy: "ppipe"}, "")
			return d, pol, err
		},
		OnFinish: func(_ int, _ dataplane.Time, r *dataplane.Request) { seen[r.Attrs.Trace]++ },
	}
	res, err := RunAutopilot(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Switches < 2 {
		t.Fatalf("%d switches, want small → large → small; decisions %+v", res.Switches, res.Decisions)
	}
	if res.Requests != int64(len(ts)) || len(seen) != len(ts) {
		t.Fatalf("%d arrivals, %d counted, %d distinct answered", len(ts), res.Requests, len(seen))
	}
	for id, n := range seen {
		if n != 1 || id < 1 || id > int64(len(ts)) {
			t.Fatalf("trace id %d answered %d times", id, n)
		}
	}
	var prev float64
	for i, s := range res.Segments {
		if s.StartS != prev {
			t.Errorf("segment %d starts at %g s, the previous ended at %g s", i, s.StartS, prev)
		}
		prev = s.EndS
	}
	if prev != 30 {
		t.Errorf("segments end at %g s, want 30", prev)
	}
	static, err := RunStatic(run, large)
	if err != nil {
		t.Fatal(err)
	}
	if static.Requests != res.Requests || static.GPUHours <= res.GPUHours {
		t.Errorf("static large plan: %d requests, %g GPU-h; autopilot %d, %g GPU-h: want the same requests on fewer GPU-hours",
			static.Requests, static.GPUHours, res.Requests, res.GPUHours)
	}
	t.Logf("autopilot %+v", res.Segments)
}

// TestAutopilotResolveDelay: with ResolveDelay the loop hears a re-solve's answer that long
// after it asked (as serve's background re-solve), and the new plan takes requests LoadTime
// after that; with 0 at once. Every decision to re-solve is followed by its switch exactly
// ResolveDelay later, and the segments start where those switches say.
func TestAutopilotResolveDelay(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "testdata", "serve", "demo-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, err := dpppipe.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	rate := dep.Apps[0].RateRPS
	small := ap.Candidate{Digest: "small", GPUs: 8, Capacity: []float64{rate / 2}, Plan: p}
	large := ap.Candidate{Digest: "large", GPUs: 16, Capacity: []float64{rate}, Plan: p}
	var ts []dataplane.Time
	t0 := dataplane.Time(0)
	for _, seg := range []float64{0.3, 0.9, 0.3} {
		gap := dataplane.Time(1e6 / (seg * rate))
		for at := t0; at < t0+10*dataplane.Second; at += gap {
			ts = append(ts, at)
		}
		t0 += 10 * dataplane.Second
	}
	const load = 200 * dataplane.Millisecond
	for _, delay := range []dataplane.Time{0, 700 * dataplane.Millisecond, 1500 * dataplane.Millisecond} {
		run := &AutopilotRun{
			Loop:  ap.Config{Window: dataplane.Second, MinInterval: 3 * dataplane.Second, Hold: 1},
			Start: small, Solver: twoPlans{small, large}, Arrivals: [][]dataplane.Time{ts},
			Duration: 30 * dataplane.Second, LoadTime: load, ResolveDelay: delay, Seed: 1,
			Deploy: func(c ap.Candidate) (*dataplane.Deployment, dataplane.Policy, error) {
				d, err := dpppipe.FromPlan(c.Plan.(*formats.Plan))
				if err != nil {
					return nil, nil, err
				}
				pol, err := testPolicies.New(d, dataplane.Config{Policy: "ppipe"}, "")
				return d, pol, err
			},
		}
		res, err := RunAutopilot(context.Background(), run)
		if err != nil {
			t.Fatal(err)
		}
		var asked dataplane.Time = -1
		var switches []dataplane.Time
		for _, d := range res.Decisions {
			switch d.Action {
			case "resolve":
				if asked >= 0 {
					t.Errorf("delay %d µs: a re-solve asked at %d µs while the one of %d µs was under way", delay, d.At, asked)
				}
				asked = d.At
			case "switch", "keep", "error":
				if asked < 0 || d.At != asked+delay {
					t.Errorf("delay %d µs: %s at %d µs, the re-solve asked at %d µs", delay, d.Action, d.At, asked)
				}
				asked = -1
				if d.Action == "switch" {
					switches = append(switches, d.At)
				}
			}
		}
		if len(switches) < 2 || len(res.Segments) != len(switches)+1 {
			t.Fatalf("delay %d µs: switches at %v, segments %+v", delay, switches, res.Segments)
		}
		for i, at := range switches {
			if got, want := res.Segments[i+1].StartS, float64(at+load)/1e6; got != want {
				t.Errorf("delay %d µs: segment %d starts at %g s, want %g (switch at %d µs + load)", delay, i+1, got, want, at)
			}
		}
		t.Logf("delay %d µs: switches at %v µs, attainment %.4f", delay, switches, res.Attainment)
	}
}

// slowPlans is twoPlans whose every solve takes at least pause of wall time.
type slowPlans struct {
	twoPlans
	pause time.Duration
}

func (s slowPlans) Solve(ctx context.Context, d ap.Demand) (ap.Candidate, error) {
	time.Sleep(s.pause)
	return s.twoPlans.Solve(ctx, d)
}

// TestAutopilotResolveMeasured: with MeasureResolve a re-solve's answer lands its own wall
// time after the ask (a solve that sleeps 30 ms lands at least 30 ms of virtual time later).
func TestAutopilotResolveMeasured(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "testdata", "serve", "demo-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	small := ap.Candidate{Digest: "small", GPUs: 8, Capacity: []float64{100}, Plan: p}
	large := ap.Candidate{Digest: "large", GPUs: 16, Capacity: []float64{400}, Plan: p}
	var ts []dataplane.Time
	for at := dataplane.Time(0); at < 6*dataplane.Second; at += 5 * dataplane.Millisecond { // 200 rps
		ts = append(ts, at)
	}
	const pause = 30 * time.Millisecond
	run := &AutopilotRun{
		Loop:  ap.Config{Window: dataplane.Second, MinInterval: 3 * dataplane.Second, Hold: 1},
		Start: small, Solver: slowPlans{twoPlans{small, large}, pause}, Arrivals: [][]dataplane.Time{ts},
		Duration: 6 * dataplane.Second, MeasureResolve: true, Seed: 1,
		Deploy: func(c ap.Candidate) (*dataplane.Deployment, dataplane.Policy, error) {
			d, err := dpppipe.FromPlan(c.Plan.(*formats.Plan))
			if err != nil {
				return nil, nil, err
			}
			pol, err := testPolicies.New(d, dataplane.Config{Policy: "ppipe"}, "")
			return d, pol, err
		},
	}
	res, err := RunAutopilot(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	var asked dataplane.Time = -1
	answered := 0
	for _, d := range res.Decisions {
		switch d.Action {
		case "resolve":
			asked = d.At
		case "switch", "keep", "error":
			answered++
			if asked < 0 || d.At < asked+dataplane.Time(pause/time.Microsecond) {
				t.Errorf("%s at %d µs, the re-solve asked at %d µs: want at least %v later", d.Action, d.At, asked, pause)
			}
			asked = -1
		}
	}
	if answered == 0 || res.Switches == 0 {
		t.Fatalf("no re-solve answered (%d switches): %+v", res.Switches, res.Decisions)
	}
}
