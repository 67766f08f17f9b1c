package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/export"
)

// TestExport exports a golden plan to every target, then checks the bad-input exits.
func TestExport(t *testing.T) {
	plan := filepath.Join("..", "..", "..", "..", "testdata", "golden", "ppipe-2models.json")
	dir := t.TempDir()
	for _, target := range export.Targets {
		out := filepath.Join(dir, target)
		code, stdout, stderr := runCLI(t, "export", plan, "--to", target, "-o", out, "--name", "ppipe-2models")
		if code != 0 || !strings.Contains(stdout, "exported") {
			t.Fatalf("%s: exit %d: %s%s", target, code, stdout, stderr)
		}
		if ents, _ := os.ReadDir(out); len(ents) == 0 {
			t.Errorf("%s: nothing written", target)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "triton", "ppipe-2models-m0-p0-s0", "config.pbtxt")); err != nil {
		t.Error(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not empty", []string{"export", plan, "--to", "ray", "-o", filepath.Join(dir, "ray")}, "not empty: pass --force"},
		{"bad target", []string{"export", plan, "--to", "bentoml", "-o", filepath.Join(dir, "x")}, `--to: "bentoml"`},
		{"no dir", []string{"export", plan, "--to", "ray"}, "-o: an output directory is required"},
		{"missing plan", []string{"export", filepath.Join(dir, "none.json"), "--to", "ray", "-o", filepath.Join(dir, "y")}, "none.json"},
		{"bad model", []string{"export", plan, "--to", "triton", "-o", filepath.Join(dir, "z"), "--model", filepath.Join(dir, "none.onnx")}, "--model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q: want 2 and %q", code, stderr, tc.want)
			}
		})
	}
	if code, _, stderr := runCLI(t, "export", plan, "--to", "ray", "-o", filepath.Join(dir, "ray"), "--force"); code != 0 {
		t.Errorf("--force: exit %d: %s", code, stderr)
	}
	code, out, stderr := runCLI(t, "export", plan, "--to", "kserve", "-o", filepath.Join(dir, "k2"), "-O", "json")
	if code != 0 || !strings.Contains(out, `"system": "ppipe"`) || !strings.Contains(out, "inferencegraph-") {
		t.Errorf("--output json: exit %d: %s%s", code, out, stderr)
	}
}
