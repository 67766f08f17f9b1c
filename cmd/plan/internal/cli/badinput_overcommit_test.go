package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanAsksMoreGPUsThanCluster: a PPipe plan whose pools ask for more GPUs of a type than
// its cluster holds is bad input wherever it is read — check, simulate and serve alike exit 2
// naming the GPU type, both counts and the pools on it, before anything runs.
func TestPlanAsksMoreGPUsThanCluster(t *testing.T) {
	repoRoot(t)
	b, err := os.ReadFile("testdata/golden/demo-ppipe.json")
	if err != nil {
		t.Fatal(err)
	}
	// The golden plan's pools use 4 L4 GPUs (2 halves, 3 whole); its cluster now has 3.
	s := strings.ReplaceAll(string(b), `"type": "L4",
    "count": 4,`, `"type": "L4",
    "count": 3,`)
	s = strings.ReplaceAll(s, `"type": "L4",
        "count": 4,`, `"type": "L4",
        "count": 3,`)
	if s == string(b) {
		t.Fatal("the golden plan's L4 count was not found: update this test's edit")
	}
	plan := filepath.Join(t.TempDir(), "over.json")
	if err := os.WriteFile(plan, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{`"L4": pipelines use 4 GPUs of this type`, "has 3", "the pools on it: models[0].pipelines[0].partitions[0] (count 2, vgpu 2)",
		"models[0].pipelines[1].partitions[1] (count 3, vgpu 1)"}
	for _, args := range [][]string{
		{"check", plan},
		{"simulate", plan, "--load", "0.5", "--duration", "1s"},
		{"serve", plan, "--addr", "127.0.0.1:0"},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, stderr := rootRun(t, args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want 2: %s", code, stderr)
			}
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
