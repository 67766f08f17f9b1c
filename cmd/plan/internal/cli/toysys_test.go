package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/registry/systems/toysys"
	"github.com/plan-dev/plan/internal/run/frontier"
	"github.com/plan-dev/plan/planner/schedule"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// A sixth system is new packages plus one registry line: the toy system
// (internal/registry/systems/toysys) goes through validate, solve, simulate, serve, check and export with
// no shared package knowing it; this test's registry line is the only place it is named.
func TestToySystem(t *testing.T) {
	reg := systems.InTreeWith(toysys.New)
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
	// The prediction simulated the workload's rate: the toy's workload section says it
	// (formats.RateTargeter), not the plan's stated rate.
	pp, err := formats.DecodeInto[*formats.Plan](plan, raw, reg.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if pr := pp.Prediction; pr == nil || pr.Basis != formats.PredictionBasisRates || len(pr.Apps) != 1 || pr.Apps[0].Name != "jobs" {
		t.Errorf("prediction: %+v, want one app, jobs, at the workload's rates", pr)
	}

	toyCost(t, reg, dir, workload, run, mustRun)
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

// toyCost runs the toy through what shared code reaches by the extension points alone
// (formats.RateTargeter, formats.GPUCounter): a least-cost plan and its fleet, plan check of
// that fleet, a frontier over its rate and a schedule of windows planned at a trace's rates.
// 400 jobs/s × 5 ms at ≤ 70% utilisation: 3 workers, on P4 (the cheaper type).
func toyCost(t *testing.T, reg *systems.Registry, dir, workload string, run func(...string) (int, string, string), mustRun func(string, ...string) string) {
	t.Helper()
	cluster := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cluster, []byte("apiVersion: plan/v1\nkind: Cluster\nmetadata: {name: priced}\n"+
		"gpus:\n  - {type: L4, count: 4, per_server: 4, price_per_hour: 0.8}\n  - {type: P4, count: 12, per_server: 4, price_per_hour: 0.3}\nnic_gbps: 10\n"), 0o644)
	costPlan := filepath.Join(dir, "cost.json")
	mustRun("fleet: 3×P4", "solve", "--workload", workload, "--cluster", cluster, "--objective", "cost", "-o", costPlan, "--deterministic")
	p, err := formats.ReadInto[*formats.Plan](costPlan, reg.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if f := p.Fleet; f == nil || len(f.GPUsUsed) != 1 || f.GPUsUsed[0].GPU != "P4" || f.GPUsUsed[0].Count != 3 || f.CostPerHour != 0.9 {
		t.Errorf("cost plan's fleet: %+v, want 3 P4 at 0.9/h", f)
	}
	mustRun("fleet: 3×P4", "check", costPlan, "--golden", costPlan, "--resolve")

	// The frontier scales the toy's rate through its section: 0.5×, 1× and 2× the rate need
	// 2, 3 and 6 workers.
	out := mustRun("", "frontier", "--workload", workload, "--cluster", cluster, "--rate", "0.5,1,2", "-O", "json", "-q")
	var rep frontier.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("frontier report: %v\n%s", err, out)
	}
	want := []float64{0.6, 0.9, 1.8}
	if len(rep.Points) != len(want) {
		t.Fatalf("frontier: %d points, want %d:\n%s", len(rep.Points), len(want), out)
	}
	for i, pt := range rep.Points {
		if pt.Cost == nil || math.Abs(*pt.Cost-want[i]) > 1e-9 {
			t.Errorf("frontier point %s: cost %v, want %g", pt.Label, pt.Cost, want[i])
		}
	}

	// A schedule plans each window at the trace's peak of the toy's application (p99 of
	// the window's one-minute rates × 1.1): 110 jobs/s on 1 worker, then 440 on 4.
	trace := filepath.Join(dir, "rates.csv")
	os.WriteFile(trace, []byte("time_s,jobs\n0,100\n60,100\n120,400\n180,400\n"), 0o644)
	sched := filepath.Join(dir, "schedule.json")
	if code, out, errOut := run("solve", "-q", "--workload", workload, "--cluster", cluster, "--objective", "cost", "--trace", trace, "--window", "2m", "-o", sched); code != ExitOK {
		t.Fatalf("solve --trace: exit %d:\n%s%s", code, out, errOut)
	}
	raw, err := os.ReadFile(sched)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.Decode(sched, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Windows) != 2 {
		t.Fatalf("schedule: %d windows, want 2", len(s.Windows))
	}
	for i, w := range []struct {
		peak    float64
		workers int
	}{{110, 1}, {440, 4}} {
		e := s.Windows[i]
		if len(e.PeakRPS) != 1 || math.Abs(e.PeakRPS[0]-w.peak) > 1e-9 || len(e.GPUsUsed) != 1 || e.GPUsUsed[0].Count != w.workers {
			t.Errorf("window %d: peak %v, fleet %+v, want %g jobs/s on %d workers", i, e.PeakRPS, e.GPUsUsed, w.peak, w.workers)
		}
	}
}
