// Package dyorcsim is the simulator the DyOrc planner sizes plans with (dyorc.Simulator):
// `plan solve`'s prediction of a plan at its rates. The registry installs it
// (internal/registry/systems/dyorcsys), and so do the planner's tests, which cannot import the
// registry's package (it imports the planner).
package dyorcsim

import (
	"context"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/sim"
)

// PredictAtRates is dyorc.Simulator: the prediction of plan p (deployed as dep) at its
// embedded workload's rates (sim.Predict, RatesOnly), its verdict.
func PredictAtRates(ctx context.Context, p *formats.Plan, dep *dataplane.Deployment, policies *dataplane.Registry, policy string) (bool, error) {
	pr, err := sim.Predict(ctx, sim.PredictInput{Plan: p, Dep: dep, Policies: policies, Policy: policy,
		Seed: workload.PredictionSeed, SpanScale: 1, RatesOnly: true})
	if err != nil {
		return false, err
	}
	return pr.Meets, nil
}
