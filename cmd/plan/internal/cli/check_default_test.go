package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDefaultsToPlanJSON: plan check with no argument checks ./plan.json, as simulate
// and serve read it; without one it exits 2 saying so. plan solve -o json (a format, not a
// file) exits 2 pointing at --output instead of writing a file named json.
func TestCheckDefaultsToPlanJSON(t *testing.T) {
	repoRoot(t)
	golden, err := filepath.Abs("testdata/golden/demo-ppipe.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if code, _, stderr := rootRun(t, "check"); code != ExitUsage || !strings.Contains(stderr, "no ./plan.json") {
		t.Errorf("no plan.json: exit %d, %q", code, stderr)
	}
	if err := os.WriteFile("plan.json", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := rootRun(t, "check"); code != ExitOK || !strings.Contains(stdout, "ok   plan.json: verify") {
		t.Errorf("check ./plan.json: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, format := range []string{"json", "table"} {
		code, _, stderr := rootRun(t, "solve", "-o", format)
		if code != ExitUsage || !strings.Contains(stderr, "did you mean --output "+format) {
			t.Errorf("solve -o %s: exit %d, %q", format, code, stderr)
		}
		if _, err := os.Stat(format); err == nil {
			t.Errorf("solve -o %s wrote a file named %s", format, format)
		}
	}
}
