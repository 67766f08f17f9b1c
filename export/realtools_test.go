package export_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// buildTags returns the -tags this test binary was built with ("" when none).
func buildTags() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" {
				return s.Value
			}
		}
	}
	return ""
}

// TestExportsRealTools runs scripts/check-exports.sh: every export of every golden plan
// through the targets' own tools (kubeconform -strict with KServe's CRDs, protoc's text-format
// parser). It skips where a tool is missing (the script exits 3), unless
// PLAN_REQUIRE_ALL=1 (CI, which installs them) makes that a failure.
func TestExportsRealTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plan and exports every golden plan")
	}
	root, err := filepath.Abs(filepath.Join("..", "scripts", "check-exports.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", root)
	cmd.Env = append(os.Environ(), "TAGS="+buildTags())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
			t.Fatalf("PLAN_REQUIRE_ALL=1 and a tool is missing:\n%s", out)
		}
		t.Skipf("tools missing:\n%s", out)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}
