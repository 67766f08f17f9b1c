package calibrate

import (
	"math"
	"slices"
)

// The second stage of the search (search.go) refines the first stage's point by Levenberg and
// Marquardt's damped least squares (Marquardt, "An algorithm for least-squares estimation of
// nonlinear parameters", SIAM J. Appl. Math. 1963) on per-request residuals: each fitted
// request's log-ratio of replayed to measured TTFT and TPOT.
//
// Why per request: a step's time is linear in the three factors (a prefill step is the
// prefill scale times its curve point plus the overhead, a decode step the decode scale times
// its point and context term plus the overhead), so with the batching held, a request's TTFT
// and TPOT are linear in them too, with weights the steps it waited through. Those weights
// differ from request to request — a request decoding beside many others sees steps whose
// curve points are large, so its TPOT moves with the decode scale more than with the
// overhead, while one decoding alone sees the reverse — and the residuals of all of them
// tell the decode scale from the per-step overhead, which the means over groups do not
// (their weights are alike: a valley). A replay's batching does change with the factors,
// which moves single requests by up to a step; the Jacobian's finite differences take steps
// of a percent, over which those jumps are few and average out across the requests.

// lmJacobianStep is the finite-difference step in the search space: 2% of a scale, or of the
// smallest curve point for the overhead.
const lmJacobianStep = 0.02

// lmTries is how many damped steps an iteration tries, the damping raised fourfold after
// each that does not lower the loss, before the refinement stops.
const lmTries = 6

// lmMaxIterations bounds the refinement's iterations (each costs a replay per free factor
// and one or more for the step).
const lmMaxIterations = 25

// residuals are e's objective residuals, run by run, weighted so that their squares sum to
// e's loss (the mean of the runs').
func (s *search) residuals(e *evaluation) []float64 {
	var out []float64
	w := 1 / math.Sqrt(float64(len(s.parts)))
	for pi, pt := range s.parts {
		for _, r := range pt.obj.residuals(e.t[pi][:pt.nFit]) {
			out = append(out, w*r)
		}
	}
	return out
}

// refine runs Levenberg–Marquardt over the free coordinates of the search space from x
// (reduced: the free factors only) until a step no longer lowers the sum of squared
// residuals, the step is below 1e-5, or maxReplays replays have run; it returns the best
// point.
func (s *search) refine(x []float64, f func([]float64) Factors, project func([]float64) []float64, maxReplays int) []float64 {
	n := len(x)
	res := func(y []float64) ([]float64, float64) {
		e, err := s.eval(f(y))
		if err != nil {
			if s.err == nil {
				s.err = err
			}
			return nil, math.Inf(1)
		}
		r := s.residuals(e)
		var ss float64
		for _, v := range r {
			ss += v * v
		}
		return r, ss
	}
	stop := func() bool { return s.err != nil || s.replays >= maxReplays }
	x = project(x)
	r0, l0 := res(x)
	lambda := 1e-3
	for iter := 0; iter < lmMaxIterations && !stop() && l0 > 0; iter++ {
		// The Jacobian by forward differences, stepping inwards at the box's edge.
		jac := make([][]float64, n) // jac[k] is the column of coordinate k
		for k := range n {
			y := slices.Clone(x)
			y[k] += lmJacobianStep
			y = project(y)
			if y[k] == x[k] {
				y[k] -= 2 * lmJacobianStep
				y = project(y)
			}
			h := y[k] - x[k]
			rk, _ := res(y)
			if rk == nil || h == 0 {
				return x
			}
			jac[k] = make([]float64, len(r0))
			for i := range r0 {
				jac[k][i] = (rk[i] - r0[i]) / h
			}
		}
		a := make([][]float64, n)
		g := make([]float64, n)
		for k := range n {
			a[k] = make([]float64, n)
			for j := range n {
				for i := range r0 {
					a[k][j] += jac[k][i] * jac[j][i]
				}
			}
			for i := range r0 {
				g[k] += jac[k][i] * r0[i]
			}
		}
		accepted := false
		var size float64
		for try := 0; try < lmTries && !stop(); try++ {
			m := make([][]float64, n)
			for k := range n {
				m[k] = slices.Clone(a[k])
				m[k][k] += lambda * max(a[k][k], 1e-12)
			}
			d, ok := solve(m, g)
			if !ok {
				lambda *= 10
				continue
			}
			y := make([]float64, n)
			for k := range n {
				y[k] = x[k] - d[k]
			}
			y = project(y)
			ry, ly := res(y)
			if ly < l0 {
				size = 0
				for k := range n {
					size = max(size, math.Abs(y[k]-x[k]))
				}
				x, r0, l0 = y, ry, ly
				lambda = max(lambda/3, 1e-9)
				accepted = true
				break
			}
			lambda *= 4
		}
		if !accepted || size < 1e-5 {
			break
		}
	}
	return x
}

// solve solves m·d = g (m square) by Gaussian elimination with partial pivoting; false when
// m is singular.
func solve(m [][]float64, g []float64) ([]float64, bool) {
	n := len(g)
	a := make([][]float64, n)
	for i := range a {
		a[i] = append(slices.Clone(m[i]), g[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if !(math.Abs(a[p][c]) > 1e-300) {
			return nil, false
		}
		a[c], a[p] = a[p], a[c]
		for r := c + 1; r < n; r++ {
			k := a[r][c] / a[c][c]
			for j := c; j <= n; j++ {
				a[r][j] -= k * a[c][j]
			}
		}
	}
	d := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		v := a[i][n]
		for j := i + 1; j < n; j++ {
			v -= a[i][j] * d[j]
		}
		d[i] = v / a[i][i]
	}
	return d, true
}
