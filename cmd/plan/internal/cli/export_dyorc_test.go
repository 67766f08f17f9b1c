package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/export"
)

// TestExportDyOrc: `plan export` takes the bundled small DyOrc plan to every target through
// the registry (dyorcsys), and refuses --model (a DyOrc plan has no partition to cut) with
// exit 2 and nothing written.
func TestExportDyOrc(t *testing.T) {
	plan := filepath.Join("..", "..", "..", "..", "testdata", "export", "dyorc", "plan.json")
	dir := t.TempDir()
	for _, target := range export.Targets {
		out := filepath.Join(dir, target)
		code, stdout, stderr := runCLI(t, "export", plan, "--to", target, "-o", out)
		if code != 0 || !strings.Contains(stdout, "(dyorc)") {
			t.Fatalf("%s: exit %d: %s%s", target, code, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kserve", "inferencegraph-dyorc-small-image.yaml")); err != nil {
		t.Error(err)
	}
	model := filepath.Join("..", "..", "..", "..", "testdata", "cascade", "onnx", "mlp-s.onnx")
	code, _, stderr := runCLI(t, "export", plan, "--to", "triton", "-o", filepath.Join(dir, "m"), "--model", model)
	if code != ExitUsage || !strings.Contains(stderr, "no partition to cut") {
		t.Errorf("--model: exit %d, stderr %q: want 2", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "m")); err == nil {
		t.Error("--model: a refused export wrote its directory")
	}
}
