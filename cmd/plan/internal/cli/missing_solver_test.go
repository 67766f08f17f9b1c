package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingSolverIsSetUpError: a solve or a re-solve without a usable solver is a set-up
// error, exit 2 with the fix in the message, never exit 1 (the regression code a CI job
// reads as "the plan got worse"). An engine that is not built in stands for
// the missing highs.wasm: both are solver.ErrBackendUnavailable, and a loaded wasm stays
// cached for the process, so unsetting it cannot take the solver away in-process.
func TestMissingSolverIsSetUpError(t *testing.T) {
	repoRoot(t)
	out := filepath.Join(t.TempDir(), "plan.json")
	cases := []struct {
		name string
		args []string
	}{
		{"solve", []string{"solve", "--deterministic", "-o", out}},
		{"check --resolve", []string{"check", filepath.Join("testdata", "golden", "demo-ppipe.json"), "--resolve"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PLAN_SOLVER_ENGINE", "none-built-in")
			code, _, stderr := rootRun(t, c.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (a set-up error); stderr:\n%s", code, stderr)
			}
			for _, w := range []string{"HiGHS backend unavailable", "make install", "PLAN_HIGHS_WASM"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written by a run without a solver", out)
			}
		})
	}
}
