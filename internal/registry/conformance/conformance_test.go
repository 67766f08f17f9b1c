package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/registry/system"
)

var patterns = []string{"poisson", "bursty:3", "mmpp"}

// TestEveryPolicy runs every registered policy on a few sampled deployments and patterns,
// under and over its planned load.
func TestEveryPolicy(t *testing.T) {
	pols := Policies()
	if len(pols) == 0 {
		t.Fatal("no policies with sample deployments are registered")
	}
	for _, sp := range pols {
		for seed := uint64(1); seed <= 3; seed++ {
			for pi, pat := range patterns {
				c := Case{System: sp[0], Policy: sp[1], Seed: seed*7 + uint64(pi), Pattern: pat,
					Load: []float64{0.5, 1.5, 3}[int(seed+uint64(pi))%3], Duration: 2 * dataplane.Second, Jitter: 0.05}
				t.Run(fmt.Sprintf("%s/%s/%d/%s", sp[0], sp[1], seed, pat), func(t *testing.T) {
					checkRan(t, c)
				})
			}
		}
		// Clients withdraw a share of the requests, queued or in flight: each finishes once,
		// as cancelled, with one EvCancel, and is never dispatched after it.
		for i, frac := range []float64{0.2, 0.6} {
			c := Case{System: sp[0], Policy: sp[1], Seed: uint64(50 + i), Pattern: patterns[i], Load: 1.2,
				Duration: 2 * dataplane.Second, Jitter: 0.05, CancelFraction: frac}
			t.Run(fmt.Sprintf("%s/%s/cancel-%g", sp[0], sp[1], frac), func(t *testing.T) {
				if res := checkRan(t, c); res.Cancelled == 0 {
					t.Fatalf("%+v: no request cancelled (%d requests)", c, res.Requests)
				}
			})
		}
		// A worker fails a third of the way in: back at two thirds, or never.
		for i, until := range []dataplane.Time{1333 * dataplane.Millisecond, 0} {
			c := Case{System: sp[0], Policy: sp[1], Seed: uint64(40 + i), Pattern: "poisson", Load: 1, Duration: 2 * dataplane.Second,
				Jitter: 0.05, FailWorker: i, FailAt: 667 * dataplane.Millisecond, FailUntil: until}
			t.Run(fmt.Sprintf("%s/%s/fail-until-%d", sp[0], sp[1], until), func(t *testing.T) {
				_, err := Run(c)
				// A policy that does not declare a FailureMode must refuse the failure up
				// front; one that does must keep every invariant through it.
				if !failureAware(t, sp[0], sp[1]) {
					if !errors.Is(err, dataplane.ErrNoFailover) {
						t.Fatalf("%+v: %v; want the failure refused (%v)", c, err, dataplane.ErrNoFailover)
					}
					return
				}
				if err != nil {
					t.Fatalf("%+v: %v", c, err)
				}
			})
		}
	}
}

// checkRan runs c and fails unless it ran clean: requests arrived and decisions were made.
func checkRan(t *testing.T, c Case) *Result {
	t.Helper()
	res, err := Run(c)
	if err != nil {
		t.Fatalf("%+v: %v", c, err)
	}
	if res == nil || res.Requests == 0 || len(res.Decisions) == 0 {
		t.Fatalf("%+v: nothing ran: %+v", c, res)
	}
	return res
}

// TestBoundedLiveTable: a long run that compacts every few thousand events, as serve does,
// keeps the engine's live request table bounded by what is in flight, whatever the policy
// (a policy that leaves one request pending for ever pins every later one in the table).
// Each run lasts long enough for 0.3 of its sample's planned rate to bring liveRequests
// requests (a load every policy keeps up with: PARD's no-drop baseline falls behind at 0.5,
// and a growing queue is in flight legitimately). Between two compactions the table gains
// at most one request per event, so it may hold at most twice CompactEvery (those and what
// is in flight): a quarter of the requests.
func TestBoundedLiveTable(t *testing.T) {
	if testing.Short() {
		t.Skip("long runs")
	}
	const liveRequests = 8000
	for _, sp := range Policies() {
		c := Case{System: sp[0], Policy: sp[1], Seed: 60, Pattern: "poisson", Load: 0.3, Jitter: 0.05, CompactEvery: 1000}
		c.Duration = durationFor(t, c, liveRequests)
		t.Run(sp[0]+"/"+sp[1], func(t *testing.T) {
			res := checkRan(t, c)
			if res.Requests < liveRequests/2 {
				t.Fatalf("%+v: only %d requests arrived, want about %d", c, res.Requests, liveRequests)
			}
			if bound := 2 * int(c.CompactEvery); res.MaxLive > bound {
				t.Fatalf("%+v: the live table reached %d requests of %d (bound %d)", c, res.MaxLive, res.Requests, bound)
			}
			t.Logf("%d requests in %ds, live table at most %d", res.Requests, c.Duration/dataplane.Second, res.MaxLive)
		})
	}
}

// durationFor is how long c's arrivals take to bring about n requests at its sample
// deployment's planned rates (the sample Run draws for c).
func durationFor(t *testing.T, c Case, n int) dataplane.Time {
	t.Helper()
	dep := mustSampling(t, c.System).Sample(rand.New(rand.NewPCG(c.Seed, 0xc0f0)))
	var rate float64
	for _, a := range dep.Apps {
		rate += max(a.RateRPS, 0) * c.Load
	}
	if !(rate > 0) {
		t.Fatalf("%s's sample has no planned rate", c.System)
	}
	return dataplane.Time(float64(n) / rate * float64(dataplane.Second))
}

// TestHarnessCatchesViolations: the harness must fail on a policy that drops a request
// twice (the engine refuses the second drop) — a harness that cannot fail proves nothing.
func TestHarnessCatchesViolations(t *testing.T) {
	_, err := Run(Case{System: "no-such", Policy: "x", Seed: 1, Pattern: "poisson", Load: 1, Duration: dataplane.Second})
	if err == nil {
		t.Fatal("unknown system accepted")
	}
	if errors.Is(err, ErrViolation) {
		t.Fatalf("an unknown system is a usage error, not a violation: %v", err)
	}
}

// FuzzConformance explores (policy, deployment, pattern, load, jitter) combinations.
func FuzzConformance(f *testing.F) {
	f.Add(uint64(1), uint8(0), uint8(0), uint8(10), uint8(5), uint8(0), uint8(0))
	f.Add(uint64(2), uint8(3), uint8(1), uint8(30), uint8(0), uint8(7), uint8(3))
	f.Add(uint64(3), uint8(9), uint8(2), uint8(5), uint8(10), uint8(34), uint8(9))
	pols := Policies()
	f.Fuzz(func(t *testing.T, seed uint64, pol, pat, load, jit, fail, cancel uint8) {
		sp := pols[int(pol)%len(pols)]
		// cancel: the share of requests withdrawn, in tenths (0 to 1).
		c := Case{System: sp[0], Policy: sp[1], Seed: seed, Pattern: patterns[int(pat)%len(patterns)],
			Load: 0.1 + float64(load%50)/10, Duration: dataplane.Second, Jitter: float64(jit%20) / 100,
			CancelFraction: float64(cancel%11) / 10}
		if fail > 0 {
			// fail: the worker (low 3 bits), the failure's time (fifths of the window) and
			// whether it comes back.
			c.FailWorker = int(fail & 7)
			c.FailAt = dataplane.Time(1+(fail>>3)%4) * dataplane.Second / 5
			if fail&0x80 == 0 {
				c.FailUntil = c.FailAt + dataplane.Second/4
			}
		}
		if _, err := Run(c); err != nil && !(errors.Is(err, dataplane.ErrNoFailover) && !failureAware(t, sp[0], sp[1])) {
			t.Fatalf("%+v: %v", c, err)
		}
	})
}

// idle is a policy that never decides anything: its requests never finish.
type idle struct{}

func (idle) Name() string                                                  { return "idle" }
func (idle) Attach(dataplane.View) error                                   { return nil }
func (idle) Handle(dataplane.Time, *dataplane.Event, *dataplane.Decisions) {}

// TestHarnessFailsOnLostRequests: a policy that ignores its requests is caught.
func TestHarnessFailsOnLostRequests(t *testing.T) {
	ppipe := mustSampling(t, "ppipe")
	sys := withPolicies{Sampling: ppipe, policies: []dataplane.PolicySpec{{Name: "idle", Serves: []string{ppipe.Sections().PlanKey()},
		New: func(dataplane.Config) (dataplane.Policy, error) { return idle{}, nil }}}}
	_, err := run(sys, Case{Policy: "idle", Seed: 1, Pattern: "poisson", Load: 1, Duration: dataplane.Second})
	if !errors.Is(err, ErrViolation) {
		t.Fatalf("lost requests not reported: %v", err)
	}
}

// hoarder queues every request and dispatches them one at a time along their application's
// first pipeline, but ignores EvCancel: it dispatches requests that were withdrawn.
type hoarder struct {
	v     dataplane.View
	q     [][]dataplane.ReqID
	paths [][]dataplane.PathHop
}

func (h *hoarder) Name() string { return "hoarder" }
func (h *hoarder) Attach(v dataplane.View) error {
	h.v = v
	d := v.Deployment()
	h.q = make([][]dataplane.ReqID, len(d.Apps))
	h.paths = make([][]dataplane.PathHop, len(d.Apps))
	for a := range d.Apps {
		for _, s := range d.Apps[a].Pipelines[0] {
			h.paths[a] = append(h.paths[a], dataplane.PathHop{Stage: s, Worker: d.Stages[s].Pool[0]})
		}
	}
	return nil
}
func (h *hoarder) Handle(_ dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	if ev.Kind == dataplane.EvArrival {
		a := h.v.Req(ev.Req).App
		h.q[a] = append(h.q[a], ev.Req)
	}
	for a, q := range h.q {
		if len(q) > 0 && h.v.WorkerIdle(h.paths[a][0].Worker) {
			out.Dispatch(dataplane.AppID(a), q[:1], h.paths[a])
			h.q[a] = q[1:]
		}
	}
}

// refuser refuses every deployment at attach time.
type refuser struct{ idle }

func (refuser) Attach(dataplane.View) error { return errors.New("not this shape") }

// TestHarnessCatchesCancelAndRefusal: a policy that dispatches withdrawn requests, and one
// that refuses its system's own sample, both fail the harness; the same hoarder without
// cancels passes (the failure is the cancels').
func TestHarnessCatchesCancelAndRefusal(t *testing.T) {
	ppipe := mustSampling(t, "ppipe")
	sys := withPolicies{Sampling: ppipe, policies: []dataplane.PolicySpec{
		{Name: "hoarder", Serves: []string{ppipe.Sections().PlanKey()}, New: func(dataplane.Config) (dataplane.Policy, error) { return &hoarder{}, nil }},
		{Name: "refuser", Serves: []string{ppipe.Sections().PlanKey()}, New: func(dataplane.Config) (dataplane.Policy, error) { return refuser{}, nil }},
	}}
	c := Case{Policy: "hoarder", Seed: 1, Pattern: "poisson", Load: 0.3, Duration: dataplane.Second}
	if _, err := run(sys, c); err != nil {
		t.Fatalf("hoarder without cancels: %v", err)
	}
	c.CancelFraction = 0.5
	if _, err := run(sys, c); !errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), "after its EvCancel") {
		t.Fatalf("dispatches of cancelled requests not reported: %v", err)
	}
	c.Policy, c.CancelFraction = "refuser", 0
	if _, err := run(sys, c); !errors.Is(err, ErrRefused) {
		t.Fatalf("a refused sample: %v; want %v", err, ErrRefused)
	}
}

// failureAware reports whether system's policy declares a FailureMode (dataplane.FailureAware).
func failureAware(t *testing.T, system, policy string) bool {
	t.Helper()
	for _, sp := range mustSampling(t, system).Policies() {
		if sp.Name == policy {
			p, err := sp.New(dataplane.Config{Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			return dataplane.HandlesFailures(p)
		}
	}
	t.Fatalf("system %s has no policy %q", system, policy)
	return false
}

// TestFailureAwareSystems: every in-tree policy declares what it does when a worker fails, so
// TestEveryPolicy runs each through a failure; a policy that declares nothing is refused
// (ErrNoFailover) rather than left waiting for a lost batch.
func TestFailureAwareSystems(t *testing.T) {
	for _, sp := range Policies() {
		if !failureAware(t, sp[0], sp[1]) {
			t.Errorf("%s/%s declares no FailureMode", sp[0], sp[1])
		}
	}
	ppipe := mustSampling(t, "ppipe")
	sys := withPolicies{Sampling: ppipe, policies: []dataplane.PolicySpec{{Name: "idle", Serves: []string{ppipe.Sections().PlanKey()},
		New: func(dataplane.Config) (dataplane.Policy, error) { return idle{}, nil }}}}
	_, err := run(sys, Case{Policy: "idle", Seed: 1, Pattern: "poisson", Load: 1, Duration: dataplane.Second, FailAt: dataplane.Second / 2})
	if !errors.Is(err, dataplane.ErrNoFailover) {
		t.Fatalf("a failure under a policy with no FailureMode: %v; want %v", err, dataplane.ErrNoFailover)
	}
}

// mustSampling is the in-tree system called name, which must sample deployments.
func mustSampling(t *testing.T, name string) system.Sampling {
	t.Helper()
	sys, ok := sampling(name)
	if !ok {
		t.Fatalf("no system %q with sample deployments", name)
	}
	return sys
}

// withPolicies is a system with other policies than its own: what a harness test runs its
// misbehaving policies under.
type withPolicies struct {
	system.Sampling
	policies []dataplane.PolicySpec
}

func (w withPolicies) Policies() []dataplane.PolicySpec { return w.policies }
