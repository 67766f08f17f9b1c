package solver

import "github.com/plan-dev/plan/solver/internal/highs"

// problem converts the model to HiGHS's column-wise form. With zeroObj the
// objective is dropped (used to test feasibility on its own).
func (m *Model) problem(zeroObj bool) *highs.Problem {
	n, nr := len(m.cols), len(m.rows)
	p := &highs.Problem{
		NumCol: n, NumRow: nr,
		Maximize: m.sense == Maximize,
		ColCost:  make([]float64, n), ColLower: make([]float64, n), ColUpper: make([]float64, n),
		RowLower: make([]float64, nr), RowUpper: make([]float64, nr),
		AStart: make([]int32, n+1),
	}
	if !zeroObj {
		p.Offset = m.offset
	}
	if m.nInt > 0 {
		p.Integrality = make([]int32, n)
	}
	for j, c := range m.cols {
		p.ColLower[j], p.ColUpper[j] = c.lb, c.ub
		if !zeroObj {
			p.ColCost[j] = c.obj
		}
		if c.integer {
			p.Integrality[j] = 1
		}
	}
	// Count entries per column, prefix-sum into starts, then scatter rows in
	// order so that row indices within each column come out ascending.
	nnz := 0
	for i, r := range m.rows {
		p.RowLower[i], p.RowUpper[i] = r.lb, r.ub
		for _, t := range r.terms {
			p.AStart[t.Var+1]++
		}
		nnz += len(r.terms)
	}
	for j := range n {
		p.AStart[j+1] += p.AStart[j]
	}
	p.AIndex = make([]int32, nnz)
	p.AValue = make([]float64, nnz)
	next := make([]int32, n)
	copy(next, p.AStart[:n])
	for i, r := range m.rows {
		for _, t := range r.terms {
			k := next[t.Var]
			p.AIndex[k], p.AValue[k] = int32(i), t.Coef
			next[t.Var]++
		}
	}
	return p
}
