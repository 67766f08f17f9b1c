package formats

// PWLAt evaluates a piecewise-linear step-time curve (LLMIteration's Prefill and Decode) at
// x tokens, in µs: PWLEval at a whole number of tokens.
func PWLAt(p []PWLPoint, x int) float64 { return PWLEval(p, float64(x)) }

// PWLEval evaluates a piecewise-linear step-time curve at x tokens (x may be fractional: a
// mean batch or prompt), in µs: flat below the first point, linear between points (measured
// points are used as measured, even where noise makes the curve fall, LLM engine digest
// §2.4), and above the last point extending the last segment at its slope clamped at ≥ 0
// (flat with a single point), so an extrapolated step is never shorter than the last
// measured one. An empty curve is 0. The format defines the reading, so the engine that
// replays a profile, the profiler that summarises it and the planners that size fleets
// from it agree without importing each other.
func PWLEval(p []PWLPoint, x float64) float64 {
	if len(p) == 0 {
		return 0
	}
	if x <= float64(p[0].Tokens) {
		return p[0].Us
	}
	for i := 1; i < len(p); i++ {
		if x <= float64(p[i].Tokens) {
			a, b := p[i-1], p[i]
			return a.Us + (b.Us-a.Us)*(x-float64(a.Tokens))/float64(b.Tokens-a.Tokens)
		}
	}
	n := len(p)
	a, b := p[max(n-2, 0)], p[n-1]
	if n == 1 || b.Tokens <= a.Tokens {
		// One point, or (in a curve validation would refuse) no segment to extend.
		return b.Us
	}
	return b.Us + max(b.Us-a.Us, 0)*(x-float64(b.Tokens))/float64(b.Tokens-a.Tokens)
}
