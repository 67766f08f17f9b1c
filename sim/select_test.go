package sim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/internal/base/quantile"
)

// TestSelectedReportMatchesSorted checks the report's latency figures from selected order
// statistics (latencyRanks, quantile.Select) against those from the sorted latencies, which
// the report computed before: summary and SLO percentile, bit for bit, on seeded samples
// with repeats, with dropped requests (n above the answered ones) and with sums past 2^53
// (SummarizeSelected's sorted fallback).
func TestSelectedReportMatchesSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	for _, tc := range []struct {
		name     string
		n        int
		requests int64
		p        float64
		gen      func() dataplane.Time
	}{
		{"empty", 0, 0, 0.95, nil},
		{"empty with drops", 0, 10, 0.95, nil},
		{"one", 1, 1, 0.95, func() dataplane.Time { return 7 }},
		{"repeats", 20000, 20000, 0.95, func() dataplane.Time { return dataplane.Time(rng.IntN(40)) * 1000 }},
		{"spread", 20001, 21000, 0.99, func() dataplane.Time { return dataplane.Time(rng.ExpFloat64() * 3e4) }},
		{"rank past the answered", 100, 1000, 0.5, func() dataplane.Time { return dataplane.Time(rng.IntN(1e6)) }},
		{"no SLO percentile", 5000, 5000, 0, func() dataplane.Time { return dataplane.Time(rng.IntN(1e6)) }},
		{"sum past 2^53", 300, 300, 0.9, func() dataplane.Time { return 1<<50 + dataplane.Time(rng.IntN(1e9)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lat := make([]dataplane.Time, tc.n)
			for i := range lat {
				lat[i] = tc.gen()
			}
			sorted := slices.Clone(lat)
			slices.Sort(sorted)
			fs := make([]float64, len(sorted))
			ints := make([]int64, len(sorted))
			for i, v := range sorted {
				fs[i], ints[i] = float64(v), int64(v)
			}
			want := workload.Summarize(fs)
			wantAt := workload.AtPercentile(tc.p, ints, tc.requests, 0.5)

			quantile.Select(lat, latencyRanks(nil, len(lat), tc.requests, tc.p))
			if got := workload.SummarizeSelected(lat); got != want {
				t.Errorf("summary %+v, sorted %+v", got, want)
			}
			if got := workload.AtPercentileSelected(tc.p, lat, tc.requests, 0.5); *got != *wantAt {
				t.Errorf("SLO percentile %+v, sorted %+v", *got, *wantAt)
			}
		})
	}
}
