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
func (s *session) dartr() ([]pipe, stats, error) {
	p := s.p
	npPipes, _, err := s.np(true)
	if err != nil {
		return nil, stats{}, err
	}
	K := len(p.types)
	n := make([][]int, len(p.models))
	for mi := range n {
		n[mi] = make([]int, K)
	}
	for _, pp := range npPipes {
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
	for mi, md := range p.models {
		if K == 1 {
			// One GPU type: nothing to pair; every GPU runs the model whole.
			out = append(out, s.dartrPart(mi, md, []int{1}, 1, n[mi][0], &st)...)
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
			out = append(out, s.dartrPart(mi, md, counts, p.opts.MaxPartitions, pairs, &st)...)
		}
		if q := n[mi][hi] - n[mi][lo]; q != 0 {
			counts := make([]int, K)
			if q > 0 {
				counts[hi] = 1
			} else {
				counts[lo] = 1
			}
			out = append(out, s.dartrPart(mi, md, counts, 1, int(math.Abs(float64(q))), &st)...)
		}
		if st.status == "error" {
			return nil, st, s.dartrErr
		}
	}
	st.objective = p.objective(out)
	st.bound = st.objective
	if err := p.emptyModels(out); err != nil {
		return nil, st, err
	}
	return out, st, nil
}

// dartrPart solves one model alone on a tiny cluster (counts per type, whole GPUs, P stages)
// and replicates the result scale times. An infeasible sub-problem leaves those GPUs idle.
func (s *session) dartrPart(mi int, md *modelData, counts []int, P, scale int, st *stats) []pipe {
	if scale <= 0 || st.status == "error" {
		return nil
	}
	cfg := spaceConfig{P: P, wholeOnly: true, counts: counts}
	ms := s.p.space(md, cfg)
	st.rawOptions += ms.raw
	st.keptOptions += ms.kept
	if len(ms.tmpls) == 0 {
		return nil
	}
	spaces := []*modelSpace{ms}
	b := s.p.build(spaces, cfg)
	res, err := s.run("dart-r", b, nil, 0)
	if err != nil {
		if errors.Is(err, planner.ErrNoSolution) {
			st.status = solver.StatusTimeLimit.String()
			return nil
		}
		st.status, s.dartrErr = "error", err
		return nil
	}
	if res.Status != solver.StatusOptimal {
		st.status = res.Status.String()
		st.gap = math.Max(st.gap, res.Gap)
	}
	pipes := s.p.pipes(spaces, b.decode(res.Values), scale)
	for i := range pipes {
		pipes[i].model = mi
	}
	return pipes
}
