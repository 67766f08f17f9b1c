//go:build cgo

package worker

import (
	"math"
	"testing"
)

func TestCertainty(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v     []float32
		cert  float64
		label int
	}{
		{"probabilities", []float32{0.1, 0.7, 0.2}, 0.7, 1},
		{"tie: the first", []float32{0.5, 0.5}, 0.5, 0},
		{"logits", []float32{0, float32(math.Log(3))}, 0.75, 1},
		{"negative logits", []float32{-1, -1, -1, -1}, 0.25, 0},
		{"empty", nil, 0, -1},
		{"NaN", []float32{float32(math.NaN()), float32(math.NaN())}, 0, -1},
	} {
		c, l := certainty(tc.v)
		if math.Abs(c-tc.cert) > 1e-6 || l != tc.label {
			t.Errorf("%s: certainty(%v) = %g, %d; want %g, %d", tc.name, tc.v, c, l, tc.cert, tc.label)
		}
	}
}
