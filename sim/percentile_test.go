package sim

import (
	"testing"

	"github.com/plan-dev/plan/dataplane/workload"
)

// TestAtPercentile: the latency at an SLO's percentile counts dropped requests as later than
// any (∞ = -1 once more than 1−p of them are dropped), and Met is attainment ≥ p.
func TestAtPercentile(t *testing.T) {
	lat := []int64{50, 10, 40, 20, 30, 60, 70, 80, 90, 100}
	cases := []struct {
		name string
		p    float64
		lat  []int64
		n    int64
		att  float64
		want workload.PercentileLatency
	}{
		{"all answered", 0.95, lat, 10, 1, workload.PercentileLatency{Percentile: 0.95, LatencyUs: 100, Met: true}},
		{"p50", 0.5, lat, 10, 1, workload.PercentileLatency{Percentile: 0.5, LatencyUs: 50, Met: true}},
		{"drops count as late", 0.5, lat[:5], 10, 0.5, workload.PercentileLatency{Percentile: 0.5, LatencyUs: 50, Met: true}},
		{"past the drops", 0.95, lat[:5], 10, 0.5, workload.PercentileLatency{Percentile: 0.95, LatencyUs: -1}},
		{"late answers", 0.95, lat, 10, 0.9, workload.PercentileLatency{Percentile: 0.95, LatencyUs: 100}},
		{"no requests", 0.95, nil, 0, 1, workload.PercentileLatency{Percentile: 0.95, Met: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := workload.AtPercentile(c.p, c.lat, c.n, c.att); *got != c.want {
				t.Errorf("AtPercentile = %+v, want %+v", *got, c.want)
			}
		})
	}
}
