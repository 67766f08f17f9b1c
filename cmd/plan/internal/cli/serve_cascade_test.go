package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeONNXCascadeBadModels: a cascade plan served with onnx workers needs MODEL.onnx
// for every model in the --model directory; a missing one is bad input (exit 2) named in
// the error (or, without ONNX Runtime or cgo, the library is).
func TestServeONNXCascadeBadModels(t *testing.T) {
	src := filepath.Join("..", "..", "..", "..", "testdata", "cascade", "onnx")
	dir := t.TempDir()
	for _, n := range []string{"mlp-s.onnx", "mlp-m.onnx"} { // mlp-l is missing
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan := filepath.Join(src, "plan.json")
	code, _, stderr := rootRun(t, "serve", plan, "--workers", "onnx", "--model", dir, "--addr", "127.0.0.1:0")
	if code != ExitUsage || (!strings.Contains(stderr, "mlp-l.onnx") && !strings.Contains(stderr, "ONNX Runtime") && !strings.Contains(stderr, "cgo")) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = rootRun(t, "serve", plan, "--workers", "onnx", "--model", filepath.Join(src, "mlp-s.onnx"), "--addr", "127.0.0.1:0")
	if code != ExitUsage || (!strings.Contains(stderr, "name a directory") && !strings.Contains(stderr, "ONNX Runtime") && !strings.Contains(stderr, "cgo")) {
		t.Errorf("one file for a cascade: exit %d, stderr %q", code, stderr)
	}
}
