package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
)

// A prediction of an application other than an LLM class states how far to trust its
// latency percentiles from what the command already has: the runs at load 1 (the first
// and its replications with other arrival seeds, whose percentiles scatter as a re-run's
// would) and the measurement noise its profile records (a measured backend's per-block
// coefficient of variation). A profile the roofline estimated has no noise to read and
// no real run to compare with, and the band says so rather than inventing a width.

// latencyBandZ is the standard normal quantile of an 80% two-sided band, the coverage the
// LLM bands are sized to.
const latencyBandZ = 1.2816

// profileNoise is what a plan's embedded DNN profiles say of their own measurement: the
// median per-block coefficient of variation over the entries that record one, how many
// did, and the models whose numbers are estimates (roofline) rather than measurements.
type profileNoise struct {
	cv        float64
	entries   int
	estimated []string
}

// noiseOf reads the embedded profiles of plan (none: nothing known).
func noiseOf(plan *formats.Plan) profileNoise {
	var n profileNoise
	if plan == nil || plan.Provenance.Embedded == nil {
		return n
	}
	var cvs []float64
	for _, p := range plan.Provenance.Embedded.Profiles {
		for _, m := range p.Models {
			if m.Backend == "roofline" {
				n.estimated = append(n.estimated, m.Name)
				continue
			}
			for _, e := range m.Latency {
				for _, c := range e.CV {
					if c >= 0 && !math.IsInf(c, 0) && !math.IsNaN(c) {
						cvs = append(cvs, c)
					}
				}
				if len(e.CV) > 0 {
					n.entries++
				}
			}
		}
	}
	if len(cvs) > 0 {
		n.cv = quantile.Median(cvs)
	}
	slices.Sort(n.estimated)
	n.estimated = slices.Compact(n.estimated)
	return n
}

// latencyError is the band on an application's p50 and p99 latency: the runs' scatter
// around the first run (each percentile's lowest and highest relative deviation over the
// replications) combined in quadrature with ±z × the profile's median CV (a service time
// measured that noisy moves each percentile about as much). first are the first run's p50
// and p99 in µs, reps the replications'. nil where there is nothing to say (no answered
// request in the first run).
func latencyError(first [2]float64, reps [][2]float64, noise profileNoise) *formats.LatencyError {
	if first[0] <= 0 || first[1] <= 0 {
		return nil
	}
	meas := latencyBandZ * 100 * noise.cv
	var out formats.LatencyError
	for q, band := range []*formats.ErrorBand{&out.P50, &out.P99} {
		lo, hi := 0.0, 0.0
		for _, r := range reps {
			if r[q] > 0 {
				d := 100 * (r[q] - first[q]) / first[q]
				lo, hi = math.Min(lo, d), math.Max(hi, d)
			}
		}
		round := func(x float64) float64 {
			if r := math.Round(x*100) / 100; r != 0 {
				return r
			}
			return 0 // never −0 in the plan
		}
		band.LowerPct = round(-math.Hypot(lo, meas))
		band.UpperPct = round(math.Hypot(hi, meas))
	}
	var basis []string
	switch n := len(reps); n {
	case 0:
		basis = append(basis, "one run at load 1 (no replication: no seed spread)")
	default:
		basis = append(basis, fmt.Sprintf("the spread of %d runs at load 1 with other arrival seeds", n+1))
	}
	if noise.entries > 0 {
		basis = append(basis, fmt.Sprintf("the profile's measurement noise (median CV %.1f%% over %d measured entries, ±%.2f×)", 100*noise.cv, noise.entries, latencyBandZ))
	}
	if len(noise.estimated) > 0 {
		basis = append(basis, fmt.Sprintf("not the profile's own error: %s estimated by the roofline, not measured (profile them on the GPU to bound it)", strings.Join(noise.estimated, ", ")))
	}
	out.Basis = strings.Join(basis, "; ")
	return &out
}
