package llmdeploy

import (
	"reflect"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/planner/llmcap"
	"github.com/plan-dev/plan/planner/qlm"
	"github.com/plan-dev/plan/sim"
)

// simPoint runs the simulator's Poisson point (sim.RunPoint at load 1, as sim.PoissonPoint
// does) of one instance of c's profile serving classes at rate req/s in total under policy
// pol with admission off, over the capacity judge's window of n requests (llmcap.Span: the
// run's arrivals stop at the (n+1)-th request's, its warm-up ends at the first judged one's),
// keeping every request's record. It returns the point and the window's requests
// (llmcap.Draw).
func simPoint(t *testing.T, c Candidate, classes []llmspec.LLMClass, rate float64, n int, seed uint64, pol string) (*sim.Point, []llm.Request, []int) {
	t.Helper()
	reqs, cls := llmcap.Draw(classes, rate, n, seed)
	dur, warmup, ok := llmcap.Span(classes, rate, n, seed)
	if !ok {
		t.Fatalf("%g req/s: no window of %d requests", rate, n)
	}
	mix := llmcap.AtRate(classes, rate)
	p := c.Roles[0].Profile
	dep, err := dq.Build(mix, dq.Setup{ReplanMs: 500, Profiles: []formats.LLMProfile{*p},
		Instances: []dq.Instance{{Name: "llm-0", GPU: p.GPU, GPUCount: max(p.GPUCount, 1), Model: c.Model}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &sim.SweepConfig{Dep: dep, Policies: dq.Registry(), Policy: dataplane.Config{Policy: pol, Params: map[string]string{"admit": "all"}},
		Arrival: workload.ArrivalSpec{Kind: "poisson", Name: "poisson"}, Loads: []float64{1}, Duration: dur, Seed: seed,
		Warmup: warmup, LLM: sim.LLMClassesOf(dep, mix), RecordRequests: true}
	pt, err := sim.RunPoint(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	return pt, reqs, cls
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

// TestProbeJudgesAsTheSimulator: the search's fast evaluator (dataplane/llm's replay of one
// engine, FCFS as vLLM schedules) is the engine the simulator runs: on the judge's window at
// a light rate and an overloading one, the replay and the simulator's Poisson point of the
// same instance under vLLM's FCFS policy (dataplane/qlm's fcfs, admission off) answer every
// request at the same µs (first token and last) with the same preemptions, and count each
// class alike (the same checks, share for share, on every SLO); and the capacity judge
// (llmcap.Capacity) finds the same capacity on the simulator's points as on the probe's.
func TestProbeJudgesAsTheSimulator(t *testing.T) {
	cands, classes := aggregatedCandidates(t)
	o := small.withDefaults()
	for _, c := range cands {
		e, err := Capacity(AggregatedEvaluator{}, c, classes, small)
		if err != nil {
			t.Fatal(err)
		}
		if e.Rate <= 0 {
			t.Fatalf("%s: capacity 0", c.Label())
		}
		for _, f := range []float64{0.5, 2} {
			rate := e.Rate * f
			pt, reqs, cls := simPoint(t, c, classes, rate, o.Requests, o.Seed, dq.PolicyFCFS)
			res, _ := llm.Replay(llm.NewModel(c.Roles[0].Profile), reqs, fcfs.New())
			if len(pt.Requests) != len(reqs) {
				t.Fatalf("%s at %.3g req/s: the simulator ran %d requests, the window holds %d", c.Label(), rate, len(pt.Requests), len(reqs))
			}
			for i, r := range pt.Requests {
				q := res[i]
				first := int64(-1)
				if r.FirstTokenUs != nil {
					first = *r.FirstTokenUs
				}
				if r.ID != int64(q.ID) || first != int64(q.FirstToken) || r.DoneUs != int64(q.Done) || int(r.Preemptions) != q.Preemptions {
					t.Fatalf("%s at %.3g req/s: request %d (%s): simulator first token %d µs, done %d µs, %d preemptions; replay %d µs, %d µs, %d",
						c.Label(), rate, i, classes[cls[i]].Name, first, r.DoneUs, r.Preemptions, q.FirstToken, q.Done, q.Preemptions)
				}
			}
			probe, err := AggregatedEvaluator{}.Probe(c, classes, rate, o)
			if err != nil {
				t.Fatal(err)
			}
			for k, cl := range classes {
				m := pt.Apps[k]
				if int(m.Requests) != probe[k].Requests {
					t.Errorf("%s at %.3g req/s: %s: the probe judged %d requests, the simulator %d", c.Label(), rate, cl.Name, probe[k].Requests, m.Requests)
				}
				if want := llmcap.Checks(&cl, &m); !reflect.DeepEqual(probe[k].Checks, want) {
					t.Errorf("%s at %.3g req/s: %s: the probe judged\n%+v\nthe simulator\n%+v", c.Label(), rate, cl.Name, probe[k].Checks, want)
				}
			}
			if met := llmcap.Met(classes, pt.Apps); met != (f < 1) {
				t.Errorf("%s: at %.2g× its capacity the SLOs met: %t", c.Label(), f, met)
			}
		}
		theta := c.Roles[0].Profile.ThroughputTokensPerS
		got, err := llmcap.Capacity(classes, llmcap.Start(theta, classes), o.Requests, o.Seed, func(rate float64, n int, seed uint64) ([]workload.AppMetrics, error) {
			pt, _, _ := simPoint(t, c, classes, rate, n, seed, dq.PolicyFCFS)
			return pt.Apps, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.Rate != e.Rate {
			t.Errorf("%s: capacity %.4g req/s by the search's probe, %.4g by the simulator's point", c.Label(), e.Rate, got.Rate)
		}
	}
}

// TestCapacityAgreesWithQLMPlanner: the deployment search and the QLM planner size the same
// instance by the same judge: Capacity (the search's replay) and qlm.InstanceRateUnder (the
// simulator's point) of the same profile, engine and classes under the same policy (vLLM's
// FCFS, what the search deploys), each at its defaults, are the same rate to the 10⁻⁴ req/s
// both round to — not merely close. (QLM's own InstanceRate asks the same judge under QLM's
// policy, whose queue order may serve more.)
func TestCapacityAgreesWithQLMPlanner(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml", "profile-8b-h100-tp1.json")
	cands, classes := aggregatedCandidates(t)
	for _, c := range cands {
		e, err := Capacity(AggregatedEvaluator{}, c, classes, Options{})
		if err != nil {
			t.Fatal(err)
		}
		q, err := qlm.InstanceRateUnder(sim.PoissonPoint, dq.PolicyFCFS, c.Roles[0].Profile, in.Workload, c.Model)
		if err != nil {
			t.Fatal(err)
		}
		if e.Rate <= 0 || e.Rate != q {
			t.Errorf("%s: the search's capacity %.4f req/s, the QLM planner's %.4f: want the same positive rate", c.Label(), e.Rate, q)
		}
	}
}
