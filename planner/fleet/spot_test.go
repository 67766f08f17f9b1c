package fleet

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
)

// TestSummarizeSpot: under --spot each type with a spot price runs SpotSplit's spot share at
// its spot price, a type without one stays on-demand and is named; the all-on-demand cost is
// recorded beside the cost; Verify accepts the record and rejects a spot count past the rule,
// a spot price the cluster does not give and a wrong on-demand cost.
func TestSummarizeSpot(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	plan := func(a100, l4 int) *formats.Plan {
		return pardsec.SetPlan(&formats.Plan{}, &pardsec.PARDPlan{Apps: []pardsec.PARDApp{{Name: "a", Modules: []pardsec.ModulePlan{
			{Name: "m", GPU: "A100", Workers: a100}, {Name: "n", GPU: "L4", Workers: l4}}}}})
	}
	for _, tc := range []struct {
		name           string
		share          *float64
		a100, l4       int
		spotA100       int
		cost, onDemand float64
		noSpot         []string
	}{
		{"on-demand", nil, 3, 2, 0, 3*4 + 2*0.5, 0, nil},
		{"half of 3", f(0.5), 3, 2, 1, 2*4 + 1*1 + 2*0.5, 3*4 + 2*0.5, []string{"L4"}},
		{"share 0.3 of 10", f(0.3), 10, 1, 3, 7*4 + 3*1 + 0.5, 10*4 + 0.5, []string{"L4"}},
		{"all spot", f(1), 3, 1, 3, 3*1 + 0.5, 3*4 + 0.5, []string{"L4"}},
		{"no spot", f(0), 3, 1, 0, 3*4 + 0.5, 3*4 + 0.5, []string{"L4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &formats.Cluster{SpotShare: tc.share, GPUs: []formats.GPUPool{
				{Type: "A100", Count: 16, PerServer: 8, PricePerHour: f(4), SpotPricePerHour: f(1)},
				{Type: "L4", Count: 4, PerServer: 1, PricePerHour: f(0.5)},
			}}
			p := plan(tc.a100, tc.l4)
			if err := Finish(p, c); err != nil {
				t.Fatal(err)
			}
			fl := p.Fleet
			if fl.CostPerHour != tc.cost || fl.GPUsUsed[0].SpotCount != tc.spotA100 || strings.Join(fl.NoSpotPrice, ",") != strings.Join(tc.noSpot, ",") {
				t.Fatalf("fleet %s: cost %g, A100 spot %d, no spot price %v; want %g, %d, %v", Describe(fl), fl.CostPerHour, fl.GPUsUsed[0].SpotCount, fl.NoSpotPrice, tc.cost, tc.spotA100, tc.noSpot)
			}
			if tc.share == nil {
				if fl.SpotShare != nil || fl.OnDemandCostPerHour != nil || fl.GPUsUsed[0].SpotPricePerHour != nil {
					t.Fatalf("a plan without --spot records spot fields: %+v", fl)
				}
			} else if *fl.OnDemandCostPerHour != tc.onDemand || *fl.SpotShare != *tc.share {
				t.Fatalf("on-demand cost %g share %g, want %g %g", *fl.OnDemandCostPerHour, *fl.SpotShare, tc.onDemand, *tc.share)
			}
			// The plan as a file reads it back: no SpotShare on its cluster.
			p.Cluster.SpotShare = nil
			if errs := Verify(p); len(errs) > 0 {
				t.Fatalf("Verify: %v", errs)
			}
			if tc.share == nil {
				return
			}
			for _, bad := range []struct {
				edit func(fl *formats.Fleet)
				want string
			}{
				{func(fl *formats.Fleet) { fl.GPUsUsed[0].SpotCount++ }, "spot_count"},
				{func(fl *formats.Fleet) { fl.GPUsUsed[1].SpotPricePerHour = f(0.1) }, "fleet.gpus_used L4: spot_price_per_hour 0.1, the cluster gives none"},
				{func(fl *formats.Fleet) { *fl.OnDemandCostPerHour += 1 }, "fleet.on_demand_cost_per_hour"},
				{func(fl *formats.Fleet) { fl.GPUsUsed[0].SpotPricePerHour = f(0.7) }, "spot_price_per_hour 0.7, the cluster's is 1"},
			} {
				q := *p
				g := *p.Fleet
				g.GPUsUsed = append([]formats.FleetGPU(nil), p.Fleet.GPUsUsed...)
				od := *g.OnDemandCostPerHour
				g.OnDemandCostPerHour = &od
				bad.edit(&g)
				q.Fleet = &g
				if errs := Verify(&q); !strings.Contains(strings.Join(errs, "\n"), bad.want) {
					t.Errorf("Verify after an edit: %v, want one naming %q", errs, bad.want)
				}
			}
		})
	}
}

// TestVerifyObjectiveAndBound: a cost plan whose objective is its cost per hour and whose bound
// lies above it (a least cost above the plan's own) contradicts itself and fails
// verification, naming the field; an objective that is not the cost (CascadeServe's weighted
// accuracy) has a bound of its own.
func TestVerifyObjectiveAndBound(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	c := &formats.Cluster{GPUs: []formats.GPUPool{{Type: "L4", Count: 4, PerServer: 1, PricePerHour: f(0.5)}}}
	for _, tc := range []struct {
		name      string
		objective float64
		bound     *float64
		want      string
	}{
		{"consistent", 1.5, f(1.4999), ""},
		{"bound equal", 1.5, f(1.5), ""},
		{"no bound", 1.5, nil, ""},
		{"objective not the cost", 0.82, f(0.83), ""},
		{"bound above", 1.5, f(1.6), "provenance.bound 1.6: above the cost per hour 1.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pardsec.SetPlan(&formats.Plan{}, &pardsec.PARDPlan{Apps: []pardsec.PARDApp{{Name: "a", Modules: []pardsec.ModulePlan{{Name: "m", GPU: "L4", Workers: 3}}}}})
			if err := Finish(p, c); err != nil {
				t.Fatal(err)
			}
			p.Provenance.Objective, p.Provenance.Bound = tc.objective, tc.bound
			got := strings.Join(Verify(p), "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Verify: %q, want %q", got, tc.want)
			}
		})
	}
}
