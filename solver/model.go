package solver

import (
	"cmp"
	"math"
	"slices"
)

// Sense is the optimization direction.
type Sense int

// Optimization directions.
const (
	Minimize Sense = iota
	Maximize
)

func (s Sense) String() string {
	if s == Maximize {
		return "maximize"
	}
	return "minimize"
}

// Inf is the bound meaning "no bound"; use -Inf for no lower bound.
var Inf = math.Inf(1)

// Var identifies a variable: its column index in the model.
type Var int

// Term is one coefficient of a row: Coef * Var.
type Term struct {
	Var  Var
	Coef float64
}

type column struct {
	name    string
	lb, ub  float64
	obj     float64
	integer bool
}

type row struct {
	name   string
	lb, ub float64
	terms  []Term // sorted by Var, duplicates summed, zeros dropped
}

// Model is an LP or MILP. The zero value is not usable; call NewModel. A
// Model is not safe for concurrent mutation, but may be solved concurrently
// once built.
type Model struct {
	name   string
	sense  Sense
	offset float64
	cols   []column
	rows   []row
	nInt   int
}

// NewModel returns an empty model.
func NewModel(name string, sense Sense) *Model {
	return &Model{name: name, sense: sense}
}

// AddVar adds a variable with bounds lb <= x <= ub (-Inf/Inf for none),
// objective coefficient obj and, if integer, integrality. Invalid bounds are
// accepted here and reported by Validate (and so by Solve).
func (m *Model) AddVar(name string, lb, ub, obj float64, integer bool) Var {
	m.cols = append(m.cols, column{name: name, lb: lb, ub: ub, obj: obj, integer: integer})
	if integer {
		m.nInt++
	}
	return Var(len(m.cols) - 1)
}

// AddBinary adds a 0/1 integer variable.
func (m *Model) AddBinary(name string, obj float64) Var {
	return m.AddVar(name, 0, 1, obj, true)
}

// AddContinuous adds a continuous variable.
func (m *Model) AddContinuous(name string, lb, ub, obj float64) Var {
	return m.AddVar(name, lb, ub, obj, false)
}

// AddInteger adds a general integer variable.
func (m *Model) AddInteger(name string, lb, ub, obj float64) Var {
	return m.AddVar(name, lb, ub, obj, true)
}

// AddRow adds the row lb <= sum(terms) <= ub and returns its index. Use
// lb == ub for an equality and -Inf/Inf for a one-sided row. Terms naming
// the same variable are summed; terms that sum to exactly zero are dropped.
// The terms slice is not retained.
func (m *Model) AddRow(name string, lb, ub float64, terms ...Term) int {
	ts := slices.Clone(terms)
	slices.SortStableFunc(ts, func(a, b Term) int { return cmp.Compare(a.Var, b.Var) })
	out := ts[:0]
	for _, t := range ts {
		if n := len(out); n > 0 && out[n-1].Var == t.Var {
			out[n-1].Coef += t.Coef
			continue
		}
		out = append(out, t)
	}
	ts = slices.DeleteFunc(out, func(t Term) bool { return t.Coef == 0 })
	m.rows = append(m.rows, row{name: name, lb: lb, ub: ub, terms: slices.Clip(ts)})
	return len(m.rows) - 1
}

// SetVarBounds changes v's bounds (e.g. to fix it before a re-solve).
func (m *Model) SetVarBounds(v Var, lb, ub float64) { m.cols[v].lb, m.cols[v].ub = lb, ub }

// SetVarObj changes v's objective coefficient (e.g. to re-solve a model for another
// objective over the same constraints).
func (m *Model) SetVarObj(v Var, c float64) { m.cols[v].obj = c }

// SetObjOffset sets the constant added to the objective.
func (m *Model) SetObjOffset(c float64) { m.offset = c }

// Name returns the model name.
func (m *Model) Name() string { return m.name }

// Sense returns the optimization direction.
func (m *Model) Sense() Sense { return m.sense }

// ObjOffset returns the objective constant.
func (m *Model) ObjOffset() float64 { return m.offset }

// NumVars returns the number of variables.
func (m *Model) NumVars() int { return len(m.cols) }

// NumRows returns the number of rows.
func (m *Model) NumRows() int { return len(m.rows) }

// NumIntegers returns the number of integer (including binary) variables.
func (m *Model) NumIntegers() int { return m.nInt }

// VarName returns the name v was added with.
func (m *Model) VarName(v Var) string { return m.cols[v].name }

// VarBounds returns the bounds of v.
func (m *Model) VarBounds(v Var) (lb, ub float64) { return m.cols[v].lb, m.cols[v].ub }

// VarObj returns the objective coefficient of v.
func (m *Model) VarObj(v Var) float64 { return m.cols[v].obj }

// IsInteger reports whether v is integer (or binary).
func (m *Model) IsInteger(v Var) bool { return m.cols[v].integer }

// RowName returns the name row i was added with.
func (m *Model) RowName(i int) string { return m.rows[i].name }

// RowBounds returns the bounds of row i.
func (m *Model) RowBounds(i int) (lb, ub float64) { return m.rows[i].lb, m.rows[i].ub }

// RowTerms returns a copy of the terms of row i, sorted by variable with
// duplicates merged.
func (m *Model) RowTerms(i int) []Term { return slices.Clone(m.rows[i].terms) }

// objective evaluates the objective (offset included) at x.
func (m *Model) objective(x []float64) float64 {
	o := m.offset
	for j, c := range m.cols {
		o += c.obj * x[j]
	}
	return o
}
