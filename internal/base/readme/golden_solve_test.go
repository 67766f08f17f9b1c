package readme

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/base/goldencases"
)

// goldenSolve returns the golden case that a documented command line solves, and the file
// the line writes: a `plan solve` (or `bin/plan solve`) of flags alone, no shell syntax,
// whose flags are a golden case's (goldencases.Of). The command tests solve every golden case
// and compare the plan byte for byte with its golden file (cli's TestSolveGolden), so the
// documentation tests need not solve it again: the QLM cost solves take 5-11 s each.
func goldenSolve(line string) (goldencases.Case, string, bool) {
	if strings.ContainsAny(line, "|&;<>$`\"'(){}\\*?~") {
		return goldencases.Case{}, "", false
	}
	f := strings.Fields(line)
	if len(f) < 2 || (f[0] != "plan" && f[0] != "bin/plan") || f[1] != "solve" {
		return goldencases.Case{}, "", false
	}
	c, ok := goldencases.Of(f[2:])
	if !ok {
		return goldencases.Case{}, "", false
	}
	out := "plan.json" // solve's default --out
	for i := 2; i+1 < len(f); i++ {
		if f[i] == "-o" || f[i] == "--out" {
			out = f[i+1]
		}
	}
	return c, out, true
}

// goldenFile is case c's golden plan, relative to the repository root (the tests' scratch
// copies link testdata/ in).
func goldenFile(c goldencases.Case) string { return filepath.Join("testdata", "golden", c.File) }

func TestGoldenSolve(t *testing.T) {
	const qlm = "--profile testdata/qlm/profile.json --cluster testdata/qlm/cluster.yaml --workload testdata/qlm/workload.yaml"
	tests := []struct {
		line, golden, out string // golden "" when the line is no golden solve
	}{
		{"bin/plan solve " + qlm + " -o qlm.json", "qlm-3classes.json", "qlm.json"},
		{"plan solve " + qlm, "qlm-3classes.json", "plan.json"},
		{"plan solve --objective cost --spot 0.5 --profile testdata/cost/llm-profile.json --cluster testdata/cost/cluster-llm-spot.yaml --workload testdata/cost/workload-llm-busy.yaml -o spot.json", "qlm-cost-spot.json", "spot.json"},
		{"plan solve " + qlm + " -o qlm.json | jq .", "", ""},
		{"plan solve " + qlm + " -o $OUT", "", ""},
		{"plan simulate " + qlm, "", ""},
		{"plan solve --slo 200ms", "", ""},
	}
	for _, tc := range tests {
		c, out, ok := goldenSolve(tc.line)
		if c.File != tc.golden || out != tc.out || ok != (tc.golden != "") {
			t.Errorf("goldenSolve(%q) = %q, %q, %v; want %q, %q", tc.line, c.File, out, ok, tc.golden, tc.out)
		}
	}
}
