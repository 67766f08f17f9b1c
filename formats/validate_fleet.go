package formats

import "math"

// validateFleet checks a plan's fleet record on its own: counts >= 0, prices
// finite and >= 0, one entry per GPU type, a finite cost. `plan check` verifies it against the
// plan's sections and cluster (planner/fleet.Verify).
func (f *Fleet) validate(v *validator, p string) {
	if f.Objective != "cost" {
		v.add(field(p, "objective"), f.Objective, "must be cost")
	}
	if !validCurrency(f.Currency) {
		v.add(field(p, "currency"), f.Currency, "must be 1 to 8 letters (a currency code such as USD)")
	}
	seen := map[string]bool{}
	for i, g := range f.GPUsUsed {
		q := idx(field(p, "gpus_used"), i)
		uniqueGPU(v, seen, field(q, "gpu"), g.GPU)
		if g.Count < 0 {
			v.add(field(q, "count"), g.Count, "must be >= 0")
		}
		price(v, field(q, "price_per_hour"), g.PricePerHour)
		if g.SpotPricePerHour != nil {
			price(v, field(q, "spot_price_per_hour"), *g.SpotPricePerHour)
			if f.SpotShare == nil {
				v.add(field(q, "spot_price_per_hour"), *g.SpotPricePerHour, "needs spot_share (plan solve --spot)")
			}
		}
		switch {
		case g.SpotCount < 0 || g.SpotCount > max(g.Count, 0):
			v.add(field(q, "spot_count"), g.SpotCount, "must be in [0, count %d]", g.Count)
		case g.SpotCount > 0 && g.SpotPricePerHour == nil:
			v.add(field(q, "spot_count"), g.SpotCount, "needs spot_price_per_hour")
		}
	}
	if s := f.SpotShare; s != nil && (math.IsNaN(*s) || *s < 0 || *s > 1) {
		v.add(field(p, "spot_share"), *s, "must be in [0, 1]")
	}
	if o := f.OnDemandCostPerHour; o != nil {
		if math.IsNaN(*o) || math.IsInf(*o, 0) || *o < 0 {
			v.add(field(p, "on_demand_cost_per_hour"), *o, "must be >= 0")
		}
		if f.SpotShare == nil {
			v.add(field(p, "on_demand_cost_per_hour"), *o, "needs spot_share (plan solve --spot)")
		}
	}
	if len(f.NoSpotPrice) > 0 && f.SpotShare == nil {
		v.add(field(p, "no_spot_price"), f.NoSpotPrice, "needs spot_share (plan solve --spot)")
	}
	if math.IsNaN(f.CostPerHour) || math.IsInf(f.CostPerHour, 0) || f.CostPerHour < 0 {
		v.add(field(p, "cost_per_hour"), f.CostPerHour, "must be >= 0")
	}
}

// checkFleetCurrency: a cost plan's prices are in one currency; a cluster given beside it
// in another is a mix of currencies across files, which no comparison of costs survives.
func checkFleetCurrency(v *validator, p *Plan, clusters []namedCluster) {
	if p.Fleet == nil {
		return
	}
	for _, nc := range clusters {
		if c := nc.c.CurrencyOf(); c != p.Fleet.Currency {
			v.add("fleet.currency", p.Fleet.Currency, "the plan's costs are in %s but %s prices in %s: one currency across files", p.Fleet.Currency, nc.file, c)
		}
	}
}
