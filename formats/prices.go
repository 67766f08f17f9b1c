package formats

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// DefaultCurrency is the currency of DefaultPrices and of a cluster file that names none.
const DefaultCurrency = "USD"

// DefaultPrices are public on-demand list prices per GPU per hour in USD, the price a cost
// objective uses for a GPU type whose cluster entry gives no price_per_hour (issue 34 item 1).
// They are the per-GPU accelerator prices of one public cloud region so that every type is
// priced on one basis, rounded to the cent; a user with real quotes (reserved, spot, another
// cloud) writes price_per_hour instead. Sources (list prices as published through 2024–2025;
// re-check before a purchase, they change):
//   - P4, T4, V100, A100 (80 GB), L4, H100: Google Compute Engine "GPU pricing",
//     https://cloud.google.com/compute/gpus-pricing, us-central1 on-demand per-GPU hour
//     (P4 0.60, T4 0.35, V100 2.48, A100 80GB 3.93, L4 0.56; H100 from a3-highgpu-8g at
//     about 88.25/h for 8 GPUs ≈ 11.06 per GPU, VM included, since GCE sells H100 only
//     bundled).
//   - A10: AWS EC2 on-demand, us-east-1, g5.xlarge (one A10G) 1.006/h,
//     https://aws.amazon.com/ec2/instance-types/g5/ (GCE offers no A10).
//   - H200: GCE a3-ultragpu-8g, about 84.8/h for 8 GPUs ≈ 10.60 per GPU, VM included.
//
// The table is consulted only for a USD cluster; a cluster in another currency must price
// every GPU type it plans a cost for.
var DefaultPrices = map[string]float64{
	"P4":   0.60,
	"T4":   0.35,
	"L4":   0.56,
	"A10":  1.01,
	"V100": 2.48,
	"A100": 3.93,
	"H100": 11.06,
	"H200": 10.60,
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
		return *p.PricePerHour, false, nil
	}
	if c.CurrencyOf() == DefaultCurrency {
		if d, ok := DefaultPrices[gpu]; ok {
			return d, true, nil
		}
	}
	return 0, false, fmt.Errorf("cluster: gpus[type=%s].price_per_hour: no price given and no default list price for %s in %s: set price_per_hour", gpu, gpu, c.CurrencyOf())
}

// Prices returns the price of every GPU type of the cluster and the types priced from
// DefaultPrices (sorted), or every type that has no price at all.
func (c *Cluster) Prices() (prices map[string]float64, defaulted []string, err error) {
	prices = map[string]float64{}
	var missing []string
	for _, g := range c.GPUs {
		p, def, perr := c.Price(g.Type)
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
// default table.
func DefaultPriceNote(types []string) string {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s %.2f", t, DefaultPrices[t])
	}
	return fmt.Sprintf("plan: no price_per_hour for %s in the cluster: used the default on-demand list prices (USD/GPU/hour: %s)",
		strings.Join(types, ", "), strings.Join(parts, ", "))
}
