package calibrate

import (
	"fmt"
	"math"
	"slices"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/quantile"
)

// The search over the three factors is deterministic and needs no gradient (a replay's times
// are integer µs: the loss is piecewise constant at the finest scale). It runs in a
// normalised space x = (ln prefill scale, ln decode scale, overhead / the smallest point of
// the profile's curves) in two stages:
//
//  1. one golden-section search per factor over its whole range, the others held: it finds
//     the basin from the profile as it is, however far off that is;
//  2. Nelder and Mead's simplex ("A simplex method for function minimization", Computer
//     Journal 1965) from there: the scales and the overhead trade off along a valley (a step
//     of prefill is a scaled curve plus the overhead), which a search along one factor at a
//     time crosses only in tiny steps.
//
// Every point is moved into the box before it is replayed (the scales into their range, the
// overhead into its range at those scales), and each point is replayed once (search.cache).

// minimise runs both stages within maxReplays replays and returns the best factors found.
func (s *search) minimise(maxReplays int) (Factors, error) {
	s.cScale = max(min(s.minPrefill, s.minDecode), 1)
	lnLo, lnHi := math.Log(formats.MinCalibrationScale), math.Log(formats.MaxCalibrationScale)
	x := s.toX(Identity)
	for k := 0; k < 3; k++ {
		if s.fixed[k] {
			continue
		}
		lo, hi := lnLo, lnHi
		if k == 2 {
			olo, ohi := s.overheadRange(s.factors(x))
			lo, hi = olo/s.cScale, ohi/s.cScale
		}
		line := func(v float64) float64 {
			y := slices.Clone(x)
			y[k] = v
			return s.loss(s.factors(y))
		}
		tol := 0.002 // 0.2% of a scale, or of the smallest point
		if v, l := golden(line, lo, hi, tol); l < s.loss(s.factors(x)) {
			x[k] = v
		}
		if s.err != nil {
			return Factors{}, s.err
		}
	}
	// The simplex runs over the free factors only: a held one stays at 0 (a scale of 1).
	var free []int
	for k := range 3 {
		if !s.fixed[k] {
			free = append(free, k)
		}
	}
	expand := func(y []float64) []float64 {
		out := make([]float64, 3)
		for i, k := range free {
			out[k] = y[i]
		}
		return out
	}
	reduce := func(x []float64) []float64 {
		out := make([]float64, len(free))
		for i, k := range free {
			out[i] = x[k]
		}
		return out
	}
	step := make([]float64, len(free))
	for i := range step {
		step[i] = 0.1
	}
	best := nelderMead(func(y []float64) float64 { return s.loss(s.factors(expand(y))) }, func(y []float64) []float64 { return reduce(s.toX(s.factors(expand(y)))) },
		reduce(x), step, func() bool { return s.err != nil || s.replays >= maxReplays })
	if s.err != nil {
		return Factors{}, s.err
	}
	return s.factors(expand(best)), nil
}

// toX is f in the search's space.
func (s *search) toX(f Factors) []float64 {
	return []float64{math.Log(f.PrefillScale), math.Log(f.DecodeScale), f.StepOverheadUs / s.cScale}
}

// factors is the search's point x as factors, moved into the box: the scales into
// [MinCalibrationScale, MaxCalibrationScale], the overhead into its range at those scales.
func (s *search) factors(x []float64) Factors {
	clamp := func(v float64) float64 {
		return min(max(math.Exp(v), formats.MinCalibrationScale), formats.MaxCalibrationScale)
	}
	return s.feasible(Factors{PrefillScale: clamp(x[0]), DecodeScale: clamp(x[1]), StepOverheadUs: x[2] * s.cScale})
}

// golden is the golden-section search of f's minimum on [lo, hi] to within tol, returning the
// best point it evaluated (the ends included: a minimum at a bound is found there) and its
// value.
func golden(f func(float64) float64, lo, hi, tol float64) (float64, float64) {
	bestX, bestY := lo, f(lo)
	if !(hi > lo) {
		return bestX, bestY
	}
	try := func(x float64) float64 {
		y := f(x)
		if y < bestY {
			bestX, bestY = x, y
		}
		return y
	}
	try(hi)
	const r = 0.6180339887498949 // 1/φ
	a, b := lo, hi
	c, d := b-r*(b-a), a+r*(b-a)
	fc, fd := try(c), try(d)
	for b-a > tol {
		if fc <= fd {
			b, d, fd = d, c, fc
			c = b - r*(b-a)
			fc = try(c)
		} else {
			a, c, fc = c, d, fd
			d = a + r*(b-a)
			fd = try(d)
		}
	}
	return bestX, bestY
}

// nelderMead minimises f from x0 with a first simplex of x0 and x0 plus step[i] along each
// axis (the standard coefficients: reflection 1, expansion 2, contraction ½, shrink ½), every
// new point moved into the box by project, until the simplex's values agree to 1e-12 and its
// points to 1e-4, or stop reports true; it returns the best point seen.
func nelderMead(f func([]float64) float64, project func([]float64) []float64, x0, step []float64, stop func() bool) []float64 {
	n := len(x0)
	type vertex struct {
		x []float64
		y float64
	}
	simplex := make([]vertex, n+1)
	simplex[0] = vertex{slices.Clone(x0), f(x0)}
	for i := 0; i < n; i++ {
		x := slices.Clone(x0)
		x[i] += step[i]
		x = project(x)
		if slices.Equal(x, x0) { // at the box's edge: step inwards
			x[i] -= 2 * step[i]
			x = project(x)
		}
		simplex[i+1] = vertex{x, f(x)}
	}
	point := func(c []float64, t float64, from []float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = c[i] + t*(from[i]-c[i])
		}
		return project(out)
	}
	for iter := 0; iter < 10000 && !stop(); iter++ {
		slices.SortStableFunc(simplex, func(a, b vertex) int {
			switch {
			case a.y < b.y:
				return -1
			case a.y > b.y:
				return 1
			}
			return 0
		})
		spread, size := simplex[n].y-simplex[0].y, 0.0
		for _, v := range simplex[1:] {
			for i := range v.x {
				size = max(size, math.Abs(v.x[i]-simplex[0].x[i]))
			}
		}
		if spread <= 1e-12 && size <= 1e-4 || size <= 1e-7 {
			break
		}
		centroid := make([]float64, n)
		for _, v := range simplex[:n] {
			for i := range centroid {
				centroid[i] += v.x[i] / float64(n)
			}
		}
		worst := simplex[n]
		xr := point(centroid, -1, worst.x)
		yr := f(xr)
		switch {
		case yr < simplex[0].y:
			xe := point(centroid, -2, worst.x)
			if ye := f(xe); ye < yr {
				simplex[n] = vertex{xe, ye}
			} else {
				simplex[n] = vertex{xr, yr}
			}
		case yr < simplex[n-1].y:
			simplex[n] = vertex{xr, yr}
		default:
			// Contract towards the better of the worst point and its reflection.
			xc := point(centroid, 0.5, worst.x)
			if yr < worst.y {
				xc = point(centroid, 0.5, xr)
			}
			if yc := f(xc); yc < min(yr, worst.y) {
				simplex[n] = vertex{xc, yc}
				continue
			}
			for k := 1; k <= n; k++ {
				xs := point(simplex[0].x, 0.5, simplex[k].x)
				simplex[k] = vertex{xs, f(xs)}
			}
		}
	}
	best := simplex[0]
	for _, v := range simplex[1:] {
		if v.y < best.y {
			best = v
		}
	}
	return best.x
}

// Which factors the runs constrain: the prefill scale multiplies the prefill curve, which the
// TTFTs see at the fitted prompts' lengths; where those span a part of the curve that barely
// changes (short prompts: every step near the curve's base), a scale and the per-step
// overhead move the TTFTs alike and the fit could push either to a bound. The decode scale is
// seen only through requests of two or more output tokens (a TPOT).
const (
	// minPrefillSpan is how much, at least, the prefill curve must change between the 10th
	// and 90th percentile of the fitted prompts' lengths (as a ratio of its times).
	minPrefillSpan = 1.25
	// minDecodeRequests is the fewest fitted requests with a TPOT.
	minDecodeRequests = minGroup
)

// hold fixes at 1 the scales runs do not constrain, saying why in res.Held.
func (s *search) hold(runs []*Bench, res *Result) {
	var lens []float64
	tpots := 0
	for _, pt := range s.parts {
		for _, r := range pt.reqs[:pt.nFit] {
			lens = append(lens, float64(r.PromptTokens))
			if m, ok := r.TPOT(); ok && m > 0 {
				tpots++
			}
		}
	}
	lo, hi := quantile.Of(lens, 10), quantile.Of(lens, 90)
	tlo, thi := curveAt(s.p.Iteration.Prefill, lo), curveAt(s.p.Iteration.Prefill, hi)
	if tlo > 0 && thi/tlo < minPrefillSpan {
		s.fixed[0] = true
		res.HeldFactors = append(res.HeldFactors, "prefill_scale")
		res.Held = append(res.Held, fmt.Sprintf("prefill scale held at 1: the fitted prompts (10th to 90th percentile %.0f to %.0f tokens) span a part of the prefill curve that changes by %.0f%% (under %.0f%%): the runs cannot tell its scale from the per-step overhead; add runs with longer prompts",
			lo, hi, 100*(thi/tlo-1), 100*(minPrefillSpan-1)))
	}
	if tpots < minDecodeRequests {
		s.fixed[1] = true
		res.HeldFactors = append(res.HeldFactors, "decode_scale")
		res.Held = append(res.Held, fmt.Sprintf("decode scale held at 1: %d fitted requests have two or more output tokens (under %d): the runs do not constrain decode; add runs with longer outputs", tpots, minDecodeRequests))
	}
}

// curveAt is the piecewise-linear curve pts at tokens (flat past its ends).
func curveAt(pts []formats.PWLPoint, tokens float64) float64 {
	if len(pts) == 0 {
		return 0
	}
	if tokens <= float64(pts[0].Tokens) {
		return pts[0].Us
	}
	for i := 1; i < len(pts); i++ {
		if tokens <= float64(pts[i].Tokens) {
			a, b := pts[i-1], pts[i]
			return a.Us + (b.Us-a.Us)*(tokens-float64(a.Tokens))/float64(b.Tokens-a.Tokens)
		}
	}
	return pts[len(pts)-1].Us
}
