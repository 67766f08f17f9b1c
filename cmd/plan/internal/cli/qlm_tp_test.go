package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQLMTensorParallel: tensor-parallel LLM instances end to end. `plan solve` on testdata/qlm/tp plans
// Llama-3-70B (profiled at gpu_count 2) as one instance on two GPUs of one server; `plan
// simulate` runs the plan; `plan export` writes tensor_parallel_size 2, two GPUs and the
// profile's hf_model. A tensor-parallel size no server holds, and a profile without
// hf_model at export, exit 2 naming the file, the field and the value.
func TestQLMTensorParallel(t *testing.T) {
	dir := t.TempDir()
	tp := filepath.Join("..", "..", "..", "..", "testdata", "qlm", "tp")
	in := []string{"--profile", filepath.Join(tp, "profile.json"), "--cluster", filepath.Join(tp, "cluster.yaml"), "--workload", filepath.Join(tp, "workload.yaml")}
	plan := filepath.Join(dir, "plan.json")
	code, out, stderr := runCLI(t, append([]string{"solve", "-o", plan}, in...)...)
	if code != 0 || !strings.Contains(out, "2×A100 (GPUs 0,1)") {
		t.Fatalf("solve: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "simulate", plan, "--load", "0.5", "--duration", "20s"); code != 0 || !strings.Contains(out, "attainment") {
		t.Errorf("simulate: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = runCLI(t, "export", plan, "--to", "kserve", "-o", filepath.Join(dir, "kserve"))
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	y, err := os.ReadFile(filepath.Join(dir, "kserve", "inferenceservice-qlm-tp-llm-0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--tensor-parallel-size=2", `nvidia.com/gpu: "2"`, "--model_id=neuralmagic/Meta-Llama-3-70B-Instruct-FP8", `plan.dev/qlm.gpus: 0,1`} {
		if !strings.Contains(string(y), want) {
			t.Errorf("llm-0's InferenceService lacks %q:\n%s", want, y)
		}
	}

	prof, err := os.ReadFile(filepath.Join(tp, "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name, old, new string
		export         bool
		want           string
	}{
		{"tp4.json", `"gpu_count": 2`, `"gpu_count": 4`, false, "tp4.json: llms[0].gpu_count: 4: tensor parallelism over 4 GPUs, but no server of the cluster has more than 2 A100 GPUs"},
		{"noid.json", `"hf_model": "neuralmagic/Meta-Llama-3-70B-Instruct-FP8",`, ``, true, "provenance.embedded.profiles[0].llms[0].hf_model: missing"},
	}
	for _, tc := range bad {
		f := filepath.Join(dir, tc.name)
		if err := os.WriteFile(f, []byte(strings.Replace(string(prof), tc.old, tc.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"solve", "-o", filepath.Join(dir, "p-"+tc.name)}, in...)
		args[4] = f
		code, _, stderr := runCLI(t, args...)
		if tc.export {
			if code != 0 {
				t.Fatalf("%s: solve: exit %d: %s", tc.name, code, stderr)
			}
			code, _, stderr = runCLI(t, "export", filepath.Join(dir, "p-"+tc.name), "--to", "ray", "-o", filepath.Join(dir, "ray-"+tc.name))
		}
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q: want 2 and %q", tc.name, code, stderr, tc.want)
		}
	}
}
