// Package pwlcurve evaluates a piecewise-linear step-time curve (formats.LLMIteration's
// prefill and decode curves) the one way the simulator and the profiler both read it, so a
// profile's summary fields and a replay of the same curve agree.
package pwlcurve

import "github.com/plan-dev/plan/formats"

// At evaluates the curve at x tokens, in µs: flat below the first point, linear between
// points (measured points are used as measured, even where noise makes the curve fall, LLM
// engine digest §2.4), and above the last point extending the last segment at its slope
// clamped at ≥ 0 (flat with a single point), so an extrapolated step is never shorter than
// the last measured one. An empty curve is 0.
func At(p []formats.PWLPoint, x int) float64 {
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
