package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportGPULabels: a GPU type with no known node label and no override is bad input
// (exit 2 naming the type and the cluster field to set, nothing written); the cluster
// file's node_labels fix it, and known types get the labels GPU feature discovery writes.
func TestExportGPULabels(t *testing.T) {
	td := filepath.Join("..", "..", "..", "..", "testdata", "export", "gpulabels")
	plan := filepath.Join(td, "plan-x9.json")
	dir := t.TempDir()
	for _, target := range []string{"kserve", "ray"} {
		t.Run("unknown/"+target, func(t *testing.T) {
			out := filepath.Join(dir, "bad-"+target)
			code, _, stderr := runCLI(t, "export", plan, "--to", target, "-o", out)
			if code != ExitUsage {
				t.Fatalf("exit %d, want 2: %s", code, stderr)
			}
			for _, w := range []string{`GPU type "X9"`, "gpus[].node_labels", "--cluster"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written", out)
			}
		})
	}
	cases := []struct {
		target, file string
		want         []string
	}{
		{"kserve", "inferenceservice-x9-m0-p0-s0.yaml", []string{"nvidia.com/gpu.product: NVIDIA-X9-24GB"}},
		{"kserve", "inferenceservice-x9-m1-p0-s1.yaml", []string{"nvidia.com/gpu.product: Tesla-P4"}},
		{"ray", "serve-config.yaml", []string{"accelerator_type: X9", "accelerator_type: P4"}},
	}
	for _, c := range cases {
		t.Run("override/"+c.target+"/"+c.file, func(t *testing.T) {
			out := filepath.Join(dir, c.target)
			code, _, stderr := runCLI(t, "export", plan, "--to", c.target, "-o", out, "--force", "--cluster", filepath.Join(td, "cluster-x9.yaml"))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			b, err := os.ReadFile(filepath.Join(out, c.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s lacks %q:\n%s", c.file, w, b)
				}
			}
		})
	}
}
