package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestExportCheck: `plan export --check DIR` passes a fresh export, and a file broken
// after the export, or a coordinator whose model.py the user has not written yet, is
// exit 2 naming the file, the field and the value.
func TestExportCheck(t *testing.T) {
	golden := filepath.Join("..", "..", "..", "..", "testdata", "golden")
	dir := t.TempDir()
	export := func(plan, target string) string {
		t.Helper()
		out := filepath.Join(dir, plan+"-"+target)
		if code, _, stderr := runCLI(t, "export", filepath.Join(golden, plan+".json"), "--to", target, "-o", out); code != 0 {
			t.Fatalf("export %s %s: exit %d: %s", plan, target, code, stderr)
		}
		return out
	}
	kserve := export("demo-ppipe", "kserve")
	if code, out, stderr := runCLI(t, "export", "--check", kserve); code != 0 || !strings.Contains(out, "ok: ") {
		t.Fatalf("a fresh export: exit %d: %s%s", code, out, stderr)
	}
	isvc := filepath.Join(kserve, "inferenceservice-ppipe-demo-p0-s0.yaml")
	b, err := os.ReadFile(isvc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(isvc, []byte(strings.Replace(string(b), "NVIDIA-L4", "L4", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	triton := export("cascade-sentiment", "triton")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"broken selector", []string{"export", "--check", kserve},
			[]string{"inferenceservice-ppipe-demo-p0-s0.yaml", "spec.predictor.nodeSelector.nvidia.com/gpu.product", `"L4"`}},
		{"no model.py", []string{"export", "--check", triton},
			[]string{"cascade-small/config.pbtxt", `backend: "python"`, "cascade-small/1/model.py is missing"}},
		{"empty dir", []string{"export", "--check", t.TempDir()}, []string{"no files"}},
		{"with --to", []string{"export", "--check", kserve, "--to", "ray"}, []string{"takes no --to"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want 2: %s", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	// The user supplies the coordinator: the repository passes.
	if err := os.WriteFile(filepath.Join(triton, "cascade-small", "1", "model.py"), []byte("class TritonPythonModel: pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI(t, "export", "--check", triton); code != 0 {
		t.Errorf("with model.py: exit %d: %s%s", code, out, stderr)
	}
}

// TestExportEveryGolden: every export of every golden plan (legacy ones included) meets the
// run-time rules; KServe and Ray exports are deployable as written (--check passes), and a
// Triton export is once its coordinators' model.py files are there.
func TestExportEveryGolden(t *testing.T) {
	plans, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "testdata", "golden", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	legacy, _ := filepath.Glob(filepath.Join("..", "..", "..", "..", "testdata", "golden", "legacy", "*.json"))
	plans = append(plans, legacy...)
	if len(plans) < 10 {
		t.Fatalf("%d golden plans: want every system's", len(plans))
	}
	dir := t.TempDir()
	for i, p := range plans {
		for _, target := range []string{"triton", "kserve", "ray"} {
			out := filepath.Join(dir, strconv.Itoa(i)+"-"+target)
			if code, _, stderr := runCLI(t, "export", p, "--to", target, "-o", out, "-q"); code != 0 {
				t.Errorf("%s --to %s: exit %d: %s", p, target, code, stderr)
				continue
			}
			if target == "triton" {
				if err := supplyCoordinators(out); err != nil {
					t.Fatal(err)
				}
			}
			if code, _, stderr := runCLI(t, "export", "--check", out, "-q"); code != 0 {
				t.Errorf("%s --to %s: --check: exit %d: %s", p, target, code, stderr)
			}
		}
	}
}

// supplyCoordinators writes a model.py for every Python-backend model of a Triton export,
// as its README.md asks the user to.
func supplyCoordinators(repo string) error {
	cfgs, err := filepath.Glob(filepath.Join(repo, "*", "config.pbtxt"))
	if err != nil {
		return err
	}
	for _, c := range cfgs {
		b, err := os.ReadFile(c)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), `backend: "python"`) {
			if err := os.WriteFile(filepath.Join(filepath.Dir(c), "1", "model.py"), []byte("class TritonPythonModel: pass\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestExportCheckRejects: `plan export --check` refuses what Kubernetes or Triton would
// refuse although the schemas pass — a resource quantity Kubernetes does not parse, a
// negative max_batch_size — and a DAG application whose graph was not exported, each exit 2
// naming the file, the field and the value.
func TestExportCheckRejects(t *testing.T) {
	golden := filepath.Join("..", "..", "..", "..", "testdata", "golden")
	dir := t.TempDir()
	export := func(t *testing.T, plan, target string) string {
		t.Helper()
		out := filepath.Join(dir, t.Name())
		if code, _, stderr := runCLI(t, "export", filepath.Join(golden, plan+".json"), "--to", target, "-o", out, "-q"); code != 0 {
			t.Fatalf("export %s %s: exit %d: %s", plan, target, code, stderr)
		}
		return out
	}
	edit := func(t *testing.T, file, from, to string) {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), from) {
			t.Fatalf("%s has no %q", file, from)
		}
		if err := os.WriteFile(file, []byte(strings.Replace(string(b), from, to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		plan   string
		target string
		break_ func(t *testing.T, out string)
		want   []string
	}{
		{"gpu one", "demo-ppipe", "kserve", func(t *testing.T, out string) {
			edit(t, filepath.Join(out, "inferenceservice-ppipe-demo-p0-s0.yaml"), `nvidia.com/gpu: "1"`, `nvidia.com/gpu: "one"`)
		}, []string{"inferenceservice-ppipe-demo-p0-s0.yaml", "spec.predictor.model.resources.limits.nvidia.com/gpu", `"one"`, "not a Kubernetes quantity"}},
		{"gpu fraction", "demo-ppipe", "triton", func(t *testing.T, out string) {
			edit(t, filepath.Join(out, "deploy", "triton-ppipe-demo-p0-s0.yaml"), `nvidia.com/gpu: "1"`, `nvidia.com/gpu: 500m`)
		}, []string{"deploy/triton-ppipe-demo-p0-s0.yaml", "resources.limits.nvidia.com/gpu", `"500m"`, "whole numbers"}},
		{"negative batch", "demo-ppipe", "triton", func(t *testing.T, out string) {
			edit(t, filepath.Join(out, "ppipe-demo-p0-s0", "config.pbtxt"), "max_batch_size: 1\n", "max_batch_size: -4\n")
		}, []string{"ppipe-demo-p0-s0/config.pbtxt", "max_batch_size: -4", "must be >= 0"}},
		{"dag without graph", "pard-4apps", "kserve", func(t *testing.T, out string) {
			if err := os.Remove(filepath.Join(out, "inferencegraph-pard-apps-da.yaml")); err != nil {
				t.Fatal(err)
			}
		}, []string{"inferenceservice-pard-apps-da-", "plan.dev/next", `application "da"`, "no InferenceGraph"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := export(t, c.plan, c.target)
			if code, _, stderr := runCLI(t, "export", "--check", out, "-q"); code != 0 && c.target != "triton" {
				t.Fatalf("a fresh export: exit %d: %s", code, stderr)
			}
			c.break_(t, out)
			code, _, stderr := runCLI(t, "export", "--check", out)
			if code != ExitUsage {
				t.Fatalf("exit %d, want 2: %s", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
