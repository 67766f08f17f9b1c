package cascade_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/internal/fixture/policytest"
	"github.com/plan-dev/plan/sim"
)

// TestSimScaleDecisionHash runs BenchmarkSimScale's points (two simulated seconds each) and
// checks the decision-stream hash against the one recorded with the replica scans the
// indexes replaced: an index must not change a single decision. The
// 256-GPU points run with PLAN_SCALE_HASH_FULL=1.
func TestSimScaleDecisionHash(t *testing.T) {
	// Recorded at 4f74776, before cocktail+'s routing and batch-start indexes.
	want := map[string]string{
		"cascadeserve/gpus=16":  "80e9b08e7d4eefd3",
		"cascadeserve/gpus=64":  "4c8d43b7ccbe78de",
		"cascadeserve/gpus=256": "90f306baaa0c7072",
		"cocktail+/gpus=16":     "d4b1d476e48b4092",
		"cocktail+/gpus=64":     "6aaca200f1c0de26",
		"cocktail+/gpus=256":    "5c61e3e373968962",
	}
	full := os.Getenv("PLAN_SCALE_HASH_FULL") != ""
	spec, _ := sim.ParseArrival("poisson")
	for _, pol := range []string{dpc.PolicyGears, dpc.PolicyCocktail} {
		for _, k := range []int{1, 4, 16} {
			if k == 16 && !full {
				continue
			}
			dep := scaledDeployment(t, scaleBase*k)
			name := fmt.Sprintf("%s/gpus=%d", pol, len(dep.Topo.GPUs))
			t.Run(name, func(t *testing.T) {
				p, err := dpc.Registry().New(dep, dataplane.Config{Policy: pol}, dpc.PolicyGears)
				if err != nil {
					t.Fatal(err)
				}
				src, err := spec.New(dep.Apps[0].RateRPS*0.5, dep.Apps[0].Name, 1)
				if err != nil {
					t.Fatal(err)
				}
				s, err := sim.New(dep, p, []sim.Source{src}, sim.Options{Duration: 2 * dataplane.Second, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				h := &policytest.DecisionHasher{NumbersFirst: true}
				s.Engine.Observe(h.Observe)
				if _, err := s.Run(); err != nil {
					t.Fatal(err)
				}
				got := h.Sum()
				t.Logf("%s: hash %s events %d", name, got, s.Engine.Events())
				if w := want[name]; w != got {
					t.Errorf("%s: decision hash %s, want %s", name, got, w)
				}
			})
		}
	}
}
