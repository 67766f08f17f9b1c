// Package solvertest holds test helpers for code that builds solver models:
// an exhaustive reference solver for tiny integer models to cross-check
// HiGHS (and formulations) against.
package solvertest

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/solver"
)

// MaxPoints bounds the number of points BruteForce enumerates.
const MaxPoints = 10_000_000

// Tol is the feasibility tolerance for rows, matching HiGHS's default
// primal feasibility tolerance.
const Tol = 1e-7

// BruteForce enumerates every integer point of m and returns the best
// objective (offset included), a point attaining it (the lexicographically
// first in enumeration order among equals) and whether any point is feasible.
// All variables must be integer with finite bounds and the product of the
// domain sizes at most MaxPoints; otherwise BruteForce panics, since the
// caller's test is wrong rather than the model.
func BruteForce(m *solver.Model) (obj float64, values []float64, feasible bool) {
	n := m.NumVars()
	lo := make([]float64, n)
	hi := make([]float64, n)
	points := 1.0
	for j := range n {
		v := solver.Var(j)
		lb, ub := m.VarBounds(v)
		if !m.IsInteger(v) || math.IsInf(lb, 0) || math.IsInf(ub, 0) {
			panic(fmt.Sprintf("solvertest.BruteForce: var %d (%q) is not a bounded integer", j, m.VarName(v)))
		}
		lo[j], hi[j] = math.Ceil(lb), math.Floor(ub)
		if lo[j] > hi[j] {
			return 0, nil, false
		}
		points *= hi[j] - lo[j] + 1
	}
	if points > MaxPoints {
		panic(fmt.Sprintf("solvertest.BruteForce: %g points exceed MaxPoints", points))
	}
	type row struct {
		lb, ub float64
		terms  []solver.Term
	}
	rows := make([]row, m.NumRows())
	for i := range rows {
		lb, ub := m.RowBounds(i)
		rows[i] = row{lb, ub, m.RowTerms(i)}
	}
	sign := 1.0
	if m.Sense() == solver.Maximize {
		sign = -1
	}
	x := append([]float64(nil), lo...)
	for {
		ok := true
		for _, r := range rows {
			s := 0.0
			for _, t := range r.terms {
				s += t.Coef * x[t.Var]
			}
			if s < r.lb-Tol || s > r.ub+Tol {
				ok = false
				break
			}
		}
		if ok {
			o := m.ObjOffset()
			for j := range n {
				o += m.VarObj(solver.Var(j)) * x[j]
			}
			if !feasible || sign*o < sign*obj {
				obj, values, feasible = o, append(values[:0], x...), true
			}
		}
		// Advance x like an odometer; done when it wraps around.
		j := 0
		for ; j < n; j++ {
			if x[j] < hi[j] {
				x[j]++
				break
			}
			x[j] = lo[j]
		}
		if j == n {
			return obj, values, feasible
		}
	}
}
