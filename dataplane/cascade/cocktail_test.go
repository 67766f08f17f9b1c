package cascade_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/sim"
)

// TestCocktail runs the Cocktail+ baseline on a single-model plan (bert-base on both GPUs)
// through a spike: the second replica joins only after loading the model (DLoad: ≥ 1 s, so
// the spike's latency rises), leaves at the end of an interval without load (DEvict), and
// the time-averaged GPU count lies between one and two. With a packing factor above the
// spike, no replica ever joins.
func joinRates(q []float64) string {
	var b strings.Builder
	for i, x := range q {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	}
	return b.String()
}

// twoReplicas is the example plan cut to one gear of bert-base on two one-GPU replicas,
// each given half of the traffic, the first replica's queue triggering at one request.
func twoReplicas(t *testing.T) *dataplane.Deployment {
	t.Helper()
	plan := examplePlan(t)
	cp := *cascadesec.PlanOf(plan)
	cp.Placement = []cascadesec.Replica{{Model: "bert-base", GPUs: []int{0}}, {Model: "bert-base", GPUs: []int{1}}}
	cp.Gears = []cascadesec.Gear{{QLo: 0, QHi: 14000, Models: []string{"bert-base"}, Thr: []float64{},
		Share: map[string][]float64{"bert-base": {0.5, 0.5}}, Trigger: map[string]int{"bert-base": 1}}}
	cascadesec.SetPlan(plan, &cp)
	dep, err := dpc.FromPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// spikeRates is 16 seconds of 200 req/s with 1,500 req/s from the 4th to the 6th second.
func spikeRates() []float64 {
	rates := make([]float64, 16)
	for i := range rates {
		rates[i] = 200
		if i >= 3 && i < 6 {
			rates[i] = 1500
		}
	}
	return rates
}

func TestCocktail(t *testing.T) {
	dep := twoReplicas(t)
	rates := spikeRates()
	tests := []struct {
		name   string
		params map[string]string
		loads  int64
		gpuLo  float64
		gpuHi  float64
		// joinAt: the second replica's first batch, no earlier (0: never); joinBy: before
		joinAt, joinBy dataplane.Time
	}{
		{"scales out and in", map[string]string{"packing": "1000", "interval_ms": "5000"}, 2, 1.05, 1.9, 4 * dataplane.Second, 0},
		{"packing above the spike", map[string]string{"packing": "5000"}, 1, 1, 1, 0, 0},
		// the paper's oracle: the spike's true QPS is known an interval ahead, so the
		// second replica has loaded before the spike arrives
		{"oracle provisions ahead", map[string]string{"packing": "1000", "interval_ms": "5000", "future_qps": joinRates(rates)}, 2, 1.05, 1.9, 0, 3 * dataplane.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := dpc.Registry().New(dep, dataplane.Config{Policy: dpc.PolicyCocktail, Params: tc.params}, dpc.PolicyGears)
			if err != nil {
				t.Fatal(err)
			}
			finished := map[dataplane.ReqID]int{}
			var spikeMax dataplane.Time
			join := dataplane.Time(-1)
			var s *sim.Sim
			s, err = sim.New(dep, pol, []sim.Source{steps(rates)}, sim.Options{Duration: 16 * dataplane.Second, Seed: 1,
				OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
					finished[r.ID]++
					for _, id := range s.Engine.RequestBatches(r.ID) {
						if h := s.Engine.Batch(id).Hops[0]; h.Worker == 1 && (join < 0 || h.Start < join) {
							join = h.Start
						}
					}
					if r.Arrival >= 3*dataplane.Second && r.Arrival < 6*dataplane.Second {
						spikeMax = max(spikeMax, r.Done-r.Arrival)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.Run()
			if err != nil {
				t.Fatal(err)
			}
			reqs := s.Engine.Requests()
			for i := range reqs {
				r := &reqs[i]
				if r.Outcome == dataplane.Pending || r.Outcome == dataplane.Dropped || finished[r.ID] != 1 {
					t.Fatalf("request %d: outcome %v, finished %d times", r.ID, r.Outcome, finished[r.ID])
				}
			}
			c := pol.(*dpc.Cocktail)
			avg := c.GPUAverage(16 * dataplane.Second)
			t.Logf("%d requests, %d loads, %.2f GPUs on average, spike max latency %.0f ms", m.Total.Requests, c.Loads, avg, float64(spikeMax)/1000)
			if c.Loads != tc.loads {
				t.Errorf("%d loads, want %d", c.Loads, tc.loads)
			}
			if avg < tc.gpuLo-1e-9 || avg > tc.gpuHi+1e-9 {
				t.Errorf("%.3f GPUs on average, want [%g, %g]", avg, tc.gpuLo, tc.gpuHi)
			}
			switch {
			case tc.joinBy > 0 && (join < 0 || join >= tc.joinBy):
				t.Errorf("the second replica served from %v µs: the oracle has it loaded before the spike (%v µs)", join, tc.joinBy)
			case tc.joinBy > 0:
			case tc.joinAt == 0 && join >= 0:
				t.Errorf("the second replica served from %v µs: it never joins", join)
			case tc.joinAt > 0 && join < tc.joinAt:
				t.Errorf("the second replica served from %v µs: it joins at the spike (3 s) after loading for ≥ 1 s", join)
			}
		})
	}
	pol, err := dpc.Registry().New(dep, dataplane.Config{Policy: dpc.PolicyCocktail, Params: map[string]string{"model": "gpt"}}, dpc.PolicyGears)
	if err == nil {
		_, err = sim.New(dep, pol, []sim.Source{steps(rates)}, sim.Options{Duration: dataplane.Second})
	}
	if err == nil || !strings.Contains(err.Error(), `model "gpt": not a model of the deployment`) {
		t.Errorf("an unknown model must fail at attach: %v", err)
	}
	if _, err := dpc.Registry().New(dep, dataplane.Config{Policy: dpc.PolicyCocktail, Params: map[string]string{"interval_ms": "10"}}, dpc.PolicyGears); err == nil {
		t.Error("interval_ms below poll_ms must fail")
	}
}

// TestCocktailCounts checks the index's counts of active replicas and held GPUs, and its
// routing choice, against a scan of every replica after every event: through scale-out and
// scale-in, a failure, and the scaled golden plan's fleet loading replica by replica.
func TestCocktailCounts(t *testing.T) {
	two := twoReplicas(t)
	spike := spikeRates()
	tests := []struct {
		name     string
		dep      *dataplane.Deployment
		params   map[string]string
		rate     []float64
		failures []sim.Failure
		dur      dataplane.Time
		// held: the GPUs held at some point (the run scaled out to them)
		held int
	}{
		{"scales out and in", two, map[string]string{"packing": "1000", "interval_ms": "5000"}, spike, nil, 16 * dataplane.Second, 2},
		{"active replica fails", two, map[string]string{"packing": "5000"}, spike[:6], []sim.Failure{{Worker: 0, At: 1500 * dataplane.Millisecond, Until: 3500 * dataplane.Millisecond}}, 6 * dataplane.Second, 1},
		{"golden plan, 16 GPUs", scaledDeployment(t, scaleBase), nil, []float64{7000}, nil, dataplane.Second, 13},
		// 74 replicas: 182 of the routing tree's 256 leaves are padding
		{"golden plan, 74 GPUs", scaledDeployment(t, 37), nil, []float64{37 * 875, 37 * 875, 37 * 875}, nil, 3 * dataplane.Second, 71},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := dpc.Registry().New(tc.dep, dataplane.Config{Policy: dpc.PolicyCocktail, Params: tc.params}, dpc.PolicyGears)
			if err != nil {
				t.Fatal(err)
			}
			s, err := sim.New(tc.dep, pol, []sim.Source{steps(tc.rate)}, sim.Options{Duration: tc.dur, Seed: 1, Horizon: 600 * dataplane.Second, Failures: tc.failures})
			if err != nil {
				t.Fatal(err)
			}
			c := pol.(*dpc.Cocktail)
			events, bad := 0, 0
			maxHeld := 0
			s.Engine.Observe(func(now dataplane.Time, _ *dataplane.Event, _ []dataplane.Decision) {
				events++
				a, h, sa, sh := dpc.CocktailCounts(c)
				maxHeld = max(maxHeld, h)
				if (a != sa || h != sh) && bad < 5 {
					bad++
					t.Errorf("at %d µs: counted %d active, %d GPUs held; a scan finds %d, %d", now, a, h, sa, sh)
				}
				if i, sc := dpc.CocktailPick(c); i != sc && bad < 5 {
					bad++
					t.Errorf("at %d µs: the index routes to replica %d, the scan to %d", now, i, sc)
				}
			})
			if _, err := s.Run(); err != nil {
				t.Fatal(err)
			}
			if maxHeld < tc.held {
				t.Errorf("at most %d GPUs held, want %d", maxHeld, tc.held)
			}
			t.Logf("%d events, up to %d GPUs held", events, maxHeld)
		})
	}
}
