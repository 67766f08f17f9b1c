package cli

import (
	"strings"
	"testing"
)

// TestWarnFewForPercentile: a cascade run with fewer than 20/(1−p) measured requests (400 for
// its p95) is warned about; a run with enough is not.
func TestWarnFewForPercentile(t *testing.T) {
	plan := goldenPlan("cascade-sentiment.json")
	const warn = `warning: application "sentiment" has 124 measured requests at load 0.01: too few for its p95 SLO (at least 400, 20 beyond the percentile)`
	cases := []struct {
		name string
		load string
		want bool
	}{
		{"too few", "0.01", true},
		{"enough", "1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runCLI(t, "simulate", plan, "--load", c.load, "--duration", "1s", "-q")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if got := strings.Contains(errs, warn); got != c.want {
				t.Errorf("warned = %v, want %v:\n%s", got, c.want, errs)
			}
			if !c.want && strings.Contains(errs, "p95 SLO") {
				t.Errorf("warned:\n%s", errs)
			}
		})
	}
}
