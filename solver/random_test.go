package solver_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/solver"
	"github.com/plan-dev/plan/solver/internal/highs"
	"github.com/plan-dev/plan/solver/solvertest"
)

// randomMILP builds a small pure-integer model whose every point can be
// enumerated: 2-6 variables (some binary) with domains of at most 7 values,
// 1-4 rows with mixed senses and small integer coefficients. Most models are
// built around a random anchor point so that they are feasible; the rest
// (and some anchored ones with equalities) are infeasible.
func randomMILP(seed uint64) *solver.Model {
	r := rand.New(rand.NewPCG(seed, 7))
	sense := solver.Minimize
	if r.IntN(2) == 1 {
		sense = solver.Maximize
	}
	m := solver.NewModel(fmt.Sprintf("rand%d", seed), sense)
	n := 2 + r.IntN(5)
	anchor := make([]float64, n) // a point made feasible in most models
	for j := range n {
		obj := float64(r.IntN(21) - 10)
		if r.IntN(3) == 0 {
			m.AddBinary(fmt.Sprintf("b%d", j), obj)
			anchor[j] = float64(r.IntN(2))
			continue
		}
		lb := float64(r.IntN(7) - 3)
		w := r.IntN(7)
		m.AddInteger(fmt.Sprintf("x%d", j), lb, lb+float64(w), obj)
		anchor[j] = lb + float64(r.IntN(w+1))
	}
	anchored := r.IntN(5) > 0
	for i := range 1 + r.IntN(4) {
		var terms []solver.Term
		act := 0.0
		for j := range n {
			if r.IntN(3) > 0 {
				c := float64(r.IntN(13) - 6)
				terms = append(terms, solver.Term{Var: solver.Var(j), Coef: c})
				act += c * anchor[j]
			}
		}
		rhs := float64(r.IntN(21) - 4)
		if anchored {
			rhs = act + float64(r.IntN(4))
		}
		lb, ub := -solver.Inf, rhs
		switch r.IntN(8) {
		case 0, 1:
			lb, ub = rhs-2*float64(r.IntN(4)), solver.Inf
		case 2:
			lb = ub // equality
		case 3, 4:
			lb = rhs - float64(1+r.IntN(12))
		}
		m.AddRow(fmt.Sprintf("r%d", i), lb, ub, terms...)
	}
	m.SetObjOffset(float64(r.IntN(5)))
	return m
}

func TestRandomMILPsAgainstBruteForce(t *testing.T) {
	if _, err := highs.Default(); err != nil {
		requireOrSkip(t, err)
	}
	infeasible := 0
	for seed := uint64(1); seed <= 50; seed++ {
		m := randomMILP(seed)
		want, _, feasible := solvertest.BruteForce(m)
		// RelGap 0 would mean HiGHS's default 1e-4; ask for exact optimality.
		res, err := solver.Solve(context.Background(), m, solver.Options{RelGap: 1e-12})
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if !feasible {
			infeasible++
			if res.Status != solver.StatusInfeasible {
				t.Errorf("%s: status %v, brute force finds no feasible point", m.Name(), res.Status)
			}
			continue
		}
		if res.Status != solver.StatusOptimal || math.Abs(res.Objective-want) > 1e-6 {
			t.Errorf("%s: %v objective %v, brute force %v", m.Name(), res.Status, res.Objective, want)
			continue
		}
		// Ties may pick another optimal point: check it rather than compare.
		got, _, _ := solvertest.BruteForce(fixedAt(m, res.Values))
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("%s: returned point is not optimal/feasible (%v)", m.Name(), res.Values)
		}
	}
	t.Logf("%d of 50 models infeasible", infeasible)
	if infeasible == 0 || infeasible > 20 {
		t.Errorf("%d of 50 random models infeasible: generator lacks variety", infeasible)
	}
}

// fixedAt returns a copy of m with every variable fixed to x, so that
// BruteForce checks the point's feasibility and objective.
func fixedAt(m *solver.Model, x []float64) *solver.Model {
	c := solver.NewModel(m.Name(), m.Sense())
	for j := range m.NumVars() {
		v := solver.Var(j)
		c.AddInteger(m.VarName(v), x[j], x[j], m.VarObj(v))
	}
	for i := range m.NumRows() {
		lb, ub := m.RowBounds(i)
		c.AddRow(m.RowName(i), lb, ub, m.RowTerms(i)...)
	}
	c.SetObjOffset(m.ObjOffset())
	return c
}
