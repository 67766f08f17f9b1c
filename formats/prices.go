package formats

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/plan-dev/plan/internal/base/gpucat"
)

// DefaultCurrency is the currency of DefaultPriceRows and of a cluster file that names none.
const DefaultCurrency = "USD"

// Price bases (Cluster.PriceBasis): what a price_per_hour buys for an hour.
const (
	// PriceBasisGPU prices one GPU (the default; how neoclouds quote).
	PriceBasisGPU = "gpu"
	// PriceBasisVM prices one server (VM) of per_server GPUs (how AWS and GCP sell them).
	PriceBasisVM = "vm"
)

// PriceRow is one default price: on-demand USD per GPU-hour, all-in (a VM's price divided by
// its GPUs, so the CPU, memory and disk a GPU needs are in it), with where and when it was
// published (ecosystem-dropin.md §6: normalise to $/GPU-h with region, date and provisioning).
type PriceRow struct {
	GPU string
	gpucat.Price
}

// DefaultPriceRows are the public on-demand list prices of the GPU catalogue
// (internal/base/gpucat), in its order, one basis (PriceBasisGPU: USD per GPU-hour, whole VMs
// divided by their GPUs), each with its source and date: the price a cost objective uses for
// a GPU type whose cluster entry gives no price_per_hour. They are list prices; reserved,
// committed or spot capacity costs less (write price_per_hour and spot_price_per_hour from a
// real quote). Re-check before a purchase: they change.
func DefaultPriceRows() []PriceRow {
	var out []PriceRow
	for _, s := range gpucat.All() {
		if s.Price != nil {
			out = append(out, PriceRow{GPU: s.Name, Price: *s.Price})
		}
	}
	return out
}

// DefaultPriceRow is the default price row of a GPU type.
func DefaultPriceRow(gpu string) (PriceRow, bool) {
	s, ok := gpucat.Find(gpu)
	if !ok || s.Price == nil {
		return PriceRow{}, false
	}
	return PriceRow{GPU: s.Name, Price: *s.Price}, true
}

// DefaultPrice is the default list price of a GPU type (USD per GPU-hour, on-demand; ok
// false: none).
func DefaultPrice(gpu string) (usd float64, ok bool) {
	r, ok := DefaultPriceRow(gpu)
	return r.USDPerGPUHour, ok
}

// validCurrency accepts a short code of letters (ISO 4217's three, or a custom unit).
func validCurrency(s string) bool {
	if len(s) < 1 || len(s) > 8 {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
			return false
		}
	}
	return true
}

// CurrencyOf is the cluster's currency (DefaultCurrency when it names none).
func (c *Cluster) CurrencyOf() string {
	if c == nil || c.Currency == "" {
		return DefaultCurrency
	}
	return strings.ToUpper(c.Currency)
}

// Price is the per-hour price of one GPU of type gpu: the cluster's price_per_hour, else the
// default list price (defaulted true), else an error naming the field to set.
func (c *Cluster) Price(gpu string) (price float64, defaulted bool, err error) {
	if p, ok := c.Pool(gpu); ok && p.PricePerHour != nil {
		return c.perGPU(p, *p.PricePerHour), false, nil
	}
	if c.CurrencyOf() == DefaultCurrency {
		if d, ok := DefaultPrice(gpu); ok {
			return d, true, nil
		}
	}
	return 0, false, fmt.Errorf("cluster: gpus[type=%s].price_per_hour: no price given and no default list price for %s in %s: set price_per_hour", gpu, gpu, c.CurrencyOf())
}

// PriceBasisOf is the file's price basis (PriceBasisGPU when it names none).
func (c *Cluster) PriceBasisOf() string {
	if c == nil {
		return PriceBasisGPU
	}
	if c.PriceBasis == "" {
		for i := range c.GPUs {
			if b := c.GPUs[i].PriceBasis; b != "" {
				return b
			}
		}
		return PriceBasisGPU
	}
	return c.PriceBasis
}

// perGPU turns a price on the file's basis into one GPU's: a VM's price over its GPUs.
func (c *Cluster) perGPU(p *GPUPool, x float64) float64 {
	if c.PriceBasisOf() == PriceBasisVM && p.PerServer > 0 {
		return x / float64(p.PerServer)
	}
	return x
}

// SpotPrice is the spot price of one GPU of type gpu per hour (ok false: none given).
func (c *Cluster) SpotPrice(gpu string) (float64, bool) {
	if p, ok := c.Pool(gpu); ok && p.SpotPricePerHour != nil {
		return c.perGPU(p, *p.SpotPricePerHour), true
	}
	return 0, false
}

// SpotSplit divides n GPUs of one type under `--spot share`: at least (1-share) of them stay
// on-demand, rounded up (a fraction of a GPU cannot be on-demand), the rest run on spot. The
// 1e-9 keeps (1-0.3)·10 = 7.000000000000001 at 7 on-demand GPUs, not 8.
func SpotSplit(n int, share float64) (onDemand, spot int) {
	if n <= 0 {
		return 0, 0
	}
	od := int(math.Ceil((1-share)*float64(n) - 1e-9))
	od = min(max(od, 0), n)
	return od, n - od
}

// PlanningPrice is the per-GPU price a cost objective optimises for type gpu: the on-demand
// price (Price), or with SpotShare s and a spot price for the type the blend s·spot +
// (1-s)·on-demand — the cost per GPU of a fleet whose GPUs follow SpotSplit, before rounding
// the on-demand count up (the fleet record prices the rounded split exactly). spot is false
// where the type has no spot price (or no SpotShare is set): it is priced on-demand.
func (c *Cluster) PlanningPrice(gpu string) (price float64, defaulted, spot bool, err error) {
	price, defaulted, err = c.Price(gpu)
	if err != nil || c.SpotShare == nil {
		return price, defaulted, false, err
	}
	sp, ok := c.SpotPrice(gpu)
	if !ok {
		return price, defaulted, false, nil
	}
	s := *c.SpotShare
	return s*sp + (1-s)*price, defaulted, true, nil
}

// NoSpotPrice lists (sorted) the cluster's GPU types without spot_price_per_hour: under
// SpotShare they are priced on-demand.
func (c *Cluster) NoSpotPrice() []string {
	var out []string
	for _, g := range c.GPUs {
		if _, ok := c.SpotPrice(g.Type); !ok {
			out = append(out, g.Type)
		}
	}
	sort.Strings(out)
	return out
}

// Prices returns the price of every GPU type of the cluster that a cost objective optimises
// (PlanningPrice: on-demand, or the spot blend under SpotShare) and the types priced from
// the default list prices (sorted), or every type that has no price at all.
func (c *Cluster) Prices() (prices map[string]float64, defaulted []string, err error) {
	prices = map[string]float64{}
	var missing []string
	for _, g := range c.GPUs {
		p, def, _, perr := c.PlanningPrice(g.Type)
		if perr != nil {
			missing = append(missing, perr.Error())
			continue
		}
		prices[g.Type] = p
		if def {
			defaulted = append(defaulted, g.Type)
		}
	}
	sort.Strings(defaulted)
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("%s", strings.Join(missing, "\n"))
	}
	return prices, defaulted, nil
}

// AvailableOf is the most GPUs of type gpu a cost-optimal fleet may use: the pool's
// available, else unbounded (math.MaxInt).
func (c *Cluster) AvailableOf(gpu string) int {
	if p, ok := c.Pool(gpu); ok && p.Available != nil {
		return *p.Available
	}
	return math.MaxInt
}

// DefaultPriceNote is the line `plan` prints on stderr when it priced GPU types from the
// default table: each price with what it priced, its source and its date.
func DefaultPriceNote(types []string) string {
	parts := make([]string, len(types))
	for i, t := range types {
		r, _ := DefaultPriceRow(t)
		parts[i] = fmt.Sprintf("%s %.2f (%s; %s, %s)", t, r.USDPerGPUHour, r.Offer, r.Source, r.Date)
	}
	return fmt.Sprintf("plan: no price_per_hour for %s in the cluster: used the default on-demand list prices (USD per GPU-hour, VMs divided by their GPUs): %s",
		strings.Join(types, ", "), strings.Join(parts, "; "))
}
