package ppipe

import (
	"errors"

	"github.com/plan-dev/plan/planner"
)

// strategy solves the session's problem by its strategy (PPipe's MILP, NP or DART-r).
func (s *session) strategy() (solved, error) {
	switch s.p.opts.Strategy {
	case StrategyNP:
		return s.npWith(true)
	case StrategyDARTR:
		return s.dartr()
	default:
		return s.ppipe()
	}
}

// maxFormationPasses bounds the solves attainable adds after the first.
const maxFormationPasses = 4

// attainable re-solves a plan whose batch-formation allowance promised batches its own
// arrivals cannot fill within the SLO.
//
// β = ρ·(b−1)/λ̂ budgets the time a batch of b takes to fill at the head (PPipe A.2's
// latency row as the authors' artifact has it). λ̂ is an estimate (the NP pass without β,
// or --arrival-rate); the reservation dispatcher (PPipe §5.4) fills a model's batches from
// the model's own arrivals, which at the plan's load come at the plan's rate x for it. Where
// λ̂ is well above x, β is a fraction of the real filling time: a batch's first request
// then waits (b−1)/x for the rest and C for the batch to run, and where C + (b−1)/x
// exceeds the SLO T no request of a full batch is on time. The dispatcher holds each batch
// to its head's deadline and, at its admission test, drops a head that no near-full batch
// would finish in time, so such a pipeline serves almost nothing at any load (a single
// V100 slice at batch 4 with C = 19.2 ms of a 33.3 ms SLO and λ̂ = 20,000 req/s: 11% of its
// capacity within the SLO; corpus.Regressions). The formulation's own β says the plan is
// fine, so the two disagree by the filling time the estimate left out.
//
// So while some model whose λ̂ is not the workload's rate (refine) has a batched pipeline
// with head-to-tail latency without β plus (b−1)/x above T, its λ̂ becomes x and the solve
// runs again. That holds C + ρ·(b−1)/x ≤ T′ for the batch it keeps, the same row with the
// plan's own rate. A plan whose batches fill within the SLO at its own rate keeps its
// estimate (a faster-filling β is then harmless: the dispatcher does not wait for full
// batches). λ̂ only falls, so β only grows and the passes end (at worst at batch 1, where
// β = 0); a pass that finds no plan, or the time limit, keeps the last plan found.
func (s *session) attainable(sol solved, refine []bool) (solved, error) {
	for pass := 0; pass < maxFormationPasses; pass++ {
		if !s.lowerLambda(sol.pipes, refine) {
			return sol, nil
		}
		next, err := s.strategy()
		if err != nil {
			if errors.Is(err, planner.ErrNoSolution) || errors.Is(err, planner.ErrInfeasible) {
				return sol, s.ctx.Err()
			}
			return sol, err
		}
		sol = next
	}
	return sol, nil
}

// lowerLambda sets λ̂ of every model in refine with an unfillable batched pipeline
// (unfillable) to its planned throughput, where that is below λ̂; it says whether any
// changed.
func (s *session) lowerLambda(pipes []pipe, refine []bool) bool {
	thr := modelThroughput(pipes, len(s.p.models))
	changed := false
	for mi, md := range s.p.models {
		if mi >= len(refine) || !refine[mi] || !(thr[mi] > 0) {
			continue
		}
		x := thr[mi] / 1e6 // req/µs
		if x >= md.lambda*(1-relTol) {
			continue
		}
		for _, pp := range pipes {
			if pp.model == mi && unfillable(pp, x, float64(md.slo.Microseconds())) {
				md.lambda = x
				changed = true
				break
			}
		}
	}
	return changed
}

// unfillable says whether pipeline pp of a model planned at x req/µs runs a batch whose
// first request cannot be on time: its latency without β plus the (b−1)/x it waits for the
// batch to fill exceed the SLO T (µs).
func unfillable(pp pipe, x, T float64) bool {
	if pp.batch <= 1 {
		return false
	}
	lat := 0.0
	for _, pt := range pp.parts {
		lat += pt.o.C + pt.o.Y
	}
	return lat+float64(pp.batch-1)/x > T*(1+relTol)
}
