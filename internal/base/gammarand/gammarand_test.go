package gammarand

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMoments: Gamma(k, 1) has mean k and variance k, above and below shape 1.
func TestMoments(t *testing.T) {
	for _, k := range []float64{0.25, 1, 4} {
		r := rand.New(rand.NewPCG(1, 2))
		const n = 200000
		var s, s2 float64
		for range n {
			x := Sample(r, k)
			if x < 0 {
				t.Fatalf("shape %g: negative draw %g", k, x)
			}
			s += x
			s2 += x * x
		}
		mean := s / n
		v := s2/n - mean*mean
		if math.Abs(mean-k) > 0.02*k+0.01 || math.Abs(v-k) > 0.05*k+0.02 {
			t.Errorf("shape %g: mean %.4f variance %.4f, want %g", k, mean, v, k)
		}
	}
}
