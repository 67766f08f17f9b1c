package pard

import (
	"fmt"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/planner"
)

// PlanCapacity is the most requests per second each pipeline of a PARD plan serves within
// its SLO (the autopilot's capacity model, keyed by pipeline name): PARD's provisioning rule
// (§5.1, Provision) read backwards. A module of n workers running batches of b in d(b)
// serves n·b/d(b); the pipeline serves what its slowest module serves (Capacity). Every
// request visits every module (as the provisioning rule assumes: a branch's probability is
// not discounted), and the batch is the one the latency rule Σ2·d(b) ≤ f·SLO allowed, so at
// this rate the batches fill and the queueing fits the SLO's remaining (1 − f) share. The
// workers' integer rounding leaves the capacity at or above the plan's rate_rps. The
// capacity grows with the cluster only for a plan solved with Fill.
func PlanCapacity(p *formats.Plan) (map[string]float64, error) {
	if p == nil || pardsec.PlanOf(p) == nil {
		return nil, fmt.Errorf("pard: the plan has no pard section")
	}
	out := make(map[string]float64, len(pardsec.PlanOf(p).Apps))
	for ai, a := range pardsec.PlanOf(p).Apps {
		for mi, m := range a.Modules {
			if m.Workers < 1 || m.Batch < 1 || !(m.LatencyUs > 0) {
				return nil, fmt.Errorf("pard.apps[%d].modules[%d] (%s): workers %d, batch %d, latency_us %g: the capacity needs workers and batch ≥ 1, latency_us > 0",
					ai, mi, m.Name, m.Workers, m.Batch, m.LatencyUs)
			}
		}
		if len(a.Modules) == 0 {
			return nil, fmt.Errorf("pard.apps[%d] (%s): no modules", ai, a.Name)
		}
		out[a.Name] = Capacity(a)
	}
	return out, nil
}

// AutopilotCapacity is the capacity the autopilot sizes a PARD plan by (system.Capacity):
// PlanCapacity for a plan solved with Fill, whose re-solve on a smaller cluster provisions
// that cluster. A plan solved for the workload's rates reports them (its rate_rps), as a
// system without a capacity model would: every rung that fits re-solves to the fewest GPUs
// for the same rates, so its capacity does not follow the rung's GPUs and the autopilot's
// ladder refuses it up front (ErrNoCapacityModel). Its workers' own capacity would differ
// from rung to rung only by the MILP's ties between equally few GPUs (other batches), and
// would let the ladder take such a plan for one that grows.
func AutopilotCapacity(p *formats.Plan) (map[string]float64, error) {
	if p == nil || pardsec.PlanOf(p) == nil {
		return nil, fmt.Errorf("pard: the plan has no pard section")
	}
	var rec Flags
	if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil {
		return nil, err
	}
	if rec.Fill {
		return PlanCapacity(p)
	}
	out := make(map[string]float64, len(pardsec.PlanOf(p).Apps))
	for _, a := range pardsec.PlanOf(p).Apps {
		out[a.Name] = a.RateRPS
	}
	return out, nil
}
