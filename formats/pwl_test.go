package formats

import (
	"math"
	"testing"
)

// TestPWL: the reading LLMIteration documents, at whole tokens (PWLAt) and fractional ones
// (PWLEval, which PWLAt is at whole tokens); a repeated last token (which validation
// refuses) reads flat rather than dividing by zero.
func TestPWL(t *testing.T) {
	two := []PWLPoint{{Tokens: 10, Us: 100}, {Tokens: 20, Us: 300}}
	falling := []PWLPoint{{Tokens: 10, Us: 300}, {Tokens: 20, Us: 100}}
	cases := []struct {
		name string
		p    []PWLPoint
		x    float64
		want float64
	}{
		{"empty", nil, 5, 0},
		{"flat below the first point", two, 1, 100},
		{"at a point", two, 20, 300},
		{"linear between", two, 15, 200},
		{"last segment extended", two, 30, 500},
		{"one point is flat", two[:1], 50, 100},
		{"a falling last segment is flat above", falling, 40, 100},
		{"a falling segment is used as measured", falling, 15, 200},
		{"fractional between", two, 12.5, 150},
		{"fractional above", two, 20.5, 310},
		{"fractional below", two, 0.5, 100},
		{"falling, fractional above: flat", falling, 25.5, 100},
		{"repeated last token", []PWLPoint{{Tokens: 10, Us: 100}, {Tokens: 10, Us: 200}}, 30, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := PWLEval(c.p, c.x); got != c.want {
				t.Fatalf("PWLEval(%v, %g) = %g, want %g", c.p, c.x, got, c.want)
			}
			if c.x == math.Trunc(c.x) {
				if got := PWLAt(c.p, int(c.x)); got != c.want {
					t.Fatalf("PWLAt(%v, %g) = %g, want %g", c.p, c.x, got, c.want)
				}
			}
		})
	}
}
