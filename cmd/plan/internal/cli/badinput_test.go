package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input to solve, simulate, export, serve and load, end to end through Run: every case
// exits with its code, says what it must (file, field, value, rule), writes no output file
// and leaves an existing output file as it was. Fixtures live in testdata/badinput.

const oldPlan = "OLD CONTENT, MUST SURVIVE\n"

type badInputCase struct {
	name string
	args []string
	env  map[string]string
	code int
	// want are substrings stderr must hold; once are substrings it must hold exactly once.
	want []string
	once []string
	// out is the output file (relative to a temp dir) that must not appear; keep is one
	// that exists before the run with oldPlan and must keep it.
	out  string
	keep string
	// solver marks cases that may need HiGHS (skipped without it).
	solver bool
}

func runBadInput(t *testing.T, cases []badInputCase) {
	t.Helper()
	repoRoot(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "$TMP", dir)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			keep := ""
			if tc.keep != "" {
				keep = filepath.Join(dir, tc.keep)
				if err := os.WriteFile(keep, []byte(oldPlan), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-o", keep)
			}
			code, stdout, stderr := rootRun(t, args...)
			if tc.solver {
				skipWithoutHiGHS(t, stderr)
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if tc.code != ExitOK && stdout != "" && tc.code == ExitUsage {
				t.Errorf("bad input printed on stdout:\n%s", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tc.once {
				if n := strings.Count(stderr, w); n != 1 {
					t.Errorf("stderr holds %q %d times, want once:\n%s", w, n, stderr)
				}
			}
			if tc.out != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.out)); err == nil {
					t.Errorf("wrote %s on bad input", tc.out)
				}
			}
			if keep != "" {
				if b, err := os.ReadFile(keep); err != nil || string(b) != oldPlan {
					t.Errorf("existing output changed: %q, %v", b, err)
				}
			}
			// No temp files left behind next to the output.
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Errorf("left a temp file %s", e.Name())
				}
			}
		})
	}
}

func TestBadInputValidate(t *testing.T) {
	good := "testdata/formats/good/"
	runBadInput(t, []badInputCase{
		{name: "missing file", args: []string{"validate", "$TMP/nope.yaml"}, code: ExitUsage, want: []string{"nope.yaml: cannot read: no such file"}},
		{name: "directory", args: []string{"validate", "testdata"}, code: ExitUsage, want: []string{"testdata: cannot read: is a directory"}},
		{name: "wrong kind for solve", args: []string{"solve", "--cluster", good + "profile.json"}, code: ExitUsage, want: []string{`profile.json: kind: "Profile": must be Cluster`}, out: "plan.json"},
	})
}

func TestBadInputSolve(t *testing.T) {
	pard := []string{"solve", "-q", "--profile", "testdata/pard/profile.json", "--cluster", "testdata/pard/cluster.json"}
	pp := []string{"solve", "-q", "--profile", "testdata/ppipe/profile.json", "--cluster"}
	cases := []badInputCase{
		{name: "infeasible slo", args: []string{"solve", "-q", "--slo", "1ms"}, keep: "plan.json", solver: true, code: ExitUsage,
			want: []string{"model demo: slo 1ms: no pipeline meets it; the smallest feasible SLO is "}},
		{name: "profile lacks cluster gpu", args: append(pp, "testdata/ppipe/cluster-t4.yaml"), keep: "plan.json", code: ExitUsage,
			want: []string{"profile.json: model m0: no latency for GPU type T4"}},
		{name: "zero gpus", args: append(pp, "testdata/ppipe/cluster-empty.yaml"), keep: "plan.json", code: ExitUsage,
			want: []string{"cluster-empty.yaml: gpus: every count is 0"}},
		{name: "unknown model", args: append(pp, "testdata/ppipe/cluster.yaml", "--workload", "testdata/ppipe/workload-unknown.yaml"), keep: "plan.json", code: ExitUsage,
			want: []string{`workload-unknown.yaml: models[0].name: "resnet-does-not-exist": unknown model`}},
		{name: "weight out of range", args: append(pp, "testdata/ppipe/cluster.yaml", "--workload", "testdata/badinput/weight-huge.yaml"), keep: "plan.json", code: ExitUsage,
			want: []string{"weight-huge.yaml: models[1].weight: 1e+308: must be in [1e-06, 1e+06] (weights are relative)"}},
		{name: "zero latencies, no default slo", args: []string{"solve", "-q", "--profile", "testdata/badinput/profile-zero-latency.json", "--cluster", "testdata/ppipe/cluster.yaml"}, keep: "plan.json", code: ExitUsage,
			want: []string{"profile-zero-latency.json: model m0: the default SLO, 5 × its batch-1 latency (0 µs), is not a usable duration"}},
		{name: "model in two profiles", args: append(pp, "testdata/ppipe/cluster.yaml", "--profile", "testdata/ppipe/profile.json"), keep: "plan.json", code: ExitUsage,
			want: []string{`profile.json (--profile #2): models[0].name: "m0": model appears in more than one profile`}},
		{name: "missing profile file", args: []string{"solve", "--profile", "$TMP/none.json"}, keep: "plan.json", code: ExitUsage,
			want: []string{"none.json: cannot read: no such file"}},

		// -o that cannot be written: exit 2 before any work, naming the flag and path.
		{name: "out in missing dir", args: []string{"solve", "-q", "-o", "$TMP/no/such/dir/plan.json"}, code: ExitUsage,
			want: []string{`--out: "`, "no/such/dir: no such directory"}},
		{name: "out is a directory", args: []string{"solve", "-q", "-o", "$TMP"}, code: ExitUsage,
			want: []string{`--out: "`, "is a directory"}},

		// Explicit values that the planner would silently replace by its defaults.
		{name: "max partitions 0", args: []string{"solve", "-q", "--max-partitions", "0"}, keep: "plan.json", code: ExitUsage,
			want: []string{"--max-partitions: 0: must be in 1..6"}},
		{name: "gap 0", args: []string{"solve", "-q", "--gap", "0"}, keep: "plan.json", code: ExitUsage,
			want: []string{"--gap: 0: must be in (0, 1)"}},
		{name: "slo 0", args: []string{"solve", "-q", "--slo", "0"}, keep: "plan.json", code: ExitUsage,
			want: []string{"--slo: 0s: must be > 0"}},
		{name: "slo negative, an LLM workload", args: []string{"solve", "-q", "--slo", "-1s", "--profile", "testdata/qlm/profile.json", "--cluster", "testdata/qlm/cluster.yaml",
			"--workload", "testdata/qlm/workload.yaml"}, keep: "plan.json", code: ExitUsage, want: []string{"--slo: -1s: must be > 0"}},
		{name: "slo 0 from env", args: []string{"solve", "-q"}, env: map[string]string{"PLAN_SLO": "0s"}, keep: "plan.json", code: ExitUsage,
			want: []string{"--slo: 0s: must be > 0"}},

		// Pipeline workloads: the file is named.
		{name: "pipeline cycle", args: append(pard, "--workload", "testdata/badinput/pipeline-cycle.yaml"), keep: "plan.json", code: ExitUsage,
			want: []string{"pipeline-cycle.yaml: pipelines[0].modules: modules form a cycle: detect -> faces -> detect"}},
		{name: "pipeline module without profile", args: append(pard, "--workload", "testdata/badinput/pipeline-unknown-model.yaml"), keep: "plan.json", code: ExitUsage,
			want: []string{"pipeline-unknown-model.yaml: pipelines[0].modules[1].model: no-such-model: no profile has this model (module faces)"}},
		{name: "pipeline slo below batch-1 sum", args: append(pard, "--workload", "testdata/badinput/pipeline-slo-too-low.yaml"), keep: "plan.json", code: ExitUsage,
			want: []string{"pipeline-slo-too-low.yaml: pipelines[0].slo: 5ms: below the sum of batch-1 latencies 36.5 ms along detect -> faces"}},
		{name: "pipeline slo below the provisioning rule", args: append(pard, "--workload", "testdata/badinput/pipeline-slo-rule.yaml"), keep: "plan.json", code: ExitUsage, solver: true,
			want: []string{"pipeline-slo-rule.yaml: pipelines[0].slo: 50ms: ", "the smallest feasible SLO is 91.3ms"}, once: []string{"cannot hold"}},
		{name: "pipeline rate beyond the cluster", args: append(pard, "--workload", "testdata/badinput/pipeline-rate-too-high.yaml"), keep: "plan.json", code: ExitUsage, solver: true,
			want: []string{"pipeline-rate-too-high.yaml: pipelines[0].rate_rps: 1e+06: ", "64"}},
		{name: "models and pipelines", args: append(pard, "--workload", "testdata/badinput/models-and-pipelines.yaml"), keep: "plan.json", code: ExitUsage,
			want: []string{"models-and-pipelines.yaml: sections models, pipelines: no single planner handles them together"}},
		{name: "pipeline out in missing dir", args: append(pard, "--workload", "testdata/pard/workload.json", "-o", "$TMP/no/plan.json"), code: ExitUsage,
			want: []string{`--out: "`, "no such directory"}},
	}
	runBadInput(t, cases)
}

func TestBadInputProfile(t *testing.T) {
	roof := []string{"profile", "-q", "--zoo", "resnet50", "--backend", "roofline", "--gpu", "L4", "--batch", "1"}
	runBadInput(t, []badInputCase{
		{name: "not onnx", args: []string{"profile", "testdata/badinput/not-a-model.onnx", "--backend", "roofline"}, keep: "p.json", code: ExitUsage,
			want: []string{"not-a-model.onnx: not an ONNX model"}, once: []string{"not-a-model.onnx"}},
		{name: "missing onnx", args: []string{"profile", "$TMP/missing.onnx", "--backend", "roofline"}, keep: "p.json", code: ExitUsage,
			want: []string{"missing.onnx: cannot read: no such file"}, once: []string{"missing.onnx"}},
		{name: "directory as onnx", args: []string{"profile", "testdata", "--backend", "roofline"}, keep: "p.json", code: ExitUsage,
			want: []string{"testdata: cannot read: is a directory"}},
		{name: "unresolvable dynamic dim", args: []string{"profile", "testdata/badinput/dynamic-hw.onnx", "--backend", "roofline"}, keep: "p.json", code: ExitUsage,
			want: []string{`dynamic-hw.onnx: input "input": dimension 2 ("H") is dynamic`, "pass --input-shape"}},
		{name: "trt profile missing", args: []string{"profile", "--backend", "trt", "--gpu", "L4", "--batch", "1", "--trt-profile", "$TMP/none.json"}, keep: "p.json", code: ExitUsage,
			want: []string{"none.json: cannot read: no such file"}},
		{name: "trt profile not json", args: []string{"profile", "--backend", "trt", "--gpu", "L4", "--batch", "1", "--trt-profile", "testdata/badinput/not-a-model.onnx"}, keep: "p.json", code: ExitUsage,
			want: []string{"testdata/badinput/not-a-model.onnx: trtexec profile: "}},
		{name: "unknown zoo", args: []string{"profile", "--zoo", "nosuch"}, keep: "p.json", code: ExitUsage, want: []string{`--zoo: "nosuch": unknown model`}},
		{name: "no ort library", args: []string{"profile", "testdata/onnx/torch_style.onnx"}, env: map[string]string{"PLAN_ORT_LIB": "/nonexistent"}, keep: "p.json", code: ExitUsage,
			want: []string{"PLAN_ORT_LIB=/nonexistent: no such file", "make assets"}},
		{name: "out in missing dir", args: append(roof, "-o", "$TMP/no/such/dir/p.json"), code: ExitUsage,
			want: []string{`--out: "`, "no/such/dir: no such directory"}},
		{name: "out is a directory", args: append(roof, "-o", "$TMP"), code: ExitUsage,
			want: []string{`--out: "`, "is a directory"}},
	})
}

func TestBadInputCheckServeLoad(t *testing.T) {
	runBadInput(t, []badInputCase{
		{name: "check invalid plan", args: []string{"check", "testdata/ppipe/broken/count.json"}, code: ExitUsage,
			want: []string{"testdata/ppipe/broken/count.json: ppipe.models[0].pipelines[0].partitions[0].count: 0: must be >= 1"}},
		{name: "check broken plan", args: []string{"check", "testdata/ppipe/broken/latency.json"}, code: ExitFailure, want: []string{"testdata/ppipe/broken/latency.json: 1 check(s) failed"}},
		{name: "check wrong kind", args: []string{"check", "testdata/ppipe/cluster.yaml"}, code: ExitUsage, want: []string{`cluster.yaml: kind: "Cluster": must be Plan`}},
		{name: "serve invalid plan", args: []string{"serve", "testdata/ppipe/broken/count.json", "--addr", "127.0.0.1:0"}, code: ExitUsage,
			want: []string{"count.json: ppipe.models[0].pipelines[0].partitions[0].count: 0: must be >= 1"}},
		{name: "serve endpoints nowhere", args: []string{"serve", "testdata/serve/demo-plan.json", "--addr", "127.0.0.1:0", "--workers", "remote", "--endpoints", "testdata/badinput/endpoints-nowhere.yaml"}, code: ExitUsage,
			want: []string{"endpoints-nowhere.yaml: ", "http://127.0.0.1:1", "does not answer"}},
		{name: "serve addr garbage", args: []string{"serve", "testdata/serve/demo-plan.json", "--addr", "garbage"}, code: ExitUsage, want: []string{"--addr garbage: "}},
		{name: "load not http", args: []string{"load", "ftp://8.8.8.8:80"}, code: ExitUsage, want: []string{`URL: "ftp://8.8.8.8:80": must be an http:// or https:// URL`}},
		{name: "load user info", args: []string{"load", "http://me:pw@localhost.evil.com/"}, code: ExitUsage, want: []string{"no user info in the URL"}},
		{name: "load nobody listening", args: []string{"load", "http://127.0.0.1:1", "--duration", "100ms"}, code: ExitUsage,
			want: []string{"GET http://127.0.0.1:1/v1/plan: dial tcp 127.0.0.1:1: "}, once: []string{"127.0.0.1:1/v1/plan"}},
		{name: "load rate NaN", args: []string{"load", "http://127.0.0.1:1", "--rate", "NaN"}, code: ExitUsage, want: []string{"--rate: NaN: must be a finite number"}},
		{name: "load load Inf", args: []string{"load", "http://127.0.0.1:1", "--load", "Inf"}, code: ExitUsage, want: []string{"--load: +Inf: must be a finite number"}},
		{name: "load negative slo", args: []string{"load", "http://127.0.0.1:1", "--slo", "-1s"}, code: ExitUsage, want: []string{"--slo: -1s: must be > 0"}},
		{name: "load negative timeout", args: []string{"load", "http://127.0.0.1:1", "--timeout", "-1s"}, code: ExitUsage, want: []string{"--timeout: -1s: must be > 0"}},
		{name: "serve jitter NaN", args: []string{"serve", "testdata/serve/demo-plan.json", "--addr", "127.0.0.1:0", "--jitter", "NaN"}, code: ExitUsage, want: []string{"--jitter: NaN: must be a finite number"}},
	})
}

// TestBadInputLoadUnknownModel runs plan load against a server whose plan lacks the model.
func TestBadInputLoadUnknownModel(t *testing.T) {
	plan, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "serve", "demo-plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/plan" {
			http.NotFound(w, r)
			return
		}
		w.Write(plan)
	}))
	defer srv.Close()
	code, stdout, stderr := rootRun(t, "load", srv.URL, "--model", "nosuch", "--duration", "100ms")
	if code != ExitUsage || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if want := `--model: "nosuch": the served plan has no such model (it serves demo)`; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if strings.HasPrefix(stderr, "\n") {
		t.Errorf("stderr starts with an empty line: %q", stderr)
	}
}
