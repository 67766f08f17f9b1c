package solver

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// needBackend skips the test when highs.wasm is absent, or fails it when
// PLAN_REQUIRE_ALL=1 (CI with assets must not silently skip).
func needBackend(tb testing.TB) {
	tb.Helper()
	_, err := highs.Default()
	if err == nil {
		return
	}
	if os.Getenv("PLAN_REQUIRE_ALL") == "1" || !errors.Is(err, ErrBackendUnavailable) {
		tb.Fatalf("HiGHS backend: %v", err)
	}
	tb.Skipf("HiGHS backend unavailable: %v", err)
}

// checkFeasible verifies that values satisfy bounds, integrality and rows of
// m within tol, and that obj is their objective.
func checkFeasible(tb testing.TB, m *Model, values []float64, obj, tol float64) {
	tb.Helper()
	if len(values) != m.NumVars() {
		tb.Fatalf("got %d values for %d vars", len(values), m.NumVars())
	}
	o := m.ObjOffset()
	for j, x := range values {
		v := Var(j)
		lb, ub := m.VarBounds(v)
		if x < lb-tol || x > ub+tol {
			tb.Errorf("var %s = %v outside [%v, %v]", m.VarName(v), x, lb, ub)
		}
		if m.IsInteger(v) && x != math.Round(x) {
			tb.Errorf("integer var %s = %v", m.VarName(v), x)
		}
		o += m.VarObj(v) * x
	}
	for i := range m.NumRows() {
		s := 0.0
		for _, t := range m.RowTerms(i) {
			s += t.Coef * values[t.Var]
		}
		if lb, ub := m.RowBounds(i); s < lb-tol || s > ub+tol {
			tb.Errorf("row %s = %v outside [%v, %v]", m.RowName(i), s, lb, ub)
		}
	}
	if math.Abs(o-obj) > tol*math.Max(1, math.Abs(obj)) {
		tb.Errorf("objective of values = %v, result says %v", o, obj)
	}
}

// multiKnapsack is a random multi-dimensional 0/1 knapsack: easy to find
// good solutions for, slow to prove optimal. It keeps HiGHS busy for many
// seconds at n=60, k=5.
func multiKnapsack(seed uint64, n, k int) *Model {
	r := rand.New(rand.NewPCG(seed, 1))
	m := NewModel("mknap", Maximize)
	xs := make([]Var, n)
	w := make([][]float64, k)
	for i := range w {
		w[i] = make([]float64, n)
	}
	for j := range xs {
		val := 0.0
		for i := range w {
			w[i][j] = float64(10 + r.IntN(990))
			val += w[i][j]
		}
		xs[j] = m.AddBinary("", math.Round(val/float64(k)+float64(r.IntN(500))))
	}
	for i := range w {
		terms := make([]Term, n)
		sum := 0.0
		for j := range xs {
			terms[j] = Term{xs[j], w[i][j]}
			sum += w[i][j]
		}
		m.AddRow("", -Inf, math.Round(sum/2), terms...)
	}
	return m
}

// facilityLocation is a capacitated facility location problem with
// single-sourcing: nf*nc assignment binaries plus nf opening binaries.
func facilityLocation(seed uint64, nf, nc int) *Model {
	r := rand.New(rand.NewPCG(seed, 2))
	m := NewModel("cfl", Minimize)
	type pt struct{ x, y float64 }
	fac := make([]pt, nf)
	cus := make([]pt, nc)
	for i := range fac {
		fac[i] = pt{r.Float64(), r.Float64()}
	}
	demand := make([]float64, nc)
	total := 0.0
	for j := range cus {
		cus[j] = pt{r.Float64(), r.Float64()}
		demand[j] = float64(5 + r.IntN(30))
		total += demand[j]
	}
	open := make([]Var, nf)
	assign := make([][]Var, nf)
	for i := range fac {
		open[i] = m.AddBinary("open", float64(400+r.IntN(400)))
		assign[i] = make([]Var, nc)
		for j := range cus {
			d := math.Hypot(fac[i].x-cus[j].x, fac[i].y-cus[j].y)
			assign[i][j] = m.AddBinary("assign", math.Round(100*d*demand[j])/10)
		}
	}
	for j := range cus {
		terms := make([]Term, nf)
		for i := range fac {
			terms[i] = Term{assign[i][j], 1}
		}
		m.AddRow("serve", 1, 1, terms...)
	}
	for i := range fac {
		// Each facility can serve 1/7 to 1/3.5 of the total demand: several
		// must open. (Tighter capacities make the instance far harder.)
		capacity := math.Round(6 * total / float64(nf) * (1 + r.Float64()))
		terms := []Term{{open[i], -capacity}}
		for j := range cus {
			terms = append(terms, Term{assign[i][j], demand[j]})
			m.AddRow("link", -Inf, 0, Term{assign[i][j], 1}, Term{open[i], -1})
		}
		m.AddRow("cap", -Inf, 0, terms...)
	}
	return m
}
