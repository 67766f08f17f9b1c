package cli

import (
	"testing"
)

// TestBadInputSLOTraceExportDir: bad input that was taken in silence or refused in a
// library's words, each now exit 2 naming the flag or file and the value up front.
func TestBadInputSLOTraceExportDir(t *testing.T) {
	const qlm = "testdata/qlm/"
	runBadInput(t, []badInputCase{
		// --slo on a QLM placement: the classes keep their own SLOs, so it was ignored.
		{name: "slo on a qlm placement", args: []string{"solve", "-q", "--slo", "1s", "--profile", qlm + "profile.json", "--cluster", qlm + "cluster.yaml",
			"--workload", qlm + "workload.yaml", "-o", "$TMP/plan.json"}, code: ExitUsage,
			want: []string{"--slo: 1s: the qlm planner plans each class for its own slo", "--objective cost"}, out: "plan.json"},
	})
}
