package ppipe

import (
	"math"
	"time"
)

// npRates is λ̂ of the batch-formation allowance for every model of a max-min solve: the
// most throughput model m carries in any NP plan that reaches the first pass's optimum z
// (PPipe A.2's artifact takes λ̂_m from one NP plan). A max-min optimum fixes only the
// bottleneck's throughput; the others' surplus is the solver's tie-break (authors-41-722:
// two optimal NP plans gave a non-bottleneck model 705 and 615 req/s, and the solve proper
// 4,068 and 4,026), so each model's λ̂ is its own maximum over the NP optima, one MILP per
// model warm-started from the first pass's plan: β = ρ·(b−1)/λ̂ only shrinks as λ̂ grows, so
// the solve proper's feasible set holds that of every NP tie-break. attainable() still
// lowers a λ̂ its plan's pipelines cannot fill batches at.
//
// Only a proven NP optimum has such ties to break (a first pass cut short has a z that
// more GPUs would raise). The MILPs' bounds are loose (one model's throughput, the others
// held at z), so each runs to its limit: together they get a tenth of the time left, each
// call at most what the first pass took (npTime), so the estimate never starves the solve
// proper (at a 2 s limit, the β pass must still find its first plan); a call cut short
// keeps the best plan it found, never less than the first pass's.
func (s *session) npRates(est solved, npTime time.Duration) []float64 {
	p := s.p
	thr := modelThroughput(est.pipes, len(p.models))
	if len(p.models) < 2 || est.npAssign == nil || !(est.st.objective > 0) || est.st.status != "optimal" {
		return thr
	}
	nm, ok := s.npMaxModel(est)
	if !ok {
		return thr
	}
	budget := time.Until(s.deadline) / 10
	began := time.Now()
	for mi := range p.models {
		left := budget - time.Since(began)
		if left < minCall {
			break
		}
		limit := min(max(npTime, minCall), left/time.Duration(len(p.models)-mi))
		if sol, ok := s.npMax(nm, est, mi, limit); ok {
			thr[mi] = max(thr[mi], modelThroughput(sol.pipes, len(p.models))[mi])
		}
	}
	return thr
}

// npMaxModel is the NP MILP with z held at est's max-min objective, built once for every
// model's npMax, and est's plan as its MIP start.
type npMaxModel struct {
	spaces []*modelSpace
	b      *built
	start  []float64
}

// npMaxModel builds it (ok false where the NP space cannot be built).
func (s *session) npMaxModel(est solved) (*npMaxModel, bool) {
	cfg := spaceConfig{P: 1, wholeOnly: true}
	spaces, err := s.spaces(cfg)
	if err != nil {
		return nil, false
	}
	b := s.p.build(spaces, cfg)
	b.m.SetVarObj(b.z, 0)
	b.m.SetVarBounds(b.z, est.st.objective*(1-1e-9), math.Inf(1))
	return &npMaxModel{spaces: spaces, b: b, start: b.start(est.npAssign)}, true
}

// npMax solves nm for model mi's throughput over the plans that keep est's max-min
// objective z, from est's plan, within limit: the plan found, an NP plan as good as est
// (ok false when the solver could not run or found none).
func (s *session) npMax(nm *npMaxModel, est solved, mi int, limit time.Duration) (solved, bool) {
	b := nm.b
	for mj, xs := range b.x {
		for _, x := range xs {
			b.m.SetVarObj(x, 0)
			if mj == mi {
				b.m.SetVarObj(x, 1)
			}
		}
	}
	res, err := s.solve(b, solveCall{phase: "np-rates", start: nm.start, limit: limit})
	if err != nil || !res.HasSolution {
		return solved{}, false
	}
	a := b.decode(res.Values)
	return solved{pipes: s.p.pipes(nm.spaces, a, 1), st: est.st, npAssign: a}, true
}

// assignRefit maps an NP plan's pipelines onto this NP model's variables, each on the GPUs
// it had, at the option of its template that carries the most on them: its own batch where
// the model still has it, else another. It is a β pass's start from the first pass's plan,
// whose larger batches β may no longer let fill within the SLO: assignFrom would drop those
// pipelines, and a model left with none makes a max-min start worth nothing (z = 0).
func (b *built) assignRefit(pipes []pipe) assignment {
	return b.assignEach(pipes, func(o option, was part) float64 {
		return o.X * float64(sameGPUs(o, was))
	})
}
