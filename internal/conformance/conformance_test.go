package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/systems"
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
					res, err := Run(c)
					if err != nil {
						t.Fatalf("%+v: %v", c, err)
					}
					if res != nil && res.Requests > 0 && len(res.Decisions) == 0 {
						t.Fatalf("%+v: %d requests but no recorded decisions", c, res.Requests)
					}
				})
			}
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
	f.Add(uint64(1), uint8(0), uint8(0), uint8(10), uint8(5), uint8(0))
	f.Add(uint64(2), uint8(3), uint8(1), uint8(30), uint8(0), uint8(7))
	f.Add(uint64(3), uint8(9), uint8(2), uint8(5), uint8(10), uint8(34))
	pols := Policies()
	f.Fuzz(func(t *testing.T, seed uint64, pol, pat, load, jit, fail uint8) {
		sp := pols[int(pol)%len(pols)]
		c := Case{System: sp[0], Policy: sp[1], Seed: seed, Pattern: patterns[int(pat)%len(patterns)],
			Load: 0.1 + float64(load%50)/10, Duration: dataplane.Second, Jitter: float64(jit%20) / 100}
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
	sys, _ := systems.ByName("ppipe")
	sys.Policies = []dataplane.PolicySpec{{Name: "idle", Serves: []string{sys.PlanSection},
		New: func(dataplane.Config) (dataplane.Policy, error) { return idle{}, nil }}}
	_, err := run(sys, Case{Policy: "idle", Seed: 1, Pattern: "poisson", Load: 1, Duration: dataplane.Second})
	if !errors.Is(err, ErrViolation) {
		t.Fatalf("lost requests not reported: %v", err)
	}
}

// failureAware reports whether system's policy declares a FailureMode (dataplane.FailureAware).
func failureAware(t *testing.T, system, policy string) bool {
	t.Helper()
	sys, ok := systems.ByName(system)
	if !ok {
		t.Fatalf("no system %q", system)
	}
	for _, sp := range sys.Policies {
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
	sys, _ := systems.ByName("ppipe")
	sys.Policies = []dataplane.PolicySpec{{Name: "idle", Serves: []string{sys.PlanSection},
		New: func(dataplane.Config) (dataplane.Policy, error) { return idle{}, nil }}}
	_, err := run(sys, Case{Policy: "idle", Seed: 1, Pattern: "poisson", Load: 1, Duration: dataplane.Second, FailAt: dataplane.Second / 2})
	if !errors.Is(err, dataplane.ErrNoFailover) {
		t.Fatalf("a failure under a policy with no FailureMode: %v; want %v", err, dataplane.ErrNoFailover)
	}
}
