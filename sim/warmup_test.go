package sim

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestDefaultWarmup: five times the largest SLO, at least 2 s, at most 20% of the run.
func TestDefaultWarmup(t *testing.T) {
	ms := dataplane.Millisecond
	s := dataplane.Second
	cases := []struct {
		name     string
		slos     []dataplane.Time
		duration dataplane.Time
		want     dataplane.Time
	}{
		{"floor", []dataplane.Time{100 * ms, 400 * ms}, 60 * s, 2 * s},
		{"five SLOs", []dataplane.Time{100 * ms, 1 * s}, 60 * s, 5 * s},
		{"capped by a short run", []dataplane.Time{400 * ms}, 2 * s, 400 * ms},
		{"long SLO capped", []dataplane.Time{600 * s}, 30 * s, 6 * s},
		{"no apps", nil, 10 * s, 2 * s},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dep := &dataplane.Deployment{}
			for _, slo := range c.slos {
				dep.Apps = append(dep.Apps, dataplane.App{SLO: slo})
			}
			if got := DefaultWarmup(dep, c.duration); got != c.want {
				t.Errorf("DefaultWarmup = %d µs, want %d", got, c.want)
			}
		})
	}
}
