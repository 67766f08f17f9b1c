// Package gammarand draws Gamma-distributed numbers: the gaps of bursty arrival processes
// (dataplane/workload), `plan load`'s datasets and the regenerated send schedule of a
// `vllm bench serve` result (profiler/llm/calibrate) share one sampler, so one seed gives the
// same draws in each.
package gammarand

import (
	"math"
	"math/rand/v2"
)

// Sample draws Gamma(shape, 1) by Marsaglia and Tsang's method ("A simple method for
// generating gamma variables", ACM TOMS 2000); shape < 1 by their boost
// Gamma(a) = Gamma(a+1)·U^(1/a).
func Sample(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return Sample(r, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
