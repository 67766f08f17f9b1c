package qlm

import (
	"path/filepath"
	"reflect"
	"testing"

	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/planner/llmcap"
	"github.com/plan-dev/plan/sim"
)

// capacityFixture is one instance-rate search: model's classes of a workload on one A100
// instance of the profile's, both under testdata/dir.
type capacityFixture struct{ name, dir, workload, profile, model string }

// capacityFixtures: the autopilot's (two Azure-shaped Mistral-7B classes, where QLM's policy
// grows dearest with its queue), the bundled example's two models (interactive and batch
// SLOs), and the RAG class whose TTFT SLO is stated at p90.
var capacityFixtures = []capacityFixture{
	{"autopilot mistral-7b", "autopilot", "qlm-workload.yaml", "qlm-profile.json", "mistral-7b"},
	{"qlm mistral-7b", "qlm", "workload.yaml", "profile.json", "mistral-7b"},
	{"qlm vicuna-13b", "qlm", "workload.yaml", "profile.json", "vicuna-13b"},
	{"qlm rag ttft p90", "qlm", "workload-rag-ttft-p90.yaml", "profile.json", "mistral-7b"},
}

// load reads the fixture's workload and its model's one-GPU A100 profile.
func (f capacityFixture) load(t testing.TB) (*formats.LLMProfile, *formats.Workload) {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", f.dir)
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, f.workload), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	p, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, f.profile), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range p.LLMs {
		if l.Model == f.model && l.GPU == "A100" && l.GPUCount <= 1 {
			return &p.LLMs[i], w
		}
	}
	t.Fatalf("%s: no one-GPU A100 profile of %s", f.profile, f.model)
	return nil, nil
}

// uncachedRate is InstanceRateUnder QLM's policy with the capacity cache emptied first, so
// the search runs its probes on point.
func uncachedRate(t testing.TB, point PointSimulator, pr *formats.LLMProfile, w *formats.Workload, model string) float64 {
	t.Helper()
	capMu.Lock()
	clear(capCache)
	capMu.Unlock()
	r, err := InstanceRateUnder(point, dq.PolicyQLM, pr, w, model)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStoppedProbesJudgeAsWhole: capacity probes on the simulator's point stopped once a
// class is certain to miss (sim.PoissonProbe) judge as the whole window does
// (sim.PoissonPoint): on the same seeds, at rates below, near and above the capacity,
// every probe passes or fails alike, a passing one is never stopped (its metrics are the
// whole window's), the probes well past capacity do stop, and the capacity judge finds the
// same rate from either.
func TestStoppedProbesJudgeAsWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates three capacity searches twice and 48 probes of 2,000 requests")
	}
	for _, f := range []capacityFixture{capacityFixtures[0], capacityFixtures[2], capacityFixtures[3]} {
		t.Run(f.name, func(t *testing.T) {
			pr, w := f.load(t)
			c := uncachedRate(t, testSim, pr, w, f.model)
			if got := uncachedRate(t, sim.PoissonProbe, pr, w, f.model); got != c {
				t.Errorf("capacity with stopped probes %g req/s, with whole ones %g", got, c)
			}
			if c <= 0 {
				t.Fatalf("capacity %g: the fixture must serve some rate", c)
			}
			classes := mixOf(w, f.model, 1)
			whole := instanceProbe(testSim, dq.PolicyQLM, pr, classes, f.model)
			early := instanceProbe(sim.PoissonProbe, dq.PolicyQLM, pr, classes, f.model)
			for _, seed := range []uint64{llmcap.Seed, 2} {
				for _, x := range []float64{0.5, 0.97, 1.03, 1.5} {
					rate := c * x
					a, err := whole(rate, llmcap.Requests, seed)
					if err != nil {
						t.Fatal(err)
					}
					b, err := early(rate, llmcap.Requests, seed)
					if err != nil {
						t.Fatal(err)
					}
					met, stopped := llmcap.Met(classes, a), !reflect.DeepEqual(a, b)
					t.Logf("seed %d, %.2f× capacity (%.4g req/s): met %t, stopped %t", seed, x, rate, met, stopped)
					if got := llmcap.Met(classes, b); got != met {
						t.Errorf("seed %d, %g req/s: stopped probe met %t, whole %t", seed, rate, got, met)
					}
					if met && stopped {
						t.Errorf("seed %d, %g req/s: a probe that meets differs from the whole window:\n got %+v\nwant %+v", seed, rate, b, a)
					}
					if x == 1.5 && !stopped {
						t.Errorf("seed %d, %g req/s (1.5× capacity): the probe ran its whole window", seed, rate)
					}
				}
			}
		})
	}
}

// BenchmarkInstanceRate: one instance-rate search per fixture (the cache emptied each
// time), its probes whole (sim.PoissonPoint) or stopped once certain to fail
// (sim.PoissonProbe). bench/results/qlm-llm.md records it.
func BenchmarkInstanceRate(b *testing.B) {
	for _, f := range capacityFixtures {
		pr, w := f.load(b)
		for _, m := range []struct {
			name  string
			point PointSimulator
		}{{"whole", sim.PoissonPoint}, {"stopped", sim.PoissonProbe}} {
			b.Run(f.name+"/"+m.name, func(b *testing.B) {
				var r float64
				for b.Loop() {
					r = uncachedRate(b, m.point, pr, w, f.model)
				}
				b.ReportMetric(r, "req/s")
			})
		}
	}
}
