package calibrate

import (
	"math"
	"slices"
)

// The second stage of the search (search.go) refines the first stage's point by damped
// Gauss–Newton steps (Levenberg's damping: "A method for the solution of certain non-linear
// problems in least squares", Quart. Appl. Math. 1944) on the objective's residuals (the
// TTFT groups' log-ratios and each request's TPOT log-ratio, objective.residuals): a step's
// time is linear in the three factors, so with the batching held, each residual is near
// linear in them, and a Gauss–Newton step moves all the factors together, along the valleys
// where one trades off against another.
//
// The replays are not smooth: a replay whose steps fall a little earlier or later batches
// requests differently, and the loss jumps by tens of percent for a change of a µs (measured
// on the synthetic round trip). So the Jacobian's finite differences take steps of 2%, over
// which the jumps average out across the requests; a step is refused only when it more than
// doubles the loss (a search that took only steps lowering it stopped at the first lucky
// point, 4% from the truth); the steps' cap halves from the fifth iteration on, so that the
// iterates settle; and the result is the mean of the settling iterates.
//
// With the overhead held (search.hold), the two scales are what is left: the prefill scale
// is seen by the TTFTs' slope over prompt length and by the prefill steps that interrupt
// other requests' decodes, the decode scale by the TPOTs.

// lmJacobianStep is the finite-difference step in the search space: 2% of a scale, or of the
// smallest curve point for the overhead.
const lmJacobianStep = 0.02

// The refinement's steps: damped by lmDamping times JᵀJ's diagonal, at most lmMaxStep (10% of
// a scale) long, that cap halved each iteration from the lmFreeIterations-th on, the step
// halved at most lmTries times while the loss after it is over lmDiverged times the loss
// before, and done once under lmMinStep.
const (
	lmDamping  = 1e-3
	lmMaxStep  = 0.1
	lmTries    = 4
	lmDiverged = 2.0
	lmMinStep  = 1e-3
	// lmFreeIterations is how many iterations take steps up to lmMaxStep.
	lmFreeIterations = 4
)

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

// refine runs the damped Gauss–Newton iterations over the free coordinates of the search
// space from x (reduced: the free factors only) until a step is under lmMinStep, a step
// diverges however cut, lmMaxIterations have run, or maxReplays replays have; it returns the
// mean of the iterates from the lmFreeIterations-th on (x, or the last, when there are none).
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
	var settled [][]float64
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
		// Gauss–Newton's step, lightly damped and cut to lmMaxStep. The loss decides only
		// against a step that diverges (lmDiverged times the loss before): below that, its
		// changes are the replays' jitter as much as the fit, and a search that took only
		// steps that lower it would stop at the first lucky point.
		m := make([][]float64, n)
		for k := range n {
			m[k] = slices.Clone(a[k])
			m[k][k] += lmDamping * max(a[k][k], 1e-12)
		}
		d, ok := solve(m, g)
		if !ok {
			break
		}
		size := 0.0
		for k := range d {
			d[k] = -d[k]
			size = max(size, math.Abs(d[k]))
		}
		// The cap halves after lmFreeIterations: near the minimum, the replays' jitter moves
		// the Jacobian and the residuals as much as the fit does, and the steps would walk at
		// random around it; shrinking them makes the walk settle.
		limit := lmMaxStep * math.Pow(0.5, float64(max(iter-lmFreeIterations+1, 0)))
		if size > limit {
			for k := range d {
				d[k] *= limit / size
			}
			size = limit
		}
		var y []float64
		var ry []float64
		ly := math.Inf(1)
		for try := 0; try < lmTries && !stop(); try++ {
			y = make([]float64, n)
			for k := range n {
				y[k] = x[k] + d[k]
			}
			y = project(y)
			ry, ly = res(y)
			if ly <= lmDiverged*l0 {
				break
			}
			for k := range d {
				d[k] /= 2
			}
			size /= 2
		}
		if !(ly <= lmDiverged*l0) {
			break
		}
		x, r0, l0 = y, ry, ly
		if iter+1 >= lmFreeIterations {
			settled = append(settled, slices.Clone(x))
		}
		if size < lmMinStep {
			break
		}
	}
	if len(settled) == 0 {
		return x
	}
	// The mean of the settling iterates (Polyak and Juditsky, "Acceleration of stochastic
	// approximation by averaging", SIAM J. Control Optim. 1992): they scatter about the
	// minimum by the replays' jitter, and their mean less so.
	mean := make([]float64, n)
	for _, v := range settled {
		for k := range mean {
			mean[k] += v[k] / float64(len(settled))
		}
	}
	return project(mean)
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
