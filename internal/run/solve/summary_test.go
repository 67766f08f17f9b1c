package solve

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestSummaryLineNoBound: a solver plan that proved no bound (time limit hit before the LP
// relaxation finished) says "heuristic, no bound" and prints no bound or gap number; one
// with a bound above its gap tolerance says "best found, gap G%", whatever its status
// claims; "optimal" only with a gap within the tolerance.
func TestSummaryLineNoBound(t *testing.T) {
	base := formats.Provenance{Solver: "highs", SolverVersion: "HiGHS x", Strategy: "ppipe", Objective: 56.7, Nodes: 3, SolveMs: 1500}
	noBound := base
	noBound.Status = "time-limit"
	withBound := base
	withBound.Status, withBound.Bound, withBound.Gap = "time-limit", formats.Proven(60), formats.Proven(0.0582)
	optimal := base
	optimal.Status, optimal.Bound, optimal.Gap = "optimal", formats.Proven(56.9), formats.Proven(0.00352)
	claimed := withBound
	claimed.Status, claimed.Options = "optimal", []byte(`{"gap":0.01}`)
	unproven := base
	unproven.Status = "optimal"
	for _, tc := range []struct {
		name      string
		pv        formats.Provenance
		want, not []string
	}{
		{"no bound", noBound, []string{"ppipe plan (strategy ppipe): heuristic, objective 56.7, no bound, 3 nodes", "(HiGHS x)"}, []string{"Inf", "NaN", "gap", "bound 0", "optimal"}},
		{"bound", withBound, []string{"best found, gap 5.820%, objective 56.7, bound 60, 3 nodes"}, []string{"no bound", "optimal"}},
		{"optimal within the gap", optimal, []string{"optimal, objective 56.7, bound 56.9, gap 0.352%, 3 nodes"}, []string{"best found"}},
		{"optimal status, gap above the tolerance", claimed, []string{"best found, gap 5.820%"}, []string{"optimal"}},
		{"optimal status, no bound", unproven, []string{"heuristic, objective 56.7, no bound"}, []string{"optimal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summaryLine("ppipe", tc.pv)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary %q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("summary %q has %q", got, n)
				}
			}
		})
	}
}
