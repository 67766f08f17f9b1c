package formats

import (
	"math"
	"strings"
	"testing"
)

// TestClusterPriceValidation: price_per_hour must be finite and >= 0, available >= 0, the
// currency a short code; each problem names its field and value.
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
	if err != nil || prices["L4"] != 0.5 || prices["A100"] != mustDefaultPrice(t, "A100") || len(def) != 1 || def[0] != "A100" {
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

// TestPriceBasis: one price basis per file — a vm price is a whole server's, divided by
// per_server; a gpus[] entry restating another basis than the file's, or than an earlier
// entry's, is an error naming the field; a spot price is checked like a price and may not
// exceed the on-demand one.
func TestPriceBasis(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	base := func() *Cluster {
		return &Cluster{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindCluster}, NICGbps: 10,
			GPUs: []GPUPool{{Type: "H100", Count: 8, PerServer: 8, PricePerHour: f(55.04)}, {Type: "L4", Count: 1, PerServer: 1, PricePerHour: f(0.8)}}}
	}
	for _, tc := range []struct {
		name string
		edit func(c *Cluster)
		want string // "" = valid
	}{
		{"gpu by default", func(c *Cluster) {}, ""},
		{"vm file", func(c *Cluster) { c.PriceBasis = PriceBasisVM }, ""},
		{"entry restates the file's", func(c *Cluster) { c.PriceBasis = PriceBasisVM; c.GPUs[1].PriceBasis = PriceBasisVM }, ""},
		{"entry differs from the file", func(c *Cluster) { c.PriceBasis = PriceBasisVM; c.GPUs[1].PriceBasis = PriceBasisGPU },
			`gpus[1].price_basis: "gpu": mixes price bases: the file's price_basis is vm`},
		{"entries differ", func(c *Cluster) { c.GPUs[0].PriceBasis = PriceBasisVM; c.GPUs[1].PriceBasis = PriceBasisGPU },
			`gpus[1].price_basis: "gpu": mixes price bases: gpus[0].price_basis is vm`},
		{"unknown basis", func(c *Cluster) { c.PriceBasis = "instance" }, `price_basis: "instance": must be gpu`},
		{"spot", func(c *Cluster) { c.GPUs[0].SpotPricePerHour = f(20) }, ""},
		{"spot above on-demand", func(c *Cluster) { c.GPUs[0].SpotPricePerHour = f(60) }, "gpus[0].spot_price_per_hour: 60: must be <= price_per_hour (55.04)"},
		{"negative spot", func(c *Cluster) { c.GPUs[0].SpotPricePerHour = f(-1) }, "gpus[0].spot_price_per_hour: -1: must be >= 0"},
		{"spot past the cap", func(c *Cluster) { c.GPUs[0].PricePerHour = nil; c.GPUs[0].SpotPricePerHour = f(2e6) }, "gpus[0].spot_price_per_hour: 2e+06: must be <= 1e+06"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.edit(c)
			errs := c.Validate()
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(errs.Error(), tc.want) {
				t.Fatalf("errors %v lack %q", errs, tc.want)
			}
		})
	}
	c := base()
	c.PriceBasis = PriceBasisVM
	c.GPUs[0].SpotPricePerHour = f(24)
	if p, def, err := c.Price("H100"); err != nil || def || math.Abs(p-6.88) > 1e-9 {
		t.Errorf("a vm price of 55.04 for 8 GPUs: %g per GPU (defaulted %v, %v), want 6.88", p, def, err)
	}
	if s, ok := c.SpotPrice("H100"); !ok || s != 3 {
		t.Errorf("spot 24 per 8-GPU VM: %g, %v; want 3 per GPU", s, ok)
	}
	if _, ok := c.SpotPrice("L4"); ok {
		t.Error("L4 has no spot price")
	}
}

// TestDefaultPriceRows: every default row is on one basis (USD per GPU-hour, positive, below
// the cap), names its offer and source and a YYYY-MM date; DefaultPrice agrees; the note
// `plan` prints names them.
func TestDefaultPriceRows(t *testing.T) {
	seen := map[string]bool{}
	if len(DefaultPriceRows()) < 9 {
		t.Fatalf("%d default prices, want the nine priced catalogue types", len(DefaultPriceRows()))
	}
	for _, r := range DefaultPriceRows() {
		if seen[r.GPU] || !(r.USDPerGPUHour > 0 && r.USDPerGPUHour < MaxPricePerHour) || r.Offer == "" || r.Source == "" || len(r.Date) != 7 || r.Date[4] != '-' {
			t.Errorf("row %+v", r)
		}
		if KnownGPUMemory(r.GPU) == 0 {
			t.Errorf("row for %s, which plan has no specification of", r.GPU)
		}
		seen[r.GPU] = true
		if p, ok := DefaultPrice(r.GPU); !ok || p != r.USDPerGPUHour {
			t.Errorf("DefaultPrice(%s) = %g, %v; row %g", r.GPU, p, ok, r.USDPerGPUHour)
		}
	}
	note := DefaultPriceNote([]string{"H100"})
	for _, w := range []string{"H100 6.88", "p5.48xlarge", "ecosystem-dropin.md §6", "2026-11", "USD per GPU-hour"} {
		if !strings.Contains(note, w) {
			t.Errorf("note %q lacks %q", note, w)
		}
	}
}

func mustDefaultPrice(t *testing.T, gpu string) float64 {
	t.Helper()
	p, ok := DefaultPrice(gpu)
	if !ok {
		t.Fatalf("no default price for %s", gpu)
	}
	return p
}
