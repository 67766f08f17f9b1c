// Package fleet is the cost side of every planner: which GPUs, how
// many of each type, a plan uses (Used), what they cost per hour in the cluster's currency
// (Summarize), the check `plan check` runs on a plan's recorded fleet (Verify), and the
// fleet-sizing core the planners share (Size): the least-cost count of GPUs per type that
// serves each demand's rate, either with GPUs dedicated to one demand (PARD's modules,
// DyOrc's services) or shared across request-size buckets as in Mélange (Griggs et al.,
// "Mélange: Cost Efficient Large Language Model Serving by Exploiting GPU Heterogeneity",
// 2024, §5: an ILP over buckets × GPU types whose load fractions per GPU sum to at most one).
package fleet

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// ObjectiveCost is the objective value a cost-optimal plan records (`--objective cost`).
const ObjectiveCost = "cost"

// ObjectiveDefault is each planner's own objective (throughput, GPU count, latency).
const ObjectiveDefault = "default"

// Used counts the physical GPUs per type the plan's sections deploy, as each plan section
// counts them (formats.GPUCounter). A plan with no section that counts returns nil.
func Used(p *formats.Plan) map[string]int { return p.GPUsUsed() }

// Summarize is the fleet record of a cost-optimal plan: the GPUs it uses per type (from
// Used), each type's price and the total per hour, in the cluster's currency. The second
// result lists the GPU types priced from formats.DefaultPrice. Under c.SpotShare (`plan
// solve --spot`) each type with a spot price runs formats.SpotSplit's spot share at its spot
// price and the rest on-demand; the record keeps the all-on-demand cost beside it.
func Summarize(p *formats.Plan, c *formats.Cluster) (*formats.Fleet, []string, error) {
	used := Used(p)
	types := slices.Sorted(maps.Keys(used))
	f := &formats.Fleet{Objective: ObjectiveCost, Currency: c.CurrencyOf()}
	var defaulted []string
	onDemand := 0.0
	for _, k := range types {
		price, def, err := c.Price(k)
		if err != nil {
			return nil, nil, err
		}
		if def {
			defaulted = append(defaulted, k)
		}
		g := formats.FleetGPU{GPU: k, Count: used[k], PricePerHour: price}
		cost := price * float64(used[k])
		onDemand += cost
		if c.SpotShare != nil {
			if sp, ok := c.SpotPrice(k); ok {
				_, n := formats.SpotSplit(used[k], *c.SpotShare)
				g.SpotCount, g.SpotPricePerHour = n, &sp
				cost = price*float64(used[k]-n) + sp*float64(n)
			} else {
				f.NoSpotPrice = append(f.NoSpotPrice, k)
			}
		}
		f.GPUsUsed = append(f.GPUsUsed, g)
		f.CostPerHour += cost
	}
	f.CostPerHour = roundCost(f.CostPerHour)
	if c.SpotShare != nil {
		s, od := *c.SpotShare, roundCost(onDemand)
		f.SpotShare, f.OnDemandCostPerHour = &s, &od
	}
	f.DefaultPrices = defaulted
	return f, defaulted, nil
}

// roundCost rounds a cost to 1e-6 so a plan's JSON is stable across platforms.
func roundCost(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// Verify checks a plan's recorded fleet against its sections and its cluster: the GPUs per
// type it records are those its sections deploy, no type exceeds the cluster's available,
// each price is the cluster's (or the default list price) and the cost per hour is their sum.
// A plan without a fleet record has nothing to verify.
func Verify(p *formats.Plan) []string {
	f := p.Fleet
	if f == nil {
		return nil
	}
	var out []string
	if f.Objective != ObjectiveCost {
		out = append(out, fmt.Sprintf("fleet.objective %q: must be %s", f.Objective, ObjectiveCost))
	}
	used := Used(p)
	rec := map[string]int{}
	total, onDemand := 0.0, 0.0
	for _, g := range f.GPUsUsed {
		rec[g.GPU] += g.Count
		onDemand += g.PricePerHour * float64(g.Count)
		total += g.PricePerHour * float64(g.Count-g.SpotCount)
		if g.SpotPricePerHour != nil {
			total += *g.SpotPricePerHour * float64(g.SpotCount)
		}
		if f.SpotShare != nil {
			if _, n := formats.SpotSplit(g.Count, *f.SpotShare); g.SpotPricePerHour != nil && g.SpotCount != n {
				out = append(out, fmt.Sprintf("fleet.gpus_used %s: spot_count %d, spot_share %g of %d GPUs allows %d (at least %g on-demand, rounded up)", g.GPU, g.SpotCount, *f.SpotShare, g.Count, n, 1-*f.SpotShare))
			}
		}
		if p.Cluster == nil {
			continue
		}
		if a := p.Cluster.AvailableOf(g.GPU); g.Count > a {
			out = append(out, fmt.Sprintf("fleet.gpus_used %s: %d GPUs, the cluster has %d available", g.GPU, g.Count, a))
		}
		if price, _, err := p.Cluster.Price(g.GPU); err != nil {
			out = append(out, err.Error())
		} else if math.Abs(price-g.PricePerHour) > relTol*math.Max(1, price) {
			out = append(out, fmt.Sprintf("fleet.gpus_used %s: price_per_hour %g, the cluster's is %g", g.GPU, g.PricePerHour, price))
		}
		sp, ok := p.Cluster.SpotPrice(g.GPU)
		switch {
		case g.SpotPricePerHour == nil && ok && f.SpotShare != nil:
			out = append(out, fmt.Sprintf("fleet.gpus_used %s: no spot_price_per_hour recorded, the cluster's is %g", g.GPU, sp))
		case g.SpotPricePerHour == nil:
		case !ok:
			out = append(out, fmt.Sprintf("fleet.gpus_used %s: spot_price_per_hour %g, the cluster gives none", g.GPU, *g.SpotPricePerHour))
		case math.Abs(sp-*g.SpotPricePerHour) > relTol*math.Max(1, sp):
			out = append(out, fmt.Sprintf("fleet.gpus_used %s: spot_price_per_hour %g, the cluster's is %g", g.GPU, *g.SpotPricePerHour, sp))
		}
	}
	if o := f.OnDemandCostPerHour; o != nil && math.Abs(roundCost(onDemand)-*o) > recordTol*math.Max(1, onDemand) {
		out = append(out, fmt.Sprintf("fleet.on_demand_cost_per_hour %g: the GPUs used cost %g on-demand", *o, roundCost(onDemand)))
	}
	var names []string
	for k := range used {
		names = append(names, k)
	}
	for k := range rec {
		if _, ok := used[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if used[k] != rec[k] {
			out = append(out, fmt.Sprintf("fleet.gpus_used %s: records %d GPUs, the plan deploys %d", k, rec[k], used[k]))
		}
	}
	if math.Abs(roundCost(total)-f.CostPerHour) > recordTol*math.Max(1, total) {
		out = append(out, fmt.Sprintf("fleet.cost_per_hour %g: the GPUs used cost %g", f.CostPerHour, roundCost(total)))
	}
	// Where a cost plan's objective is its cost per hour (Record; CascadeServe keeps its
	// weighted accuracy there instead), the bound on that minimised cost lies at or below it:
	// a plan that says otherwise contradicts itself.
	pv := p.Provenance
	isCost := math.Abs(pv.Objective-f.CostPerHour) <= recordTol*math.Max(1, f.CostPerHour)
	if isCost && pv.Bound != nil && *pv.Bound > pv.Objective+recordTol*math.Max(1, pv.Objective) {
		out = append(out, fmt.Sprintf("provenance.bound %g: above the cost per hour %g it bounds (the least cost is at most the plan's)", *pv.Bound, pv.Objective))
	}
	if p.Cluster != nil && f.Currency != p.Cluster.CurrencyOf() {
		out = append(out, fmt.Sprintf("fleet.currency %q: the cluster prices in %q", f.Currency, p.Cluster.CurrencyOf()))
	}
	return out
}

// Describe is a one-line fleet mix, "2×A100 + 3×L4 = 9.54 USD/h"; with spot_share, each
// type's spot GPUs and the all-on-demand cost beside it: "4×A100 (2 spot) + 3×L4 = 8.1
// USD/h; on-demand 11.1 USD/h; spot share 0.5".
func Describe(f *formats.Fleet) string {
	var parts []string
	for _, g := range f.GPUsUsed {
		s := fmt.Sprintf("%d×%s", g.Count, g.GPU)
		if f.SpotShare != nil && g.SpotCount > 0 {
			s += fmt.Sprintf(" (%d spot)", g.SpotCount)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		parts = []string{"no GPUs"}
	}
	out := fmt.Sprintf("%s = %.4g %s/h", strings.Join(parts, " + "), f.CostPerHour, f.Currency)
	if f.SpotShare != nil && f.OnDemandCostPerHour != nil {
		out += fmt.Sprintf("; on-demand %.4g %s/h; spot share %g", *f.OnDemandCostPerHour, f.Currency, *f.SpotShare)
	}
	return out
}

// Cluster is c sized to a fleet: each pool's count is the GPUs of its type the fleet uses
// (types it does not use keep a count of 0), so a cost plan deploys, simulates and exports
// only the GPUs it pays for. Prices and availability stay as given.
func Cluster(c *formats.Cluster, used map[string]int) *formats.Cluster {
	out := *c
	out.GPUs = make([]formats.GPUPool, len(c.GPUs))
	copy(out.GPUs, c.GPUs)
	for i := range out.GPUs {
		out.GPUs[i].Count = used[out.GPUs[i].Type]
	}
	out.Servers = nil
	for _, s := range c.Servers {
		if used[s.GPU] > 0 {
			out.Servers = append(out.Servers, s)
		}
	}
	return &out
}

// Finish makes p a cost plan: its cluster becomes the fleet it uses (Cluster) and it records
// the fleet (Summarize); the objective is its cost per hour.
func Finish(p *formats.Plan, c *formats.Cluster) error {
	if p.Cluster == nil {
		p.Cluster = c
	}
	p.Cluster = Cluster(c, Used(p))
	return Record(p, c)
}

// Record records p's fleet (Summarize, prices from c) with its cluster left as it is, and
// makes its cost per hour the plan's objective.
func Record(p *formats.Plan, c *formats.Cluster) error {
	f, _, err := Summarize(p, c)
	if err != nil {
		return err
	}
	// The last line of defence for every planner and for frontier and per-window schedules,
	// which write no plan file whose validation would catch it: a cost plan beyond a type's
	// available count is refused here, never recorded (each planner bounds its own search).
	for _, g := range f.GPUsUsed {
		if a := c.AvailableOf(g.GPU); g.Count > a {
			return fmt.Errorf("cluster: gpus[type=%s].available: %d: the plan uses %d", g.GPU, a, g.Count)
		}
	}
	p.Fleet = f
	p.Provenance.Objective = f.CostPerHour
	return nil
}
