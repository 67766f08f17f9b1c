package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/systems"
	"github.com/plan-dev/plan/internal/systems/toysys"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// A sixth system is new packages plus one registry line: the toy system
// (internal/systems/toysys) goes through validate, solve, simulate, serve, check and export with
// no shared package knowing it; this test's registry line is the only place it is named.
func TestToySystem(t *testing.T) {
	reg := systems.New(append(systems.InTree(), toysys.System())...)
	run := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := RunWith(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Options{Systems: reg})
		return code, out.String(), errb.String()
	}
	dir := t.TempDir()
	workload := filepath.Join(dir, "workload.yaml")
	os.WriteFile(workload, []byte("apiVersion: plan/v1\nkind: Workload\nmetadata: {name: jobs}\n"+
		"toy_jobs: {name: jobs, slo: 50ms, rate_rps: 400, latency_us: 5000}\n"), 0o644)
	plan := filepath.Join(dir, "plan.json")

	mustRun := func(want string, args ...string) string {
		t.Helper()
		code, out, errOut := run(args...)
		if code != ExitOK || !strings.Contains(out+errOut, want) {
			t.Fatalf("plan %s: exit %d, want 0 and %q:\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	mustRun("ok", "validate", workload)
	// 400 jobs/s × 5 ms at ≤ 70% utilisation: 3 workers on the demo cluster's first GPU type.
	mustRun("toy plan (strategy mdc)", "solve", "--workload", workload, "-o", plan, "--deterministic", "--toy-max-util", "0.7")
	mustRun("ok", "validate", plan)
	mustRun(`"toy": {`, "validate", "--schema", "plan")
	mustRun(`"toy_jobs": {`, "validate", "--schema", "workload")
	var doc map[string]any
	raw, _ := os.ReadFile(plan)
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if sec, _ := doc["toy"].(map[string]any); sec == nil || sec["workers"] != 3.0 {
		t.Fatalf("plan's toy section: %v", doc["toy"])
	}

	out := mustRun("", "simulate", plan, "--load", "0.5", "--duration", "2s", "--seed", "1", "-O", "json", "-q")
	var rep sim.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("simulate report: %v\n%s", err, out)
	}
	if tot := rep.Points[0].Total; tot.Requests == 0 || tot.Completed == 0 || rep.Policy != toysys.Policy {
		t.Errorf("simulate: %+v", rep)
	}

	mustRun("toy plan, 3 workers", "check", plan, "--golden", plan, "--resolve")
	exp := filepath.Join(dir, "export")
	mustRun("", "export", plan, "--to", "triton", "-o", exp)
	if cfg, err := os.ReadFile(filepath.Join(exp, "jobs", "config.pbtxt")); err != nil || !strings.Contains(string(cfg), "count: 1 kind: KIND_GPU gpus: [0,1,2]") {
		t.Errorf("export: %q, %v", cfg, err)
	}

	// serve, in process: one KServe v2 request answered by the toy's policy.
	ready := make(chan string)
	var srv *serve.Server
	serveHook = func(s *serve.Server, a string) { srv = s; ready <- a }
	defer func() { serveHook = nil }()
	done := make(chan int, 1)
	go func() {
		code := RunWith([]string{"serve", plan, "--addr", "127.0.0.1:0"}, Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, Options{Systems: reg})
		done <- code
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d", code)
	}
	resp, err := http.Post("http://"+addr+"/v2/models/jobs/infer", "application/json",
		strings.NewReader(`{"inputs":[{"name":"input","shape":[1,1],"datatype":"FP32","data":[1]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("serve: %d %s", resp.StatusCode, body)
	}
	// plan load reads the served plan (GET /v1/plan); PUT /v1/plan reloads it.
	if code, out, errOut := run("load", "http://"+addr, "--load", "0.5", "--max-requests", "5", "-q"); code != ExitOK {
		t.Errorf("load: exit %d: %s%s", code, out, errOut)
	}
	req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/v1/plan", bytes.NewReader(raw))
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("PUT /v1/plan: %d %s", resp.StatusCode, body)
		}
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != ExitOK {
		t.Errorf("serve exited %d", code)
	}
}
