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
		return prices[op.gpu]*float64(op.workers) + 1e-4*float64(op.workers) + 1e-7*need/float64(op.workers)
	}
	m, vars := optionModel("pard-cost", apps, o, obj, "avail_", func(t string) (float64, bool) {
		a := cluster.AvailableOf(t)
		return float64(a), a < math.MaxInt
	})
	return m, vars, nil
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
