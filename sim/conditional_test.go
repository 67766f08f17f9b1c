package sim

import (
	"math"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dppard "github.com/plan-dev/plan/dataplane/pard"
)

// TestConditionalModules: a workload edge's probability is honoured in simulation — the
// conditional module runs for about that share of the requests, the others skip it, and every
// request still finishes (Edge.Probability). Chains and a sink that is itself
// conditional are both covered.
func TestConditionalModules(t *testing.T) {
	lat := []dataplane.Time{0, 2000, 3000}
	for _, tc := range []struct {
		name  string
		mods  []dppard.ModuleSpec
		watch string
		p     float64
	}{
		{"middle", []dppard.ModuleSpec{
			{Name: "a", GPU: "T4", Batch: 2, LatUs: lat, Workers: 2},
			{Name: "b", After: []string{"a"}, Prob: 0.3, GPU: "T4", Batch: 2, LatUs: lat, Workers: 2},
			{Name: "c", After: []string{"b"}, GPU: "T4", Batch: 2, LatUs: lat, Workers: 2},
		}, "app/b", 0.3},
		{"sink", []dppard.ModuleSpec{
			{Name: "a", GPU: "T4", Batch: 2, LatUs: lat, Workers: 2},
			{Name: "b", After: []string{"a"}, Prob: 0.7, GPU: "T4", Batch: 2, LatUs: lat, Workers: 2},
		}, "app/b", 0.7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dep, err := dppard.NewPipelineDeployment([]dppard.PipelineSpec{{Name: "app", SLO: 200 * dataplane.Millisecond, RateRPS: 200, Modules: tc.mods}}, dppard.DefaultHop)
			if err != nil {
				t.Fatal(err)
			}
			pol, err := testPolicies.New(dep, dataplane.Config{Policy: "pard"}, "")
			if err != nil {
				t.Fatal(err)
			}
			spec, _ := ParseArrival("poisson")
			src, _ := spec.New(200, "app", 3)
			s, err := New(dep, pol, []Source{src}, Options{Duration: 20 * dataplane.Second, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.Run()
			if err != nil {
				t.Fatal(err)
			}
			visited, total := 0, 0
			reqs := s.Engine.Requests()
			for i := range reqs {
				r := &reqs[i]
				if r.Outcome == dataplane.Pending {
					t.Fatalf("request %d never finished", r.ID)
				}
				total++
				for _, b := range s.Engine.RequestBatches(r.ID) {
					for _, h := range s.Engine.Batch(b).Hops {
						if dep.Stages[h.Stage].Name == tc.watch {
							visited++
						}
					}
				}
			}
			share := float64(visited) / float64(total)
			if math.Abs(share-tc.p) > 0.03 {
				t.Errorf("%s ran for %.3f of %d requests, want ≈ %.2f", tc.watch, share, total, tc.p)
			}
			if m.Total.Attainment < 0.95 {
				t.Errorf("attainment %.3f at a light load", m.Total.Attainment)
			}
		})
	}
}
