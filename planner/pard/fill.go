package pard

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
)

// Fill mode [ours]: PARD provisions a pipeline for its expected rate on the fewest
// GPUs (§5.1), so a larger cluster gives the same plan and the autopilot's ladder of shrunken
// clusters could not size it. With Options.Fill the planner instead provisions every
// pipeline for the most rate the cluster serves at the workload's mix: the largest common
// factor s of the pipelines' rates whose provisioning MILP is feasible on the cluster. A
// plan solved so records fill in provenance.options, and re-solving it on a rung of the
// ladder provisions that rung's GPUs; Capacity reads what the workers serve.

// fillPrecision is the ratio at which the search over the rate factor stops: the plan's
// rates are within 0.5% of the most the cluster serves (the workers' integer rounding
// usually leaves the capacity a little above).
const fillPrecision = 1.005

// fillSteps bounds the doublings and halvings of the bracket search (2^±30 of the rates).
const fillSteps = 30

// provisionFill provisions in for the largest factor of its rates that the cluster serves:
// a bracket by doubling or halving from 1, then a geometric bisection to fillPrecision.
// Each probe is the ordinary provisioning MILP; an infeasible probe (ErrBadInput: the
// cluster's GPUs do not cover the rate) narrows the bracket, any other error ends the search.
func provisionFill(ctx context.Context, in Inputs, o Options) (*formats.Plan, error) {
	if o.Objective == planner.ObjectiveCost {
		return nil, bad("--fill", true, "conflicts with --objective cost: fill provisions the most the cluster serves, the cost objective the workload's rates at the least cost")
	}
	// probe provisions at factor s: a plan, or nil when the cluster does not cover the rates
	// (ErrBadInput); any other error (time limit, cancellation) ends the search.
	var infeasibleErr error
	probe := func(s float64) (*formats.Plan, error) {
		po := o
		po.Fill, po.RateScale = false, s
		p, err := Provision(ctx, in, po)
		if err != nil && errors.Is(err, ErrBadInput) && ctx.Err() == nil {
			infeasibleErr = err
			return nil, nil
		}
		return p, err
	}
	best, err := probe(1)
	if err != nil {
		return nil, err
	}
	lo, hi := 1.0, 1.0
	if best != nil {
		for i := 0; i < fillSteps && hi == lo; i++ {
			p, err := probe(2 * lo)
			if err != nil {
				return nil, err
			}
			if hi = 2 * lo; p != nil {
				best, lo = p, hi
			}
		}
	} else {
		for i := 0; i < fillSteps && best == nil; i++ {
			hi, lo = lo, lo/2
			if best, err = probe(lo); err != nil {
				return nil, err
			}
		}
		if best == nil {
			return nil, fmt.Errorf("fill: the cluster serves no rate of the pipelines: %w", infeasibleErr)
		}
	}
	for hi > lo*fillPrecision {
		mid := math.Sqrt(lo * hi)
		p, err := probe(mid)
		if err != nil {
			return nil, err
		}
		if p != nil {
			best, lo = p, mid
		} else {
			hi = mid
		}
	}
	best.Provenance.Options = planner.RecordOptions(Flags{SLOFraction: o.SLOFraction, RateRPS: o.RateRPS, MaxBatch: o.MaxBatch,
		Policy: o.Policy, Objective: o.Objective, Fill: true})
	return best, nil
}
