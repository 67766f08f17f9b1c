package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dpdyorc "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/base/testmode"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// dyorcOverload is TestAgreementDyOrcOverload's run: the bundled small DyOrc plan at 3× its
// rates (past the knee, TestAgreementDyOrc's comment) for 10 s (641 requests on the seed-1
// trace), the length its realizations below were measured at.
const (
	dyorcOverloadFactor = 3.0
	dyorcOverloadDur    = 10 * time.Second
)

// dyorcOverloadSeeds and dyorcOverloadJitters span the simulator's realizations of the one
// trace: each predictor seed (the policy's "seed": the generator of its Markov rollouts,
// DyOrc §5.2) with the arrivals as drawn and with each arrival moved by up to
// dyorcOverloadJitterUs (order kept) under each jitter seed.
//
// Why a range. Serve and the simulator draw every request's path alike (dataplane.EmulatedU
// and the work spread key on the request's trace index, which `plan load` sends): on the
// seed-1 trace, every request answered by both had the same path (264 of 264, measured). But
// past the knee DyOrc's goodput is chaotic in what serve cannot reproduce: the order
// near-simultaneous requests reach it in (the load generator's connections race) and the
// rollouts, drawn from one sequential generator in the order the scheduler asks. The
// simulator alone, on the same 641 requests, gives 38.85–54.13% over predictor seeds 1–8 and
// 28.55–63.03% over those 48 realizations; keying each rollout on its request as well (tried)
// spreads it further (34.5–65.5% over 1 ms jitters). One realization against another cannot
// be held to a few points, so serve is checked to be one of the simulator's realizations:
// its goodput share within the realizations' range, widened by dyorcOverloadMargin.
var (
	dyorcOverloadSeeds   = []int{1, 2, 3, 4, 5, 6, 7, 8}
	dyorcOverloadJitters = []uint64{0, 1, 2, 3, 4, 5} // 0: the arrivals as drawn
)

const (
	dyorcOverloadJitterUs = 1000
	// dyorcOverloadMargin widens the simulated range: 2 points, about one realization's
	// spacing at its ends (the nearest neighbours of 28.55% and 63.03% are 36.19% and 61.31%).
	dyorcOverloadMargin = 0.02
)

// jitteredSource moves each arrival of s by a uniform draw in [0, amp) µs, keeping the order.
type jitteredSource struct {
	s    sim.Source
	rng  *rand.Rand
	amp  float64
	last dataplane.Time
}

func (j *jitteredSource) Next() dataplane.Time {
	t := j.s.Next()
	if t == dataplane.Never {
		return t
	}
	j.last = max(t+dataplane.Time(j.rng.Float64()*j.amp), j.last)
	return j.last
}

// dyorcRealization is the share of the trace's requests answered within their SLO in one
// simulated realization: the trace of sim.RunPoint at (seed 1, lf), its arrivals jittered
// under jitter (0: as drawn), the policy's rollouts seeded by pseed.
func dyorcRealization(t *testing.T, dep *dataplane.Deployment, policy string, lf float64, pseed int, jitter uint64) (met, n int) {
	t.Helper()
	spec, _ := sim.ParseArrival("poisson")
	srcs := make([]sim.Source, len(dep.Apps))
	for a := range dep.Apps {
		s, err := spec.New(dep.Apps[a].RateRPS*lf, dep.Apps[a].Name, sim.PointSeed(1, lf, a))
		if err != nil {
			t.Fatal(err)
		}
		if jitter > 0 {
			s = &jitteredSource{s: s, rng: rand.New(rand.NewPCG(jitter, uint64(a))), amp: dyorcOverloadJitterUs}
		}
		srcs[a] = s
	}
	pol, err := testPolicies.New(dep, dataplane.Config{Policy: policy, Params: map[string]string{"seed": fmt.Sprint(pseed)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(dep, pol, srcs, sim.Options{Duration: dataplane.Time(dyorcOverloadDur / time.Microsecond), Seed: sim.PointSeed(1, lf, -1),
		OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
			n++
			if r.Outcome == dataplane.Completed {
				met++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return met, n
}

// TestAgreementDyOrcOverload: the bundled DyOrc plan (testdata/export/dyorc/plan.json) at 3×
// its rates, `plan load` against `plan serve`: the share of the trace's requests answered
// within their SLO, as the client measures it, lies within the simulator's realizations of
// the same trace (dyorcOverloadSeeds' comment says why a range), widened by
// dyorcOverloadMargin. A count ratio, not a timing: the realizations are deterministic.
func TestAgreementDyOrcOverload(t *testing.T) {
	skipUnlessAgreement(t)
	// One serve run scatters as widely as the realizations themselves (40.9% and 66.0% in
	// two runs back to back on a busy machine, against a 26.6–65.0% bound): a range this
	// wide catches gross errors only, and a run past its edge is no error. So it runs under
	// make test-full, not in every CI run.
	testmode.Heavy(t, "TestAgreementDyOrc (serve and simulate within 2 points below the knee)")
	plan, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "export", "dyorc", "plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, def, err := testDeploy(plan)
	if err != nil {
		t.Fatal(err)
	}
	if dep.Kind != dpdyorc.Kind || def == "" {
		t.Fatalf("deployment kind %q, default policy %q: want a dyorc deployment", dep.Kind, def)
	}
	var shares []float64
	total := -1
	for _, ps := range dyorcOverloadSeeds {
		for _, j := range dyorcOverloadJitters {
			met, n := dyorcRealization(t, dep, def, dyorcOverloadFactor, ps, j)
			if total >= 0 && n != total {
				t.Fatalf("realization (seed %d, jitter %d) has %d requests, the others %d", ps, j, n, total)
			}
			total = n
			shares = append(shares, float64(met)/float64(n))
		}
	}
	slices.Sort(shares)
	lo, hi := shares[0], shares[len(shares)-1]
	var mean float64
	for _, s := range shares {
		mean += s / float64(len(shares))
	}

	s, err := serve.New(serve.Options{Plan: plan, Deploy: testDeploy, Policies: testPolicies})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	spec, _ := sim.ParseArrival("poisson")
	res, err := Run(context.Background(), Options{Deploy: testDeploy, URL: ts.URL, Sections: testSections, Load: dyorcOverloadFactor, Duration: dyorcOverloadDur, Arrival: spec, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Samples) != total {
		t.Fatalf("the load generator sent %d requests, the simulator's trace has %d", len(res.Samples), total)
	}
	got := float64(res.Outcomes.Completed) / float64(total)
	below := 0
	for _, x := range shares {
		if x < got {
			below++
		}
	}
	t.Logf("%d requests at %g×: goodput share serve %.2f%% (%+v; generator lag %v, driver timer lateness p95 ≤ %v, p99 ≤ %v); simulate %.2f–%.2f%% over %d realizations (mean %.2f%%, %d below serve; serve/mean %.3f)",
		total, dyorcOverloadFactor, 100*got, res.Outcomes, res.Lag, s.TimerLateness(0.95), s.TimerLateness(0.99),
		100*lo, 100*hi, len(shares), 100*mean, below, got/mean)
	if got < lo-dyorcOverloadMargin || got > hi+dyorcOverloadMargin {
		t.Errorf("goodput share %.2f%% is outside the simulator's realizations %.2f–%.2f%% (± %g points)", 100*got, 100*lo, 100*hi, 100*dyorcOverloadMargin)
	}
}
