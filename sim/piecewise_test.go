package sim

import (
	"math"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestPiecewise: a piecewise source yields non-decreasing times from 0 to the end of its span,
// none in an interval of rate 0, about rate × length arrivals in the others, then Never.
func TestPiecewise(t *testing.T) {
	const s = dataplane.Time(1e6)
	rps := []float64{1000, 0, 2000, 500}
	cases := []struct {
		name     string
		from, to dataplane.Time
		want     float64 // expected arrivals
		zeroFrom dataplane.Time
		zeroTo   dataplane.Time // an arrival-free span, relative to from
	}{
		{name: "all", from: 0, to: 4 * s, want: 3500, zeroFrom: s, zeroTo: 2 * s},
		{name: "from the gap", from: s + s/2, to: 3 * s, want: 2000, zeroFrom: 0, zeroTo: s / 2},
		{name: "past the end", from: 3 * s, to: 9 * s, want: 500, zeroFrom: s, zeroTo: 6 * s},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPiecewise(rps, s, tc.from, tc.to, 7)
			var n float64
			last := dataplane.Time(-1)
			for at := p.Next(); at != dataplane.Never; at = p.Next() {
				if at < last || at < 0 || at >= tc.to-tc.from {
					t.Fatalf("arrival %d after %d, outside [0, %d)", at, last, tc.to-tc.from)
				}
				if at >= tc.zeroFrom && at < tc.zeroTo {
					t.Fatalf("arrival at %d in a span of rate 0", at)
				}
				last = at
				n++
			}
			if math.Abs(n-tc.want) > 5*math.Sqrt(tc.want) {
				t.Errorf("%v arrivals, want %v ± 5σ", n, tc.want)
			}
		})
	}
}

// TestPiecewiseCuts: a trace cut anywhere yields the same arrivals as the whole (each
// interval's draws depend on the seed and the interval alone), so a schedule's segments and
// the peak plan, cut elsewhere, replay the same requests.
func TestPiecewiseCuts(t *testing.T) {
	const s = dataplane.Time(1e6)
	rps := []float64{300, 0, 800, 200}
	all := func(from, to dataplane.Time) []dataplane.Time {
		var ts []dataplane.Time
		p := NewPiecewise(rps, s, from, to, 11)
		for at := p.Next(); at != dataplane.Never; at = p.Next() {
			ts = append(ts, from+at)
		}
		return ts
	}
	whole := all(0, 4*s)
	cases := []struct {
		name string
		cuts []dataplane.Time
	}{
		{name: "at an interval's edge", cuts: []dataplane.Time{2 * s}},
		{name: "inside intervals", cuts: []dataplane.Time{s / 3, 2*s + 123457, 3*s + 1}},
		{name: "in the silent interval", cuts: []dataplane.Time{s + s/2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []dataplane.Time
			edges := append(append([]dataplane.Time{0}, tc.cuts...), 4*s)
			for i := 0; i+1 < len(edges); i++ {
				got = append(got, all(edges[i], edges[i+1])...)
			}
			if len(got) != len(whole) {
				t.Fatalf("%d arrivals cut at %v, %d whole", len(got), tc.cuts, len(whole))
			}
			for i := range got {
				if got[i] != whole[i] {
					t.Fatalf("arrival %d at %d cut at %v, at %d whole", i, got[i], tc.cuts, whole[i])
				}
			}
		})
	}
}
