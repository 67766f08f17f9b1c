package formats

import (
	"math"
	"strings"
	"testing"
)

// TestSpotSplit: at least 1-share of n GPUs stay on-demand, rounded up to whole GPUs; the
// float error of (1-0.3)·10 does not round a seventh on-demand GPU up to an eighth.
func TestSpotSplit(t *testing.T) {
	for _, tc := range []struct {
		n            int
		share        float64
		onDemand, sp int
	}{
		{0, 0.5, 0, 0},
		{1, 0.5, 1, 0},
		{2, 0.5, 1, 1},
		{3, 0.5, 2, 1},
		{10, 0.3, 7, 3},
		{10, 0, 10, 0},
		{10, 1, 0, 10},
		{7, 0.99, 1, 6},
		{-1, 0.5, 0, 0},
	} {
		od, sp := SpotSplit(tc.n, tc.share)
		if od != tc.onDemand || sp != tc.sp {
			t.Errorf("SpotSplit(%d, %g) = %d on-demand + %d spot, want %d + %d", tc.n, tc.share, od, sp, tc.onDemand, tc.sp)
		}
	}
}

// TestPlanningPrice: without SpotShare the on-demand price; with it the blend for a type with
// a spot price (on the file's basis) and the on-demand price for one without, which
// NoSpotPrice names; Prices hands the planners the blend.
func TestPlanningPrice(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		name  string
		share *float64
		basis string
		gpu   string
		want  float64
		spot  bool
	}{
		{"no --spot", nil, "", "A100", 4, false},
		{"half spot", f(0.5), "", "A100", 2.5, true},
		{"all spot", f(1), "", "A100", 1, true},
		{"none spot", f(0), "", "A100", 4, true},
		{"no spot price", f(0.5), "", "L4", 0.5, false},
		{"vm basis", f(0.5), PriceBasisVM, "A100", 2.5 / 8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{PriceBasis: tc.basis, SpotShare: tc.share, GPUs: []GPUPool{
				{Type: "A100", PerServer: 8, PricePerHour: f(4), SpotPricePerHour: f(1)},
				{Type: "L4", PerServer: 1, PricePerHour: f(0.5)},
			}}
			got, def, spot, err := c.PlanningPrice(tc.gpu)
			if err != nil || def || spot != tc.spot || math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("PlanningPrice(%s) = %g (defaulted %v, spot %v, %v), want %g spot %v", tc.gpu, got, def, spot, err, tc.want, tc.spot)
			}
			prices, _, err := c.Prices()
			if err != nil || math.Abs(prices[tc.gpu]-tc.want) > 1e-12 {
				t.Fatalf("Prices()[%s] = %g (%v), want %g", tc.gpu, prices[tc.gpu], err, tc.want)
			}
			if none := c.NoSpotPrice(); len(none) != 1 || none[0] != "L4" {
				t.Errorf("NoSpotPrice = %v, want [L4]", none)
			}
		})
	}
}

// TestFleetSpotValidation: a fleet's spot fields are checked on their own, each problem
// naming its field and value.
func TestFleetSpotValidation(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		name string
		edit func(fl *Fleet)
		want string // "" = valid
	}{
		{"spot fleet", func(fl *Fleet) {}, ""},
		{"share above 1", func(fl *Fleet) { fl.SpotShare = f(1.5) }, "fleet.spot_share: 1.5: must be in [0, 1]"},
		{"share NaN", func(fl *Fleet) { fl.SpotShare = f(math.NaN()) }, "fleet.spot_share: NaN: must be in [0, 1]"},
		{"spot count past count", func(fl *Fleet) { fl.GPUsUsed[0].SpotCount = 5 }, "fleet.gpus_used[0].spot_count: 5: must be in [0, count 4]"},
		{"spot count without a price", func(fl *Fleet) { fl.GPUsUsed[0].SpotPricePerHour = nil }, "fleet.gpus_used[0].spot_count: 2: needs spot_price_per_hour"},
		{"negative spot price", func(fl *Fleet) { fl.GPUsUsed[0].SpotPricePerHour = f(-1) }, "fleet.gpus_used[0].spot_price_per_hour: -1: must be >= 0"},
		{"spot without a share", func(fl *Fleet) { fl.SpotShare, fl.OnDemandCostPerHour, fl.NoSpotPrice = nil, nil, nil },
			"fleet.gpus_used[0].spot_price_per_hour: 1: needs spot_share"},
		{"on-demand cost without a share", func(fl *Fleet) {
			fl.SpotShare, fl.GPUsUsed[0].SpotCount, fl.GPUsUsed[0].SpotPricePerHour, fl.NoSpotPrice = nil, 0, nil, nil
		}, "fleet.on_demand_cost_per_hour: 16: needs spot_share"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := &Fleet{Objective: "cost", Currency: "USD", CostPerHour: 10.5, SpotShare: f(0.5), OnDemandCostPerHour: f(16),
				NoSpotPrice: []string{"L4"},
				GPUsUsed:    []FleetGPU{{GPU: "A100", Count: 4, PricePerHour: 4, SpotCount: 2, SpotPricePerHour: f(1)}, {GPU: "L4", Count: 1, PricePerHour: 0.5}}}
			tc.edit(fl)
			v := &validator{}
			fl.validate(v, "fleet")
			got := v.errs
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("unexpected errors: %v", got)
			case tc.want != "" && (len(got) == 0 || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("errors %v lack %q", got, tc.want)
			}
		})
	}
}
