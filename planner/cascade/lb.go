package cascade

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/plan-dev/plan/solver"
)

// lbSolver solves the load-balancing LP of CascadeServe §4.4 (Eqs. 1–3) for one cascade on one
// placement at unit load (λ_m = Reach_m·1 QPS): u* and x scale linearly with the rate, so one
// solve per (cascade, placement, per-sample times) serves every range that uses the cascade.
type lbSolver struct {
	ctx   context.Context
	t     *Task
	nGPU  int
	cache map[string]lbResult
	// LPs counts solver calls (for the bench's planner-cost report).
	LPs int
	// solveLP is solver.Solve (a test replaces it to make every solve fail).
	solveLP func(context.Context, *solver.Model, solver.Options) (*solver.Result, error)
	// err is the first solver failure (not an infeasible LP: a missing or broken
	// engine): the plan cannot have shares, so Plan returns it instead of a plan.
	err error
}

func (s *lbSolver) run(m *solver.Model) (*solver.Result, error) {
	f := s.solveLP
	if f == nil {
		f = solver.Solve
	}
	r, err := f(s.ctx, m, solver.Options{})
	if err != nil && s.err == nil {
		s.err = err
	}
	return r, err
}

type lbResult struct {
	u float64
	// x[i][k]: load of stage i's k-th replica (placement order among the model's replicas).
	x   [][]float64
	err error
}

// placementKey identifies a placement.
func placementKey(pl []Replica) string {
	var b strings.Builder
	for _, r := range pl {
		fmt.Fprintf(&b, "%d:%v;", r.Model, r.GPUs)
	}
	return b.String()
}

// solve returns u* at unit load and the per-replica loads. perSample[i] is the busy time
// per sample of stage i's model (seconds). shares asks for the second phase (min Σx at u*).
func (s *lbSolver) solve(c *Cascade, pl []Replica, plKey string, perSample []float64, shares bool) lbResult {
	key := fmt.Sprintf("%s|%s|%v|%v", c.Key(), plKey, perSample, shares)
	if r, ok := s.cache[key]; ok {
		return r
	}
	r := s.solveUncached(c, pl, perSample, shares)
	s.cache[key] = r
	return r
}

func (s *lbSolver) solveUncached(c *Cascade, pl []Replica, perSample []float64, shares bool) lbResult {
	k := len(c.Models)
	reps := make([][]int, k)
	full := true
	for i, m := range c.Models {
		for ri, r := range pl {
			if r.Model == m {
				reps[i] = append(reps[i], ri)
			}
		}
		if len(reps[i]) == 0 {
			return lbResult{u: math.Inf(1)}
		}
		if len(reps[i]) != s.nGPU || len(pl[reps[i][0]].GPUs) != 1 {
			full = false
		}
	}
	if full {
		// Every model of the cascade on every GPU: spreading each model evenly is optimal
		// (u* = Σ λ_m t_m / n, the LP's lower bound), no LP needed.
		res := lbResult{x: make([][]float64, k)}
		for i := range reps {
			res.u += c.Reach[i] * perSample[i] / float64(s.nGPU)
			res.x[i] = make([]float64, len(reps[i]))
			for j := range res.x[i] {
				res.x[i][j] = c.Reach[i] / float64(len(reps[i]))
			}
		}
		return res
	}
	build := func(fixU float64) (*solver.Model, solver.Var, [][]solver.Var) {
		sense := solver.Minimize
		m := solver.NewModel("cascade-lb", sense)
		uObj := 1.0
		if fixU > 0 {
			uObj = 0
		}
		u := m.AddContinuous("u", 0, solver.Inf, uObj)
		xs := make([][]solver.Var, k)
		perGPU := make([][]solver.Term, s.nGPU)
		for i := range reps {
			var dem []solver.Term
			for j, ri := range reps[i] {
				obj := 0.0
				if fixU > 0 {
					obj = 1
				}
				v := m.AddContinuous(fmt.Sprintf("x_%d_%d", i, j), 0, solver.Inf, obj)
				xs[i] = append(xs[i], v)
				dem = append(dem, solver.Term{Var: v, Coef: 1})
				for _, d := range pl[ri].GPUs {
					// a multi-GPU replica holds every GPU of its group for the whole batch, so
					// its full per-sample hold time enters each GPU's row
					perGPU[d] = append(perGPU[d], solver.Term{Var: v, Coef: perSample[i]})
				}
			}
			m.AddRow(fmt.Sprintf("demand_%d", i), c.Reach[i], solver.Inf, dem...)
		}
		for d, ts := range perGPU {
			if len(ts) == 0 {
				continue
			}
			m.AddRow(fmt.Sprintf("gpu_%d", d), -solver.Inf, 0, append(ts, solver.Term{Var: u, Coef: -1})...)
		}
		if fixU > 0 {
			m.AddRow("u_fix", -solver.Inf, fixU, solver.Term{Var: u, Coef: 1})
		}
		return m, u, xs
	}
	m, _, _ := build(0)
	s.LPs++
	r, err := s.run(m)
	if err != nil {
		return lbResult{u: math.Inf(1), err: err}
	}
	if r.Status != solver.StatusOptimal {
		return lbResult{u: math.Inf(1)}
	}
	res := lbResult{u: r.Objective}
	vals := r.Values
	if shares {
		m2, _, _ := build(res.u*(1+relTol) + tieTol)
		s.LPs++
		r2, err := s.run(m2)
		if err == nil && r2.Status == solver.StatusOptimal {
			vals = r2.Values
		}
	}
	res.x = make([][]float64, k)
	col := 1
	for i := range reps {
		res.x[i] = make([]float64, len(reps[i]))
		for j := range reps[i] {
			res.x[i][j] = math.Round(max(vals[col], 0)*1e9) / 1e9
			col++
		}
	}
	return res
}

// normShares turns per-replica loads into shares summing to 1 (uniform when all are 0).
func normShares(x []float64) []float64 {
	out := make([]float64, len(x))
	var sum float64
	for _, v := range x {
		sum += v
	}
	for i, v := range x {
		if sum > 0 {
			out[i] = v / sum
		} else {
			out[i] = 1 / float64(len(x))
		}
	}
	return out
}
