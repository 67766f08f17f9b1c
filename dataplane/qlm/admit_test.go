package qlm

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/sim"
)

// paperAdmission are the parameters of the paper's policies, which admit every request (QLM
// §8): the tests of their behaviour under overload (decision hashes, failover, re-plans,
// drop_late) run them so.
var paperAdmission = map[string]string{"admit": "all"}

// predictAdmission turns the admission judge on (dataplane/llm's Judge; off by default).
var predictAdmission = map[string]string{"admit": "predict"}

// overloadOutcome counts what a run at some load did: requests offered, refused at arrival
// as would-finish-late, admitted and served on time or late, otherwise dropped.
type overloadOutcome struct {
	offered, refused, onTime, late, dropped int
	// retryAfter counts the refusals by the Retry-After they would be answered with (s).
	retryAfter map[int64]int
}

func (o overloadOutcome) admitted() int { return o.onTime + o.late }

// attainment is the share of admitted requests that met their SLO.
func (o overloadOutcome) attainment() float64 {
	if o.admitted() == 0 {
		return 1
	}
	return float64(o.onTime) / float64(o.admitted())
}

// oneInstanceOverload is one instance of the bundled mistral-7b profile serving one class
// (20 s SLO, prompts ~500 tokens, outputs ~200), the shape of the OpenAI front end's
// overload runs.
func oneInstanceOverload(t testing.TB) (*dataplane.Deployment, llmspec.LLMClass) {
	t.Helper()
	_, profs := bundled(t)
	var prof formats.LLMProfile
	for _, p := range profs {
		if p.Model == "mistral-7b" {
			prof = p
		}
	}
	c := llmspec.LLMClass{Name: "chat", Model: "mistral-7b", SLO: formats.Duration(20 * time.Second), RateRPS: 1,
		InputTokens: llmspec.TokenProfile{Mean: 500, Std: 150, Max: 1500}, OutputTokens: llmspec.TokenProfile{Mean: 200, Std: 60, Max: 400}}
	dep, err := Build([]llmspec.LLMClass{c}, Setup{Profiles: []formats.LLMProfile{prof}, Instances: []Instance{{Name: "i0", GPU: prof.GPU, Model: prof.Model}}})
	if err != nil {
		t.Fatal(err)
	}
	return dep, c
}

// runOverload offers n Poisson arrivals at rate per second (seeded) to dep under pol with
// params, each with its own tokens drawn from class c, and counts the outcomes.
func runOverload(t testing.TB, dep *dataplane.Deployment, c llmspec.LLMClass, pol string, params map[string]string, rate float64, n int) overloadOutcome {
	t.Helper()
	p, err := Registry().New(dep, dataplane.Config{Policy: pol, Params: params}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 3))
	draw := func(tp llmspec.TokenProfile) int32 {
		return int32(min(max(math.Round(tp.Mean+tp.Std*rng.NormFloat64()), 1), float64(tp.Max)))
	}
	var at []dataplane.Time
	var attrs []dataplane.Attrs
	now := 0.0
	for range n {
		now += rng.ExpFloat64() / rate * 1e6
		at = append(at, dataplane.Time(now))
		attrs = append(attrs, dataplane.Attrs{InTokens: draw(c.InputTokens), OutTokens: draw(c.OutputTokens)})
	}
	var o overloadOutcome
	s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: at}}, sim.Options{Duration: at[len(at)-1] + dataplane.Time(c.SLO.D().Microseconds())*20,
		Attrs: func(_ dataplane.AppID, k int64) dataplane.Attrs { return attrs[k] },
		OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
			o.offered++
			switch {
			case r.Outcome == dataplane.Dropped && r.Reason() == DropWouldBeLate:
				o.refused++
				if o.retryAfter == nil {
					o.retryAfter = map[int64]int{}
				}
				o.retryAfter[llm.RetryAfter(r.Estimate)]++
			case r.Outcome == dataplane.Dropped:
				o.dropped++
			case r.Outcome == dataplane.Completed:
				o.onTime++
			default:
				o.late++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if o.offered != n {
		t.Fatalf("%d of %d requests reached an outcome", o.offered, n)
	}
	return o
}

// TestAdmissionAtSixTimesCapacity: one instance that serves 10 requests/s of the class on
// time (every one at 10/s, a seventh late at 15/s without admission) is offered 60/s.
// Admitting everything, most requests finish late; with admission (the default) at least
// 95% of the admitted ones meet the SLO, the rest are refused at arrival as would-finish-late
// (never lost: every request is admitted or refused), and at capacity nothing is refused.
func TestAdmissionAtSixTimesCapacity(t *testing.T) {
	dep, c := oneInstanceOverload(t)
	for _, pol := range []string{PolicyQLM, PolicyFCFS, PolicyEDF} {
		t.Run(pol, func(t *testing.T) {
			at := runOverload(t, dep, c, pol, predictAdmission, 10, 600)
			if at.refused != 0 || at.late != 0 {
				t.Errorf("at capacity (10/s): %+v: want every request admitted and on time", at)
			}
			all := runOverload(t, dep, c, pol, map[string]string{"admit": "all"}, 60, 600)
			if all.attainment() > 0.5 {
				t.Errorf("6× admitting all: %+v: attainment %.3f, want most late (the scenario must overload)", all, all.attainment())
			}
			o := runOverload(t, dep, c, pol, predictAdmission, 60, 600)
			t.Logf("6×: admitted %d (%d on time, %d late), refused %d (Retry-After s: count %v); admitting all: %d on time of %d", o.admitted(), o.onTime, o.late, o.refused, o.retryAfter, all.onTime, all.offered)
			if o.attainment() < 0.95 {
				t.Errorf("6×: %+v: %.3f of the admitted met the SLO, want >= 0.95", o, o.attainment())
			}
			if o.refused == 0 || o.dropped != 0 || o.admitted()+o.refused != o.offered {
				t.Errorf("6×: %+v: want refusals, and every request admitted or refused", o)
			}
			if o.onTime < all.onTime {
				t.Errorf("6×: %d on time with admission, %d without: admission should not cost goodput", o.onTime, all.onTime)
			}
		})
	}
}

// TestAdmitParameter: admit takes predict or all, admit_headroom a share in [0, 1), and
// nothing else; without them every policy admits by prediction with 5% of each SLO kept
// free (serve's and simulate's judges agree: serve/load TestOpenAIAgreementOverload).
func TestAdmitParameter(t *testing.T) {
	dep, _ := oneInstanceOverload(t)
	for _, tc := range []struct {
		k, v string
		ok   bool
	}{{"admit", "predict", true}, {"admit", "all", true}, {"admit", "none", false}, {"admit", "", false},
		{"admit_headroom", "0", true}, {"admit_headroom", "0.2", true}, {"admit_headroom", "1", false}, {"admit_headroom", "-0.1", false}, {"admit_headroom", "x", false}} {
		_, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM, Params: map[string]string{tc.k: tc.v}}, PolicyQLM)
		if (err == nil) != tc.ok {
			t.Errorf("%s=%q: error %v, want ok %v", tc.k, tc.v, err, tc.ok)
		}
	}
	for _, sp := range Policies() {
		p, err := Registry().New(dep, dataplane.Config{Policy: sp.Name}, PolicyQLM)
		if err != nil {
			t.Fatal(err)
		}
		if o := p.(*Policy).opt; !o.admit || o.headroom != 0.05 {
			t.Errorf("%s by default: admit %v, headroom %v; want admission by prediction, 0.05", sp.Name, o.admit, o.headroom)
		}
	}
}
