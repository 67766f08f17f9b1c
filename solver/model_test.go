package solver

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestAddRowMergesDuplicates(t *testing.T) {
	m := NewModel("m", Minimize)
	x := m.AddContinuous("x", 0, 1, 0)
	y := m.AddBinary("y", 1)
	z := m.AddInteger("z", -2, 2, 0)
	terms := []Term{{z, 1}, {x, 2}, {y, 1}, {x, 3}, {y, -1}}
	i := m.AddRow("r", -Inf, 4, terms...)
	got := m.RowTerms(i)
	want := []Term{{x, 5}, {z, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RowTerms = %v, want %v", got, want)
	}
	if terms[0] != (Term{z, 1}) {
		t.Error("AddRow modified the caller's slice")
	}
	got[0].Coef = 99
	if m.RowTerms(i)[0].Coef != 5 {
		t.Error("RowTerms exposes internal state")
	}
	if m.NumVars() != 3 || m.NumRows() != 1 || m.NumIntegers() != 2 {
		t.Errorf("counts %d %d %d", m.NumVars(), m.NumRows(), m.NumIntegers())
	}
	if lb, ub := m.VarBounds(y); lb != 0 || ub != 1 || !m.IsInteger(y) || m.VarObj(y) != 1 || m.VarName(y) != "y" {
		t.Errorf("binary y: [%v,%v] int=%v obj=%v", lb, ub, m.IsInteger(y), m.VarObj(y))
	}
	if lb, ub := m.RowBounds(i); !math.IsInf(lb, -1) || ub != 4 || m.RowName(i) != "r" {
		t.Errorf("row bounds [%v,%v]", lb, ub)
	}
}

func TestProblemCSC(t *testing.T) {
	m := NewModel("m", Maximize)
	x := m.AddContinuous("x", 0, 1, 1)
	y := m.AddContinuous("y", -1, 2, 2)
	z := m.AddInteger("z", 0, 5, 3)
	m.AddRow("a", 0, 1, Term{y, 4}, Term{x, 1})
	m.AddRow("b", -Inf, 3, Term{z, 5}, Term{x, 2})
	m.SetObjOffset(7)
	p := m.problem(false)
	if !reflect.DeepEqual(p.AStart, []int32{0, 2, 3, 4}) ||
		!reflect.DeepEqual(p.AIndex, []int32{0, 1, 0, 1}) ||
		!reflect.DeepEqual(p.AValue, []float64{1, 2, 4, 5}) ||
		!reflect.DeepEqual(p.Integrality, []int32{0, 0, 1}) ||
		!p.Maximize || p.Offset != 7 || p.ColCost[2] != 3 {
		t.Errorf("CSC = %+v", p)
	}
	if q := m.problem(true); q.Offset != 0 || q.ColCost[0] != 0 || q.ColCost[2] != 0 {
		t.Errorf("zero-objective problem keeps objective: %+v", q)
	}
}

func TestValidate(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		build func(m *Model)
		want  string // substring of the error; "" = valid
	}{
		{"ok", func(m *Model) {
			x := m.AddContinuous("x", -Inf, Inf, 1)
			m.AddRow("r", -Inf, Inf, Term{x, 1})
		}, ""},
		{"lb>ub", func(m *Model) { m.AddContinuous("x", 2, 1, 0) }, `var 0 ("x"): lower bound 2 > upper bound 1`},
		{"nan-bound", func(m *Model) { m.AddInteger("n", nan, 1, 0) }, `var 0 ("n"): NaN bound`},
		{"lb+inf", func(m *Model) { m.AddContinuous("x", Inf, Inf, 0) }, "lower bound is +Inf"},
		{"ub-inf", func(m *Model) { m.AddContinuous("x", -Inf, -Inf, 0) }, "upper bound is -Inf"},
		{"nan-obj", func(m *Model) { m.AddContinuous("x", 0, 1, nan) }, `var 0 ("x"): objective coefficient is NaN`},
		{"inf-obj", func(m *Model) { m.AddContinuous("x", 0, 1, Inf) }, "objective coefficient is +Inf"},
		{"offset", func(m *Model) { m.SetObjOffset(nan) }, "objective offset is NaN"},
		{"row-bounds", func(m *Model) {
			x := m.AddContinuous("x", 0, 1, 0)
			m.AddRow("cap", 5, 4, Term{x, 1})
		}, `row 0 ("cap"): lower bound 5 > upper bound 4`},
		{"row-nan-coef", func(m *Model) {
			x := m.AddContinuous("x", 0, 1, 0)
			m.AddRow("r", 0, 1, Term{x, nan})
		}, `row 0 ("r"): coefficient of var 0 ("x") is NaN`},
		{"row-huge-coef", func(m *Model) {
			x := m.AddContinuous("x", 0, 1, 0)
			m.AddRow("bigM", 0, 1, Term{x, 1e16})
		}, `row 0 ("bigM"): coefficient of var 0 ("x") is 1e+16`},
		{"bad-var", func(m *Model) {
			m.AddContinuous("x", 0, 1, 0)
			m.AddRow("r", 0, 1, Term{Var(3), 1})
			m.AddRow("s", 0, 1, Term{Var(-1), 1})
		}, `row 0 ("r"): term refers to var 3, model has 1 vars`},
		{"many", func(m *Model) {
			for range 30 {
				m.AddContinuous("x", 1, 0, 0)
			}
		}, `var 9 ("x")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewModel("v", Minimize)
			tc.build(m)
			err := m.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v\nwant ErrInvalidModel containing %q", err, tc.want)
			}
			if strings.Count(err.Error(), "\n") >= maxValidateErrors {
				t.Errorf("more than %d problems reported", maxValidateErrors)
			}
		})
	}
}
