package qlm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/fixture/policytest"
	"github.com/plan-dev/plan/sim"
)

// admitScenario is a simulation in which the admission judge refuses requests: one instance
// at 6× its capacity (oneInstanceOverload), or MixedDeployment's two models and three
// classes (interactive and batch SLOs: arrivals with earlier deadlines queue ahead of
// admitted ones, QLM's eviction makes running sequences give way) at 3× and 10× its load.
type admitScenario struct {
	name string
	run  func(t testing.TB, p dataplane.Policy, observe func(dataplane.Time, *dataplane.Event, []dataplane.Decision)) (refused int)
	dep  *dataplane.Deployment
	pol  string
}

func admitScenarios(t testing.TB) []admitScenario {
	one, c := oneInstanceOverload(t)
	mixed, mixed10 := mixedDeployment(t, 8, 3), mixedDeployment(t, 8, 10)
	var out []admitScenario
	for _, pol := range []string{PolicyQLM, PolicyFCFS, PolicyEDF} {
		out = append(out, admitScenario{name: "one-6x/" + pol, dep: one, pol: pol, run: func(t testing.TB, p dataplane.Policy, observe func(dataplane.Time, *dataplane.Event, []dataplane.Decision)) int {
			return runAdmitOne(t, one, c, p, observe)
		}})
	}
	for _, pol := range []string{PolicyFCFS, PolicyEDF, PolicyRR, PolicyRandom} {
		out = append(out, admitScenario{name: "mixed8-3x/" + pol, dep: mixed, pol: pol, run: func(t testing.TB, p dataplane.Policy, observe func(dataplane.Time, *dataplane.Event, []dataplane.Decision)) int {
			return runAdmitMixed(t, mixed, p, 30*dataplane.Second, observe)
		}})
	}
	// QLM's plan placement serves 3× on time; at 10× it refuses.
	for _, pol := range []string{PolicyQLM, PolicyNoEvict} {
		out = append(out, admitScenario{name: "mixed8-10x/" + pol, dep: mixed10, pol: pol, run: func(t testing.TB, p dataplane.Policy, observe func(dataplane.Time, *dataplane.Event, []dataplane.Decision)) int {
			return runAdmitMixed(t, mixed10, p, 15*dataplane.Second, observe)
		}})
	}
	return out
}

// runAdmitOne offers 600 Poisson arrivals at 60/s (seeded) of class c to one instance.
func runAdmitOne(t testing.TB, dep *dataplane.Deployment, c llmspec.LLMClass, p dataplane.Policy, observe func(dataplane.Time, *dataplane.Event, []dataplane.Decision)) int {
	rng := rand.New(rand.NewPCG(11, 3))
	draw := func(tp llmspec.TokenProfile) int32 {
		return int32(min(max(math.Round(tp.Mean+tp.Std*rng.NormFloat64()), 1), float64(tp.Max)))
	}
	var at []dataplane.Time
	var attrs []dataplane.Attrs
	now := 0.0
	for range 600 {
		now += rng.ExpFloat64() / 60 * 1e6
		at = append(at, dataplane.Time(now))
		attrs = append(attrs, dataplane.Attrs{InTokens: draw(c.InputTokens), OutTokens: draw(c.OutputTokens)})
	}
	refused := 0
	s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: at}}, sim.Options{Duration: at[len(at)-1] + 400*dataplane.Second,
		Attrs: func(_ dataplane.AppID, k int64) dataplane.Attrs { return attrs[k] },
		OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
			if r.Outcome == dataplane.Dropped && r.Reason() == DropWouldBeLate {
				refused++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.Observe(observe)
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return refused
}

// runAdmitMixed runs the deployment's Poisson arrivals for d.
func runAdmitMixed(t testing.TB, dep *dataplane.Deployment, p dataplane.Policy, d dataplane.Time, observe func(dataplane.Time, *dataplane.Event, []dataplane.Decision)) int {
	spec, _ := sim.ParseArrival("poisson")
	var srcs []sim.Source
	for a := range dep.Apps {
		s, err := spec.New(dep.Apps[a].RateRPS, dep.Apps[a].Name, uint64(a)+1)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	refused := 0
	s, err := sim.New(dep, p, srcs, sim.Options{Duration: d, Seed: 1,
		OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
			if r.Outcome == dataplane.Dropped && r.Reason() == DropWouldBeLate {
				refused++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.Observe(observe)
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return refused
}

// TestAdmissionDecisionHash: with admit=predict, the decision streams of the admission
// scenarios are those recorded with the full replay at every arrival (the judge before its
// checkpoint, decode heap and queue memo): making the judge cheap changed no decision, no
// Retry-After.
func TestAdmissionDecisionHash(t *testing.T) {
	// Recorded at a3f6459c (llm.Judge replaying the whole queue twice per arrival).
	want := map[string]string{
		"one-6x/qlm":              "f410c31566e7be68",
		"one-6x/qlm-vllm-fcfs":    "7e1f0e939cfa2da6",
		"one-6x/qlm-edf":          "7e1f0e939cfa2da6",
		"mixed8-3x/qlm-vllm-fcfs": "efe2e578c069c822",
		"mixed8-3x/qlm-edf":       "bdaaab009a12665f",
		"mixed8-3x/qlm-rr":        "3440786575c6b5cc",
		"mixed8-3x/qlm-random":    "e58fe4ae4576dd01",
		"mixed8-10x/qlm":          "ea64aceba6384ed7",
		"mixed8-10x/qlm-no-evict": "0fd01f499749f3d5",
	}
	for _, sc := range admitScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			p, err := Registry().New(sc.dep, dataplane.Config{Policy: sc.pol, Params: predictAdmission}, PolicyQLM)
			if err != nil {
				t.Fatal(err)
			}
			h := &policytest.DecisionHasher{NumbersFirst: true, Skip: firstToken}
			refused := sc.run(t, p, h.Observe)
			got := h.Sum()
			t.Logf("%s: hash %s, %d refused as would-finish-late", sc.name, got, refused)
			if refused == 0 {
				t.Errorf("%s: nothing refused: the scenario must overload", sc.name)
			}
			if w := want[sc.name]; w != got {
				t.Errorf("%s: decision hash %s, want %s", sc.name, got, w)
			}
		})
	}
}
