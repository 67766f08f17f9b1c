package calibrate

import (
	"fmt"
	"math"
	"slices"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
)

// The search over the three factors is deterministic and needs no gradient (a replay's times
// are integer µs: the loss is piecewise constant at the finest scale). It runs in a
// normalised space x = (ln prefill scale, ln decode scale, overhead / the smallest point of
// the profile's curves) in two stages:
//
//  1. one golden-section search per factor over its whole range, the others held: it finds
//     the basin from the profile as it is, however far off that is;
//  2. Levenberg and Marquardt's damped least squares from there (refine.go), on the
//     objective's residuals: the factors move together, along the valleys where one trades
//     off against another, which a search along one factor at a time crosses only in tiny
//     steps.
//
// A factor the runs do not constrain is held (hold): it stays at its identity value in both
// stages.
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
	// The refinement runs over the free factors only: a held one stays at 0 (a scale of 1).
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
	best := s.refine(reduce(x), func(y []float64) Factors { return s.factors(expand(y)) }, func(y []float64) []float64 { return reduce(s.toX(s.factors(expand(y)))) }, maxReplays)
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
		return
	}
	var steps []float64
	for _, pt := range s.parts {
		steps = append(steps, decodeSteps(s.p.Iteration, pt.reqs, pt.nFit)...)
	}
	if dlo, dhi := quantile.Of(steps, 10), quantile.Of(steps, 90); dlo > 0 && dhi/dlo < minDecodeSpan {
		s.fixed[2] = true
		res.overheadHeld = fmt.Sprintf("step overhead held at 0: the fitted requests decoded beside loads whose decode steps span %.1f to %.1f ms (10th to 90th percentile, %.0f%% apart, under %.0f%%): a decode scale and a per-step overhead move every TPOT alike there, and the runs cannot tell them apart; the decode scale absorbs any overhead; add a run at a load that fills the batch",
			dlo/1e3, dhi/1e3, 100*(dhi/dlo-1), 100*(minDecodeSpan-1))
	}
}

// minDecodeSpan is how much, at least, the decode step time the fitted requests saw (their
// estimated batch's point of the decode curve plus the context term) must change between
// the 10th and 90th percentile of the requests for the per-step overhead to be fitted: the
// decode scale multiplies the step's curve point, the overhead adds to it alike at every
// load, and only steps of different sizes tell the two apart.
const minDecodeSpan = 1.5

// decodeSteps estimates, for each of reqs' first nFit requests with a TPOT, the decode step
// time it saw from the measured run alone: the mean number of reqs in flight (sent, not yet
// done) over its decode and their mean context (prompt plus half the output, as the
// requests are on average halfway through theirs), at the profile's uncorrected curve.
func decodeSteps(it *formats.LLMIteration, reqs []Request, nFit int) []float64 {
	var out []float64
	for i := range nFit {
		r := &reqs[i]
		if m, ok := r.TPOT(); !ok || !(m > 0) {
			continue
		}
		from, to := r.Arrival+r.TTFT, r.Arrival+r.E2E
		var batch, ctx float64
		for j := range reqs {
			o := min(to, reqs[j].Arrival+reqs[j].E2E) - max(from, reqs[j].Arrival)
			if o > 0 {
				batch += o
				ctx += o * (float64(reqs[j].PromptTokens) + float64(reqs[j].OutputTokens)/2)
			}
		}
		batch /= to - from
		ctx /= to - from
		out = append(out, curveAt(it.Decode, max(batch, 1))+it.DecodeUsPerContextToken*ctx)
	}
	return out
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
