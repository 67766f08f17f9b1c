package ppipe

import (
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestFromPlanRate: load factor 1.0 is the plan's guaranteed rate (target_rps) when it has
// one, even where throughput_rps reports more capacity; else the throughput.
func TestFromPlanRate(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "sim", "hc1-100.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	m := &ppipesec.PlanOf(p).Models[0]
	for _, c := range []struct{ target, want float64 }{{0, m.ThroughputRPS}, {m.ThroughputRPS / 2, m.ThroughputRPS / 2}} {
		m.TargetRPS = c.target
		d, err := FromPlan(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Apps[0].RateRPS; got != c.want {
			t.Errorf("target_rps %g, throughput_rps %g: rate %g, want %g", c.target, m.ThroughputRPS, got, c.want)
		}
	}
}
