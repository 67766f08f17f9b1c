package ppipesys

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestStale: a plan stating what it serves has no stale finding and is compared by what it
// serves; one whose model states its capacity (the rule before) gets a failed
// stated_throughput check for that model, stated rate as value and served rate as limit, and
// is compared by capacity, like a plan without a prediction.
func TestStale(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stale     []int // models made to state their capacity
		wantWhat  string
		wantModel []string
	}{
		{name: "states what it serves", wantWhat: "model m0: throughput"},
		{name: "m1 states its capacity", stale: []int{1}, wantWhat: "model m0: capacity", wantModel: []string{"m1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := formats.ReadInto[*formats.Plan]("../../../../testdata/golden/ppipe-2models.json", intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			pp := ppipesec.PlanOf(pl)
			served := map[string]float64{}
			for _, m := range pp.Models {
				served[m.Model] = m.ThroughputRPS
			}
			for _, i := range tc.stale {
				pp.Models[i].ThroughputRPS = capacityOf(&pp.Models[i])
			}
			ppipesec.SetPlan(pl, pp)
			if vs, _ := (Checker{}).Verify(pl); len(vs) > 0 {
				t.Fatalf("Verify: %v", vs)
			}
			cs := (Checker{}).Stale(pl)
			var models []string
			for _, c := range cs {
				models = append(models, c.Subject)
				if c.OK || c.Name != "stated_throughput" || c.Value == nil || c.Limit == nil {
					t.Fatalf("finding %+v: want a failed stated_throughput check with value and limit", c)
				}
				if *c.Limit != served[c.Subject] || !(*c.Value > *c.Limit) {
					t.Errorf("%s: stated %g, limit %g: want the limit the served %g, below the stated", c.Subject, *c.Value, *c.Limit, served[c.Subject])
				}
			}
			if strings.Join(models, ",") != strings.Join(tc.wantModel, ",") {
				t.Errorf("stale models %v, want %v", models, tc.wantModel)
			}
			cmp := (Checker{}).Compare(pl, pl, 0.01)
			if len(cmp) == 0 || !strings.Contains(cmp[0].Line, tc.wantWhat) {
				t.Errorf("Compare: %+v: want a first line with %q", cmp, tc.wantWhat)
			}
		})
	}
}
