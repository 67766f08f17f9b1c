package cascade

import (
	"math"

	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// Provisioning rules of the static baselines (DynBa, MS+; CascadeServe §6.2).
const (
	// ProvisionQueue sizes the fleet for the load the paper provisions for: not the
	// trace's peak but the rate below which all but the SLO's tail of requests arrive;
	// the rarer, short peaks above it are absorbed by queueing (the paper's DynBa serves
	// BERT's 7.6k peak on 4 GPUs that cannot carry 7.6k QPS: its p95 holds because only a
	// few percent of requests arrive during the peaks).
	ProvisionQueue = "queue"
	// ProvisionPeak sizes every gear for its range's peak (the planner's rule for
	// CascadeServe; kept as an option for the baselines).
	ProvisionPeak = "peak"
)

// provisionRate is ProvisionQueue's planned rate [ours, documented rule]: the smallest
// integer QPS q such that the requests arriving while the rate exceeds q are at most
// (1 − percentile) of all requests, reading the workload's per-second QPS histogram
// (hist[i] = fraction of time at QPS i; request weights i·hist[i]). Those requests are
// the ones the percentile may leave late; the fleet drains their queue after the peak.
// Without a histogram (no trace) it returns qmax: nothing says how rare the peak is.
func provisionRate(c *cascadesec.Cascade, qmax, percentile float64) float64 {
	h := c.QPSHistogram
	if len(h) == 0 || percentile <= 0 || percentile >= 1 {
		return qmax
	}
	var total float64
	for i, f := range h {
		total += float64(i) * f
	}
	if !(total > 0) {
		return qmax
	}
	budget := (1 - percentile) * total
	var above float64
	q := len(h) - 1
	for ; q > 0; q-- {
		w := float64(q) * h[q]
		if above+w > budget {
			break
		}
		above += w
	}
	return math.Min(qmax, math.Max(float64(q), 1))
}

// provisioned returns the QPS the strategy plans up to: ProvisionQueue's rate for DynBa and
// MS+ (their default), qmax otherwise. Above the planned rate the last gear serves (§5).
func provisioned(c *cascadesec.Cascade, o Options) float64 {
	switch o.Strategy {
	case StrategyDynBa, StrategyMSPlus:
	default:
		return o.QPSMax
	}
	if o.Provision == ProvisionPeak {
		return o.QPSMax
	}
	return provisionRate(c, o.QPSMax, o.Percentile)
}
