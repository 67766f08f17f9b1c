package planner

import (
	"errors"
	"math"
	"testing"
)

func TestHighestRate(t *testing.T) {
	errProbe := errors.New("probe failed")
	cases := []struct {
		name         string
		start, limit float64 // limit: meets holds at rates ≤ limit
		failAt       float64 // a probe at this rate fails (0: none)
		want         float64 // the bracket's bottom within 3% below limit; -1: an error
	}{
		{"doubling up", 1, 100, 0, 100},
		{"halving down", 8, 0.3, 0, 0.3},
		{"capped above", 1, 1e9, 0, 1 << 14},
		{"not even a trickle", 1, 1e-6, 0, 0},
		{"an error stops it", 1, 100, 4, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := HighestRate(c.start, 1.0/1024, 1<<14, 1.03, func(r float64) (bool, error) {
				if r == c.failAt {
					return false, errProbe
				}
				return r <= c.limit, nil
			})
			switch {
			case c.want < 0:
				if !errors.Is(err, errProbe) {
					t.Fatalf("err %v, want %v", err, errProbe)
				}
			case err != nil:
				t.Fatal(err)
			case c.want == 0 || c.want == 1<<14:
				if got != c.want {
					t.Fatalf("got %g, want %g", got, c.want)
				}
			case got > c.want || got < c.want/1.03 || math.IsNaN(got):
				t.Fatalf("got %g, want within 3%% below %g", got, c.want)
			}
		})
	}
}
