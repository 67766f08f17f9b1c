package formats

import (
	"math"
	"strings"
	"testing"
)

// TestClusterPriceValidation: price_per_hour must be finite and >= 0, available >= 0, the
// currency a short code (issue 34 item 1); each problem names its field and value.
func TestClusterPriceValidation(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	n := func(x int) *int { return &x }
	for _, tc := range []struct {
		name     string
		price    *float64
		avail    *int
		currency string
		want     string // "" = valid
	}{
		{"priced", f(0.56), n(4), "USD", ""},
		{"free", f(0), nil, "", ""},
		{"negative price", f(-1), nil, "", "gpus[0].price_per_hour: -1: must be >= 0"},
		{"NaN price", f(math.NaN()), nil, "", "gpus[0].price_per_hour: NaN: must be >= 0"},
		{"infinite price", f(math.Inf(1)), nil, "", "gpus[0].price_per_hour: +Inf: must be <= 1e+06"},
		{"price past the solver's range", f(1e308), nil, "", "gpus[0].price_per_hour: 1e+308: must be <= 1e+06"},
		{"negative available", nil, n(-2), "", "gpus[0].available: -2: must be >= 0"},
		{"bad currency", nil, nil, "US$", `currency: "US$": must be 1 to 8 letters`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindCluster}, NICGbps: 10, Currency: tc.currency,
				GPUs: []GPUPool{{Type: "L4", Count: 1, PerServer: 1, PricePerHour: tc.price, Available: tc.avail}}}
			errs := c.Validate()
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.Error(), tc.want) {
				t.Fatalf("errors %q lack %q", errs.Error(), tc.want)
			}
		})
	}
}

// TestClusterPrices: a given price wins, USD types without one take the default list price
// (and are named), another currency must price every type it uses.
func TestClusterPrices(t *testing.T) {
	p := 0.5
	c := &Cluster{GPUs: []GPUPool{{Type: "L4", PricePerHour: &p}, {Type: "A100"}}}
	prices, def, err := c.Prices()
	if err != nil || prices["L4"] != 0.5 || prices["A100"] != DefaultPrices["A100"] || len(def) != 1 || def[0] != "A100" {
		t.Fatalf("prices %v defaulted %v err %v", prices, def, err)
	}
	c.Currency = "EUR"
	if _, _, err := c.Prices(); err == nil || !strings.Contains(err.Error(), "gpus[type=A100].price_per_hour") {
		t.Fatalf("EUR without an A100 price: err %v", err)
	}
	custom := &Cluster{GPUs: []GPUPool{{Type: "X9", MemoryBytes: 1 << 30}}}
	if _, _, err := custom.Prices(); err == nil || !strings.Contains(err.Error(), "no default list price for X9") {
		t.Fatalf("custom type without a price: err %v", err)
	}
}
