package qlm

import (
	"fmt"
	"hash/fnv"
	"io"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/base/testmode"
	"github.com/plan-dev/plan/sim"
)

// stepRun is one simulation's outcome: a hash of every event and the decisions the policy
// made for it, every request, the policy's counters and RCT predictions.
type stepRun struct {
	decisions uint64
	events    int
	reqs      []dataplane.Request
	stats     Stats
}

// runStepSim simulates n instances (alternately small and large models, as BenchmarkSimScale)
// at load × the benchmark's per-instance rate under pol, with instance 1 failing at 2 s and
// back at 4 s when fail is set, stepping every instance after every event when full is set.
// It checks qlmQueue.waiting against a recount after every event.
func runStepSim(t *testing.T, pol string, n int, load float64, seed uint64, fail, full bool) stepRun {
	return runStepSimCancel(t, pol, n, load, seed, fail, full, 0, nil)
}

// runStepSimCancel is runStepSim with a share cancel of the requests withdrawn (sim's
// CancelFraction) and policy parameters params.
func runStepSimCancel(t *testing.T, pol string, n int, load float64, seed uint64, fail, full bool, cancel float64, params map[string]string) stepRun {
	t.Helper()
	dep := mixedDeployment(t, n, load)
	pp, err := Registry().New(dep, dataplane.Config{Policy: pol, Params: params}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	p := pp.(*Policy)
	p.fullStep = full
	p.checkMemo = true
	spec, _ := sim.ParseArrival("poisson")
	var srcs []sim.Source
	for a := range dep.Apps {
		s, err := spec.New(dep.Apps[a].RateRPS, dep.Apps[a].Name, seed*10+uint64(a)+1)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	h := fnv.New64a()
	var r stepRun
	opt := sim.Options{Duration: 4 * dataplane.Second, Seed: seed,
		Observe: func(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
			r.events++
			fmt.Fprintf(h, "%d %+v\n", now, *ev)
			for _, d := range ds {
				fmt.Fprintf(h, "  %+v\n", d)
			}
			if qq, ok := p.q.(*qlmQueue); ok {
				w := qq.waiting
				qq.recount()
				if w != qq.waiting {
					t.Fatalf("at %d µs: waiting %d, recount %d (%v req %d, %d decisions)", now, w, qq.waiting, ev.Kind, ev.Req, len(ds))
				}
			}
		}}
	if fail {
		opt.Failures = []sim.Failure{{Worker: 1, At: 2 * dataplane.Second, Until: 4 * dataplane.Second}}
	}
	opt.CancelFraction = cancel
	s, err := sim.New(dep, p, srcs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(h, "end")
	r.decisions = h.Sum64()
	r.reqs = s.Engine.Requests()
	r.stats = p.stats
	r.stats.SolveNs = 0
	return r
}

// TestFastStepMatchesFull: skipping inert and quiet instances (stepset.go)
// changes no decision. Whole simulations, with the fast path and with every instance stepped
// after every event, give the same decision stream, requests and counters: a seed per case
// (a second under make test-full), loads from light to overloaded (where groups wait and idle
// instances pull and split, QLM §5), instance counts, an instance failure and recovery, and
// QLM, its ablations and the baselines.
func TestFastStepMatchesFull(t *testing.T) {
	pols := []string{PolicyQLM, PolicyFCFS, PolicyEDF, PolicyRR, PolicyNoEvict, PolicyNoGuard}
	if testing.Short() {
		pols = pols[:2]
	}
	compared, heavy := 0, 0
	for _, pol := range pols {
		for _, c := range []struct {
			n    int
			load float64
			fail bool
		}{{4, 0.3, false}, {8, 1, false}, {8, 2.5, true}, {16, 0.6, true}, {24, 1.5, false}, {6, 4, false}, {12, 6, true}, {48, 1, true}} {
			for seed := uint64(1); seed <= 2; seed++ {
				name := fmt.Sprintf("%s/n=%d/load=%g/fail=%v/seed=%d", pol, c.n, c.load, c.fail, seed)
				if seed > 1 && !testmode.Full() {
					// A second arrival stream per case under make test-full: the first already
					// takes every policy through every case, and the second doubled the
					// test's time (11 s alone).
					heavy++
					continue
				}
				fast := runStepSim(t, pol, c.n, c.load, seed, c.fail, false)
				full := runStepSim(t, pol, c.n, c.load, seed, c.fail, true)
				if fast.decisions != full.decisions || fast.events != full.events {
					t.Errorf("%s: decision streams differ (%d vs %d events)", name, fast.events, full.events)
				}
				if len(fast.reqs) != len(full.reqs) {
					t.Fatalf("%s: %d vs %d requests", name, len(fast.reqs), len(full.reqs))
				}
				for i := range fast.reqs {
					if fmt.Sprintf("%+v", fast.reqs[i]) != fmt.Sprintf("%+v", full.reqs[i]) {
						t.Errorf("%s: request %d: %+v vs %+v", name, i, fast.reqs[i], full.reqs[i])
						break
					}
				}
				if fmt.Sprintf("%+v", fast.stats) != fmt.Sprintf("%+v", full.stats) {
					t.Errorf("%s: counters differ:\n%+v\n%+v", name, fast.stats, full.stats)
				}
				if pol == PolicyQLM {
					t.Logf("%s: %d events, %d requests, pulls %d, replans %d, failovers %d", name, fast.events, len(fast.reqs), fast.stats.Pulls, fast.stats.Replans, fast.stats.Failovers)
				}
				compared += fast.events
			}
		}
	}
	t.Logf("%d events compared (%d seeds left to make test-full)", compared, heavy)
}

// TestFastStepMatchesFullWithCancels: with a share of the requests withdrawn (EvCancel from
// the queues, the running batches and the swapped sets), the fast path still makes the
// decisions of the full pass, and every request finishes once.
func TestFastStepMatchesFullWithCancels(t *testing.T) {
	for _, pol := range []string{PolicyQLM, PolicyFCFS, PolicyEDF, PolicyNoGuard} {
		for _, c := range []struct {
			n            int
			load, cancel float64
			fail, late   bool
		}{{8, 1, 0.3, false, false}, {8, 2.5, 0.5, true, false}, {16, 4, 0.2, false, false}, {8, 4, 0.2, true, true}} {
			name := fmt.Sprintf("%s/n=%d/load=%g/cancel=%g/fail=%v/drop_late=%v", pol, c.n, c.load, c.cancel, c.fail, c.late)
			var params map[string]string
			if c.late {
				params = map[string]string{"drop_late": "true"}
			}
			fast := runStepSimCancel(t, pol, c.n, c.load, 1, c.fail, false, c.cancel, params)
			full := runStepSimCancel(t, pol, c.n, c.load, 1, c.fail, true, c.cancel, params)
			if fast.decisions != full.decisions || fast.events != full.events {
				t.Errorf("%s: decision streams differ (%d vs %d events)", name, fast.events, full.events)
			}
			cancelled := 0
			for _, r := range fast.reqs {
				if r.Outcome == dataplane.Pending {
					t.Errorf("%s: request %d never finished", name, r.ID)
				}
				if r.Reason() == dataplane.DropCancelled {
					cancelled++
				}
			}
			if cancelled == 0 || fast.stats.Cancelled == 0 {
				t.Errorf("%s: nothing was cancelled (%d requests)", name, len(fast.reqs))
			}
			if fmt.Sprintf("%+v", fast.stats) != fmt.Sprintf("%+v", full.stats) {
				t.Errorf("%s: counters differ", name)
			}
		}
	}
}
