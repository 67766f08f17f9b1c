package pard

import (
	"context"
	"fmt"
	"math"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/solver"
)

// costModel is provisionModel with the cost objective: the same choice of
// one (GPU type, batch) per module under the latency rule Σ2·d ≤ f·SLO, minimising
// Σ price(type)·workers instead of Σ workers, each type bounded by its available count
// (unbounded when the cluster gives none) instead of the cluster's count.
func costModel(apps []appInfo, o Options, cluster *formats.Cluster) (*solver.Model, []vref, error) {
	prices, _, err := cluster.Prices()
	if err != nil {
		return nil, nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	obj := func(ai *appInfo, op *option) float64 {
		// Ties in cost go to the fewer workers, then to the most spare throughput.
		need := ai.rate * op.latUs / 1e6 / float64(op.batch)
		return prices[op.gpu]*float64(op.workers) + tieBreakPerWorker*float64(op.workers) + tieBreakPerModule*need/float64(op.workers)
	}
	m, vars := optionModel("pard-cost", apps, o, obj, "avail_", func(t string) (float64, bool) {
		a := cluster.AvailableOf(t)
		return float64(a), a < math.MaxInt
	})
	return m, vars, nil
}

// Tie-breaks costModel adds to a plan's cost per hour: per worker, and at most per module
// (its spare-throughput term, need/workers ≤ 1).
const (
	tieBreakPerWorker = 1e-4
	tieBreakPerModule = 1e-7
)

// recordCostBound makes the plan's bound and gap a proof about its cost per hour (the
// objective fleet.Finish recorded) rather than about the solver's objective, which adds the
// tie-breaks to the cost and which the throughput path rounds to whole GPUs: a plan of cost
// C on W workers has model objective ≤ C + tieBreakPerWorker·W + tieBreakPerModule·modules,
// and W ≤ C/pmin (pmin the cheapest price), so no plan costs less than
// (lb − tieBreakPerModule·modules) / (1 + tieBreakPerWorker/pmin). A free GPU type bounds no
// worker count by cost: then the bound is 0, which every cost meets (a free fleet is optimal
// at gap 0, a mixed one reads "best found" with its gap). Without a solver bound the plan
// records none and is a heuristic (an optimal plan proves its bound).
func recordCostBound(p *formats.Plan, lb float64, apps []appInfo, cluster *formats.Cluster) {
	pv := &p.Provenance
	solved := pv.Status
	pv.Bound, pv.Gap = nil, nil
	if solved == "optimal" {
		pv.Status = "heuristic" // until the bound below is proven
	}
	prices, _, err := cluster.Prices()
	if err != nil || len(prices) == 0 || math.IsInf(lb, 0) || math.IsNaN(lb) {
		return
	}
	pmin := math.Inf(1)
	for _, pr := range prices {
		pmin = math.Min(pmin, pr)
	}
	modules := 0
	for _, ai := range apps {
		modules += len(ai.mods)
	}
	cost := pv.Objective
	bound := 0.0
	if pmin > 0 {
		bound = math.Min(cost, (lb-tieBreakPerModule*float64(modules))/(1+tieBreakPerWorker/pmin))
	}
	bound = math.Floor(bound*1e6) / 1e6 // rounded down: still a bound
	pv.Bound, pv.Gap, pv.Status = formats.Proven(bound), formats.Proven(0), solved
	if cost > 0 {
		pv.Gap = formats.Proven(math.Ceil((cost-bound)/cost*1e6) / 1e6) // rounded up: still proven
	}
}

// costInfeasible explains a cost provisioning no available fleet admits: the rate the
// available GPUs serve, from the fleet core's LP over each module's best throughput per GPU
// of each type (the latency rule aside), or the SLO rule when that alone fails.
func costInfeasible(ctx context.Context, apps []appInfo, cluster *formats.Cluster) error {
	var p fleet.Problem
	idx := map[string]int{}
	for _, g := range cluster.GPUs {
		a := cluster.AvailableOf(g.Type)
		if a == math.MaxInt {
			a = -1
		}
		idx[g.Type] = len(p.Types)
		p.Types = append(p.Types, fleet.Type{Name: g.Type, Available: a})
	}
	for _, ai := range apps {
		for k, mi := range ai.mods {
			d := fleet.Demand{Name: ai.pl.Name + "/" + ai.pl.Modules[k].Name, Rate: ai.rate, Cap: make([]float64, len(p.Types))}
			for _, op := range mi.opts {
				d.Cap[idx[op.gpu]] = math.Max(d.Cap[idx[op.gpu]], float64(op.batch)/op.latUs*1e6)
			}
			p.Demands = append(p.Demands, d)
		}
	}
	s, err := fleet.MaxScale(ctx, p)
	if err != nil {
		return err
	}
	var errs formats.ErrorList
	for a, ai := range apps {
		if s >= 1 {
			errs = append(errs, &formats.FieldError{Path: fmt.Sprintf("pipelines[%d]", a), Value: fmt.Sprint(ai.rate),
				Rule: "no provisioning within the GPUs available meets the latency rule at this rate: raise gpus[].available, lower rate_rps or relax slo"})
			continue
		}
		errs = append(errs, &formats.FieldError{Path: fmt.Sprintf("pipelines[%d].rate_rps", a), Value: fmt.Sprint(ai.rate),
			Rule: fmt.Sprintf("the GPUs available (gpus[].available) serve at most %.4g req/s of it: raise available or lower the rate", ai.rate*s)})
	}
	return fmt.Errorf("%w: %w", ErrBadInput, errs)
}
