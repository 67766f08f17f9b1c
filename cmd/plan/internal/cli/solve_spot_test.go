package cli

import (
	"strings"
	"testing"
)

// TestSolveSpotFlag: --spot takes a finite share in [0, 1] with --objective cost; anything
// else exits 2 naming the flag and the value, before any solve.
func TestSolveSpotFlag(t *testing.T) {
	repoRoot(t)
	base := []string{"solve", "-q", "-o", t.TempDir() + "/p.json", "--profile", "testdata/cost/llm-profile.json",
		"--cluster", "testdata/cost/cluster-llm-spot.yaml", "--workload", "testdata/cost/workload-llm-busy.yaml"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"above 1", []string{"--objective", "cost", "--spot", "1.5"}, []string{`"1.5"`, "--spot", "[0, 1]"}},
		{"negative", []string{"--objective", "cost", "--spot", "-0.1"}, []string{`"-0.1"`, "--spot", "[0, 1]"}},
		{"NaN", []string{"--objective", "cost", "--spot", "NaN"}, []string{`"NaN"`, "--spot", "finite"}},
		{"Inf", []string{"--objective", "cost", "--spot", "+Inf"}, []string{`"+Inf"`, "--spot", "finite"}},
		{"not a number", []string{"--objective", "cost", "--spot", "half"}, []string{`"half"`, "--spot", "not a number"}},
		{"without cost", []string{"--spot", "0.5"}, []string{"--spot 0.5", "needs --objective cost"}},
		{"with the default objective", []string{"--objective", "default", "--spot", "0"}, []string{"--spot 0", "needs --objective cost"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append(append([]string{}, base...), tc.args...)...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d: %s", code, ExitUsage, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
