package solvertest

import (
	"testing"

	"github.com/plan-dev/plan/solver"
)

func TestBruteForce(t *testing.T) {
	// max x + y s.t. x + 2y <= 4, 3x + y <= 6 over 0..10: optimum 2.
	m := solver.NewModel("small", solver.Maximize)
	x := m.AddInteger("x", 0, 10, 1)
	y := m.AddInteger("y", 0, 10, 1)
	m.AddRow("a", -solver.Inf, 4, solver.Term{Var: x, Coef: 1}, solver.Term{Var: y, Coef: 2})
	m.AddRow("b", -solver.Inf, 6, solver.Term{Var: x, Coef: 3}, solver.Term{Var: y, Coef: 1})
	m.SetObjOffset(0.5)
	obj, vals, ok := BruteForce(m)
	if !ok || obj != 2.5 || len(vals) != 2 || vals[0]+vals[1] != 2 {
		t.Fatalf("BruteForce = %v, %v, %v; want 2.5, x+y=2, true", obj, vals, ok)
	}

	m.AddRow("c", 7, solver.Inf, solver.Term{Var: x, Coef: 1})
	if _, _, ok := BruteForce(m); ok {
		t.Fatal("model with x >= 7 and 3x <= 6 reported feasible")
	}
}

func TestBruteForcePanicsOnContinuous(t *testing.T) {
	m := solver.NewModel("c", solver.Minimize)
	m.AddContinuous("x", 0, 1, 1)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a continuous variable")
		}
	}()
	BruteForce(m)
}
