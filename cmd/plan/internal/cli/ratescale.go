package cli

// --rate-scale: `--load L` runs every application at L × its planned rate
// and rescales a trace so that its mean rate equals it, so `--load 1` replays a trace at the
// plan's peak, not as it was recorded (a Twitter-shaped trace scaled to a 7.6k QPS peak needed
// `--load 0.2099` to replay as recorded). `--rate-scale S` takes the trace's own rate per
// application as the base instead: 1.0 replays it as recorded.

import (
	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/sim"
)

// simLoads are the load points of plan simulate: --load's factors, or with --rate-scale its
// scales of the trace's recorded rates (then base holds those rates, nil otherwise).
func simLoads(cmd *cobra.Command, o *simulateOptions, spec workload.ArrivalSpec, dep *dataplane.Deployment) (loads, base []float64, err error) {
	loads, err = sim.ParseLoadRange(o.load)
	if err != nil {
		return nil, nil, run.UsageErrorf("--load: %v", err)
	}
	base, scales, err := rateScale(cmd, o, spec, dep)
	if err != nil || base == nil {
		return loads, nil, err
	}
	return scales, base, nil
}

// rateScale reads --rate-scale: the trace's recorded rate per application (the base of load
// factor 1.0) and the scales to run at; nil base when the flag is not given.
func rateScale(cmd *cobra.Command, o *simulateOptions, spec workload.ArrivalSpec, dep *dataplane.Deployment) (base, scales []float64, err error) {
	if !cmd.Flags().Changed("rate-scale") {
		return nil, nil, nil
	}
	if cmd.Flags().Changed("load") || o.reference != "" {
		return nil, nil, run.UsageErrorf("--rate-scale: exclusive with --load and --reference-plan (it sets the rates itself)")
	}
	if scales, err = sim.ParseLoadRange(o.rateScale); err != nil {
		return nil, nil, run.UsageErrorf("--rate-scale: %v", err)
	}
	if base, err = traceRates(spec, dep); err != nil {
		return nil, nil, run.UsageErrorf("--rate-scale: %v", err)
	}
	return base, scales, nil
}

// traceRates is the recorded rate (requests/s) of each application of dep in the trace spec
// (workload.ArrivalSpec.RecordedRate).
func traceRates(spec workload.ArrivalSpec, dep *dataplane.Deployment) ([]float64, error) {
	out := make([]float64, len(dep.Apps))
	for i, a := range dep.Apps {
		r, err := spec.RecordedRate(a.Name)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}
