package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/export"
)

// TestExportQLM: `plan export` takes the bundled QLM plan to every target through the
// registry (qlmsys): a vLLM model per instance and the coordinator for Triton, an
// InferenceService per instance for KServe, serve-config.yaml for Ray. A plan whose instance
// asks for more GPUs than the cluster has left exits 2 naming the plan file, the field and
// the value, with nothing written.
func TestExportQLM(t *testing.T) {
	plan := filepath.Join("..", "..", "..", "..", "testdata", "export", "qlm", "plan.json")
	dir := t.TempDir()
	want := map[string][]string{
		export.Triton: {"qlm-demo-llm-0/config.pbtxt", "qlm-demo-llm-0/1/model.json", "qlm-demo-llm-1/1/model.json", "qlm-demo-coordinator/config.pbtxt"},
		export.KServe: {"inferenceservice-qlm-demo-llm-0.yaml", "inferenceservice-qlm-demo-llm-1.yaml"},
		export.Ray:    {export.RayConfigFile},
	}
	for _, target := range export.Targets {
		out := filepath.Join(dir, target)
		code, stdout, stderr := runCLI(t, "export", plan, "--to", target, "-o", out)
		if code != 0 || !strings.Contains(stdout, "(qlm)") {
			t.Fatalf("%s: exit %d: %s%s", target, code, stdout, stderr)
		}
		for _, f := range want[target] {
			if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(f))); err != nil {
				t.Errorf("%s: %v", target, err)
			}
		}
	}

	raw, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	p["qlm"].(map[string]any)["instances"].([]any)[1].(map[string]any)["gpu_count"] = 2
	raw, _ = json.Marshal(p)
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "export", bad, "--to", "kserve", "-o", filepath.Join(dir, "bad"))
	if code != ExitUsage || !strings.Contains(stderr, "bad.json") || !strings.Contains(stderr, "qlm.instances[1].gpu_count: 2 A100 GPU(s)") {
		t.Errorf("bad gpu_count: exit %d, stderr %q: want 2 naming the file, field and value", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); err == nil {
		t.Error("a refused export wrote its directory")
	}
}

// TestExportGateway: `plan export --to inference-gateway` writes the QLM plan's Deployments,
// pools, endpoint picker configurations and objectives; `--check` validates them and reads
// them back into the plan's instances; an objective edited to name no pool fails the check
// (exit 2, naming file and field); a DNN system has no exporter for the target (exit 2).
func TestExportGateway(t *testing.T) {
	testdata := filepath.Join("..", "..", "..", "..", "testdata")
	dir := t.TempDir()
	out := filepath.Join(dir, "gw")
	code, stdout, stderr := runCLI(t, "export", filepath.Join(testdata, "export", "qlm", "plan.json"), "--to", "inference-gateway", "-o", out)
	if code != 0 || !strings.Contains(stdout, "to inference-gateway: 10 file(s)") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "export", "--check", out)
	if code != 0 || !strings.Contains(stdout, "read back: inference-gateway: QLM plan, 2 vLLM instance(s) (2 prefill-decode) in 2 pool(s), 3 objective(s)") {
		t.Fatalf("--check: exit %d: %s%s", code, stdout, stderr)
	}
	obj := filepath.Join(out, "inferenceobjective-qlm-demo-mistral-chat.yaml")
	b, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obj, []byte(strings.Replace(string(b), "name: qlm-demo-mistral-7b", "name: qlm-demo-gone", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "export", "--check", out)
	if code != ExitUsage || !strings.Contains(stderr, `inferenceobjective-qlm-demo-mistral-chat.yaml: spec.poolRef.name: "qlm-demo-gone": no InferencePool`) {
		t.Errorf("edited objective: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "export", filepath.Join(testdata, "golden", "demo-ppipe.json"), "--to", "inference-gateway", "-o", filepath.Join(dir, "ppipe"))
	if code != ExitUsage || !strings.Contains(stderr, "has no exporter for target inference-gateway") {
		t.Errorf("ppipe plan: exit %d, stderr %q", code, stderr)
	}
}
