package llmdeploy

import (
	"math"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/qlm"
	"github.com/plan-dev/plan/sim"
)

// atRate are classes at their shares of a total rate (ClassRates), as a deployment states
// its applications' rates.
func atRate(classes []llmspec.LLMClass, rate float64) []llmspec.LLMClass {
	out := append([]llmspec.LLMClass(nil), classes...)
	for k, r := range ClassRates(classes, rate) {
		out[k].RateRPS = r
	}
	return out
}

// simPoint runs the simulator's Poisson point (sim.RunPoint at load 1, as sim.PoissonPoint
// does) of one instance of c's profile serving classes at rate req/s in total under policy
// pol with admission off, bounded by the arrivals Requests draws: the run's arrivals stop
// at the (n+1)-th request's, and its warm-up ends at the first judged one's (Judge's first
// warmupShare not judged). It returns the point and Requests' n requests.
func simPoint(t *testing.T, c Candidate, classes []llmspec.LLMClass, rate float64, n int, seed uint64, pol string) (*sim.Point, []llm.Request, []int) {
	t.Helper()
	reqs, cls := Requests(classes, rate, n+1, seed)
	mix := atRate(classes, rate)
	p := c.Roles[0].Profile
	dep, err := dq.Build(mix, dq.Setup{ReplanMs: 500, Profiles: []formats.LLMProfile{*p},
		Instances: []dq.Instance{{Name: "llm-0", GPU: p.GPU, GPUCount: max(p.GPUCount, 1), Model: c.Model}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &sim.SweepConfig{Dep: dep, Policies: dq.Registry(), Policy: dataplane.Config{Policy: pol, Params: map[string]string{"admit": "all"}},
		Arrival: workload.ArrivalSpec{Kind: "poisson", Name: "poisson"}, Loads: []float64{1}, Duration: reqs[n].Arrival, Seed: seed,
		Warmup: reqs[int(float64(n)*warmupShare)].Arrival, LLM: sim.LLMClassesOf(dep, mix), RecordRequests: true}
	pt, err := sim.RunPoint(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	return pt, reqs[:n], cls[:n]
}

// aggregatedCandidates are the search's aggregated candidates of the 8B chat class on H100
// and L40S at one engine setting, one given profile among them.
func aggregatedCandidates(t *testing.T) ([]Candidate, []llmspec.LLMClass) {
	t.Helper()
	in := inputs(t, "workload.yaml", "cluster.yaml", "profile-8b-h100-tp1.json")
	o := small
	o.TP = []int{1, 4}
	cands, err := Enumerate(in, o)
	if err != nil {
		t.Fatal(err)
	}
	var out []Candidate
	for _, c := range cands {
		if c.Mode == Aggregated && c.Model == "llama-3.1-8b" {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatal("no aggregated 8B candidate")
	}
	return out, classesOf(in.Workload, "llama-3.1-8b")
}

// TestRequestsAreTheSimulators: a probe's requests are the ones the simulator's Poisson
// point draws from the same seed (sim.PoissonPoint's arrival processes, numbering and
// token draws): the same arrival times, classes and token counts, request by request.
func TestRequestsAreTheSimulators(t *testing.T) {
	cands, classes := aggregatedCandidates(t)
	// Two classes at unequal shares, so the merge of their arrival processes is tested.
	two := append([]llmspec.LLMClass(nil), classes[0], classes[0])
	two[1].Name, two[1].RateRPS, two[1].InputTokens.Mean = "chat-long", two[0].RateRPS/3, 2000
	for _, seed := range []uint64{1, 7} {
		const n = 400
		pt, reqs, cls := simPoint(t, cands[0], two, 10, n, seed, dq.PolicyFCFS)
		if len(pt.Requests) != n {
			t.Fatalf("seed %d: the simulator ran %d requests, want %d", seed, len(pt.Requests), n)
		}
		for i, r := range pt.Requests {
			q := reqs[i]
			if r.ID != int64(q.ID) || r.ArrivalUs != int64(q.Arrival) || r.Class != two[cls[i]].Name || int(r.InputTokens) != q.Prompt || int(r.OutputTokens) != q.Out {
				t.Fatalf("seed %d: request %d: simulator id %d at %d µs class %s tokens %d/%d, probe id %d at %d µs class %s tokens %d/%d", seed, i,
					r.ID, r.ArrivalUs, r.Class, r.InputTokens, r.OutputTokens, q.ID, q.Arrival, two[cls[i]].Name, q.Prompt, q.Out)
			}
		}
	}
}

// TestProbeJudgesAsTheSimulator: the search's probe of one aggregated instance (dataplane/llm's
// replay, FCFS as vLLM schedules) and the simulator's Poisson point of the same instance under
// vLLM's FCFS policy (dataplane/qlm's fcfs, admission off) run the same requests and judge
// them by the same rule: the same checks, share for share, on every SLO of every class, at a
// light rate and an overloading one; and bisecting the simulator's verdict as Capacity
// bisects the probe's finds the same capacity.
func TestProbeJudgesAsTheSimulator(t *testing.T) {
	cands, classes := aggregatedCandidates(t)
	o := small.withDefaults()
	simMeets := func(c Candidate, rate float64) bool {
		pt, _, _ := simPoint(t, c, classes, rate, o.Requests, o.Seed, dq.PolicyFCFS)
		for k, cl := range classes {
			if m := pt.Apps[k]; m.Requests > 0 && !workload.AllMet(workload.LLMChecks(slosOf(&cl), &m)) {
				return false
			}
		}
		return true
	}
	for _, c := range cands {
		e, err := Capacity(AggregatedEvaluator{}, c, classes, small)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []float64{0.5, 2} {
			rate := e.Rate * f
			pt, _, _ := simPoint(t, c, classes, rate, o.Requests, o.Seed, dq.PolicyFCFS)
			probe, err := AggregatedEvaluator{}.Probe(c, classes, rate, o)
			if err != nil {
				t.Fatal(err)
			}
			met := true
			for k, cl := range classes {
				m := pt.Apps[k]
				if int(m.Requests) != probe[k].Requests {
					t.Errorf("%s at %.3g req/s: %s: the probe judged %d requests, the simulator %d", c.Label(), rate, cl.Name, probe[k].Requests, m.Requests)
				}
				want := workload.LLMChecks(slosOf(&cl), &m)
				if !reflect.DeepEqual(probe[k].Checks, want) {
					t.Errorf("%s at %.3g req/s: %s: the probe judged\n%+v\nthe simulator\n%+v", c.Label(), rate, cl.Name, probe[k].Checks, want)
				}
				met = met && workload.AllMet(want)
			}
			if met != (f < 1) {
				t.Errorf("%s: at %.2g× its capacity the SLOs met: %t", c.Label(), f, met)
			}
		}
		got, err := planner.HighestRate(start(c, classes), minRate, maxRate, 1+precision, func(rate float64) (bool, error) { return simMeets(c, rate), nil })
		if err != nil {
			t.Fatal(err)
		}
		if got = math.Round(got*1e4) / 1e4; got != e.Rate {
			t.Errorf("%s: capacity %.4g req/s by the search's probe, %.4g by the simulator's point", c.Label(), e.Rate, got)
		}
	}
}

// TestCapacityAgreesWithQLMPlanner: the deployment search and the QLM planner size the same
// instance alike: Capacity (the probe above, bisected to 2%) and qlm.InstanceRate (the
// simulator's point under QLM's policy, bisected to 3%) agree within their precisions and
// what QLM's reordering of the queue buys over FCFS.
func TestCapacityAgreesWithQLMPlanner(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml", "profile-8b-h100-tp1.json")
	cands, classes := aggregatedCandidates(t)
	for _, c := range cands {
		e, err := Capacity(AggregatedEvaluator{}, c, classes, small)
		if err != nil {
			t.Fatal(err)
		}
		q, err := qlm.InstanceRate(sim.PoissonPoint, c.Roles[0].Profile, in.Workload, c.Model)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(e.Rate-q) > 0.15*q {
			t.Errorf("%s: the search's capacity %.3g req/s, the QLM planner's %.3g: more than 15%% apart", c.Label(), e.Rate, q)
		}
	}
}
