package ppipe

import (
	"errors"
	"math"

	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

// dartr is replicated DART (PPipe §7.1), following the authors' artifact:
//  1. solve the multi-model NP plan; model m keeps the n_{m,k} GPUs it got;
//  2. GPUs NP left unused are split evenly (floor) across the models;
//  3. per model, p = min_k n_{m,k} pairs each run plan A, the PPipe MILP on a one-high +
//     one-low cluster (whole GPUs, same P, unified batch, margin, β), and the q = max − min
//     leftover GPUs of the larger type each run plan B, the model whole on one GPU
//     (infeasible ⇒ idle). Plan = p×A ⊕ q×B, no joint re-optimisation.
func (s *session) dartr() (solved, error) {
	p := s.p
	np, err := s.np()
	if err != nil {
		return solved{}, err
	}
	s.reserveFor(np.st.objective) // DART-r's plan is about the NP plan's size
	K := len(p.types)
	n := make([][]int, len(p.models))
	for mi := range n {
		n[mi] = make([]int, K)
	}
	for _, pp := range np.pipes {
		for _, pt := range pp.parts {
			n[pp.model][pt.k] += pt.g // whole GPUs: slices = GPUs
		}
	}
	for k := range p.types {
		usedK := 0
		for mi := range n {
			usedK += n[mi][k]
		}
		share := (p.types[k].count - usedK) / len(p.models)
		for mi := range n {
			n[mi][k] += share
		}
	}
	st := stats{status: "optimal"}
	var out []pipe
	// part adds one sub-solve's pipelines to the plan.
	part := func(mi int, md *modelData, sub dartrSub) error {
		pipes, err := s.dartrPart(mi, md, sub, &st)
		out = append(out, pipes...)
		return err
	}
	for mi, md := range p.models {
		if K == 1 {
			// One GPU type: nothing to pair; every GPU runs the model whole.
			if err := part(mi, md, dartrSub{counts: []int{1}, P: 1, scale: n[mi][0]}); err != nil {
				return solved{st: st}, err
			}
			continue
		}
		hi, lo := 0, 1
		if p.types[1].class == "high" && p.types[0].class != "high" {
			hi, lo = 1, 0
		}
		pairs := min(n[mi][hi], n[mi][lo])
		if pairs > 0 {
			counts := make([]int, K)
			counts[hi], counts[lo] = 1, 1
			if err := part(mi, md, dartrSub{counts: counts, P: p.opts.MaxPartitions, scale: pairs}); err != nil {
				return solved{st: st}, err
			}
		}
		if q := n[mi][hi] - n[mi][lo]; q != 0 {
			counts := make([]int, K)
			if q > 0 {
				counts[hi] = 1
			} else {
				counts[lo] = 1
			}
			if err := part(mi, md, dartrSub{counts: counts, P: 1, scale: int(math.Abs(float64(q)))}); err != nil {
				return solved{st: st}, err
			}
		}
	}
	st.objective = p.objective(out)
	st.bound = st.objective
	if err := p.emptyModels(out); err != nil {
		return solved{st: st}, err
	}
	return solved{pipes: out, st: st}, nil
}

// dartrSub is one DART-r sub-problem: the tiny cluster's GPU counts per type, its stages P,
// and how many times its plan is replicated.
type dartrSub struct {
	counts   []int
	P, scale int
}

// dartrPart solves one model alone on a tiny cluster (sub.counts per type, whole GPUs,
// sub.P stages) and replicates the result sub.scale times, adding its options and status to
// st. An infeasible sub-problem leaves those GPUs idle; the error is the solver's.
func (s *session) dartrPart(mi int, md *modelData, sub dartrSub, st *stats) ([]pipe, error) {
	if sub.scale <= 0 {
		return nil, nil
	}
	cfg := spaceConfig{P: sub.P, wholeOnly: true, counts: sub.counts}
	ms := s.p.space(md, cfg)
	st.rawOptions += ms.raw
	st.keptOptions += ms.kept
	if len(ms.tmpls) == 0 {
		return nil, nil
	}
	spaces := []*modelSpace{ms}
	b := s.p.build(spaces, cfg)
	res, err := s.run(b, solveCall{phase: "dart-r"})
	if err != nil {
		if errors.Is(err, planner.ErrNoSolution) {
			st.status = solver.StatusTimeLimit.String()
			return nil, nil
		}
		return nil, err
	}
	if res.Status != solver.StatusOptimal {
		st.status = res.Status.String()
		st.gap = math.Max(st.gap, res.Gap)
	}
	pipes := s.p.pipes(spaces, b.decode(res.Values), sub.scale)
	for i := range pipes {
		pipes[i].model = mi
	}
	return pipes, nil
}
