package workload

import (
	"math"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// TestTraceExtent: a trace's recorded span and requests, the requests recorded before a cut,
// and the arrivals a window brings at a rate (a count series on its own shape).
func TestTraceExtent(t *testing.T) {
	counts := ArrivalSpec{Kind: "counts", Name: "c", Trace: &formats.Trace{Counts: &formats.RateSeries{
		Interval: formats.Duration(time.Second), Counts: []int64{100, 300, 0, 200}}}} // 600 over 4 s: 150/s
	reqs := ArrivalSpec{Kind: "replay", Name: "r", Trace: &formats.Trace{Requests: []formats.TraceRequest{{TimeUs: 1e6}, {TimeUs: 2e6}, {TimeUs: 3e6}, {TimeUs: 5e6}}}}
	poisson := ArrivalSpec{Kind: "poisson", Name: "poisson"}
	tests := []struct {
		name     string
		s        ArrivalSpec
		span     dataplane.Time
		n        int64
		ok       bool
		cut      dataplane.Time
		before   float64
		rps      float64
		window   dataplane.Time
		expected float64
	}{
		{"counts", counts, 4e6, 600, true, 1500e3, 250, 150, 4e6, 600},
		{"counts, a burst window", counts, 4e6, 600, true, 2e6, 400, 150, 2e6, 400},
		{"counts, repeated and doubled", counts, 4e6, 600, true, 8e6, 600, 300, 10e6, 2 * (1200 + 400)},
		{"requests", reqs, 4e6, 4, true, 2e6, 2, 2, 10e6, 20},
		{"a generator", poisson, 0, 0, false, 1e6, 0, 100, 3e6, 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			span, n, ok := tc.s.Extent()
			if span != tc.span || n != tc.n || ok != tc.ok {
				t.Errorf("extent %d µs, %d requests, %v; want %d, %d, %v", span, n, ok, tc.span, tc.n, tc.ok)
			}
			if got := tc.s.RecordedBefore(tc.cut); math.Abs(got-tc.before) > 1e-9 {
				t.Errorf("recorded before %d µs: %g, want %g", tc.cut, got, tc.before)
			}
			if got := tc.s.Expected(tc.rps, tc.window); math.Abs(got-tc.expected) > 1e-6 {
				t.Errorf("expected at %g/s over %d µs: %g, want %g", tc.rps, tc.window, got, tc.expected)
			}
		})
	}
}
