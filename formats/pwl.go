package formats

// PWLAt evaluates a piecewise-linear step-time curve (LLMIteration's Prefill and Decode) at
// x tokens, in µs: flat below the first point, linear between points (measured points are
// used as measured, even where noise makes the curve fall, LLM engine digest §2.4), and above
// the last point extending the last segment at its slope clamped at ≥ 0 (flat with a single
// point), so an extrapolated step is never shorter than the last measured one. An empty curve
// is 0. The format defines the reading, so the engine that replays a profile and the profiler
// that summarises it agree without either importing the other.
func PWLAt(p []PWLPoint, x int) float64 {
	if len(p) == 0 {
		return 0
	}
	if x <= p[0].Tokens {
		return p[0].Us
	}
	for i := 1; i < len(p); i++ {
		if x <= p[i].Tokens {
			a, b := p[i-1], p[i]
			return a.Us + (b.Us-a.Us)*float64(x-a.Tokens)/float64(b.Tokens-a.Tokens)
		}
	}
	n := len(p)
	if n == 1 {
		return p[0].Us
	}
	a, b := p[n-2], p[n-1]
	return b.Us + max(b.Us-a.Us, 0)*float64(x-b.Tokens)/float64(b.Tokens-a.Tokens)
}
