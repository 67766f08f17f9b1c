package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/run/replay"
	"github.com/plan-dev/plan/sim"
)

func engineFixture(name string) string { return filepath.Join("testdata", "engine", name) }

// engineGolden compares got with testdata/engine/NAME (rewritten with -update).
func engineGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := engineFixture(name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (run with -update after checking):\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

// completeProfile writes testdata/engine/profile.json with every planner field set (values a
// planner would read; the engine reads none of them).
func completeProfile(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(engineFixture("profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	l := doc["llms"].([]any)[0].(map[string]any)
	for k, v := range map[string]any{"params_billion": 8, "weight_bytes": 16e9, "prefill_base_us": 5000, "prefill_us_per_token": 40,
		"decode_us_per_token": 9000, "throughput_tokens_per_s": 3000, "kv_bytes_per_token": 131072, "avg_batch": 32,
		"load_cold_us": 8e6, "load_warm_us": 6e5} {
		l[k] = v
	}
	path := filepath.Join(t.TempDir(), "complete.json")
	raw, _ = json.Marshal(doc)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readRecords(t *testing.T, path string) []replay.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []replay.Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var r replay.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestSimulateLLMEngine: plan simulate --llm replays a trace through one engine built from a
// profile alone, with the engine's FCFS scheduling by default, and says what ran: the
// profile entry, the policy and the engine settings (golden report and requests).
func TestSimulateLLMEngine(t *testing.T) {
	out := filepath.Join(t.TempDir(), "requests.jsonl")
	code, stdout, stderr := runCLI(t, "simulate", "--llm", "--profile", engineFixture("profile.json"), "--trace", engineFixture("trace.json"), "--requests-out", out, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing (no --duration warning: the trace sets the window)", stderr)
	}
	engineGolden(t, "trace.golden", []byte(stdout))
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	engineGolden(t, "trace.jsonl", data)
	for _, want := range []string{"policy: qlm-vllm-fcfs (default: the engine's own scheduling)", "engine: max_num_batched_tokens 2048, max_num_seqs 64, block_size 16*", "preemptions: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	cases := []struct {
		name     string
		args     []string
		model    string
		gpus     int
		policy   string
		def      bool
		requests int
		classes  []string
	}{
		{"json", nil, "llama-3-8b", 1, "qlm-vllm-fcfs", true, 10, []string{"all"}},
		{"class labels", []string{"--trace", engineFixture("classes.json")}, "llama-3-8b", 1, "qlm-vllm-fcfs", true, 10, []string{"all", "llama-3-8b", "chat"}},
		{"azure csv", []string{"--trace", llmFixture("azure5.csv")}, "llama-3-8b", 1, "qlm-vllm-fcfs", true, 5, []string{"all"}},
		{"edf", []string{"--policy", "qlm-edf"}, "llama-3-8b", 1, "qlm-edf", false, 10, []string{"all"}},
		{"model picked", []string{"--profile", engineFixture("profile-three.json"), "--model", "mistral-7b"}, "mistral-7b", 1, "qlm-vllm-fcfs", true, 10, []string{"all"}},
		{"model and gpus picked", []string{"--profile", engineFixture("profile-three.json"), "--model", "llama-3-8b@2xH100"}, "llama-3-8b", 2, "qlm-vllm-fcfs", true, 10, []string{"all"}},
		{"a planner's policy on a complete profile", []string{"--profile", completeProfile(t), "--policy", "qlm"}, "llama-3-8b", 1, "qlm", false, 10, []string{"all"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"simulate", "--llm", "--profile", engineFixture("profile.json"), "--trace", engineFixture("trace.json")}
			code, stdout, stderr := runCLI(t, append(append(args, c.args...), "-O", "json", "-q")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rep sim.EngineReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			var classes []string
			for _, r := range rep.Classes {
				classes = append(classes, r.Class)
			}
			if rep.Model != c.model || rep.GPUCount != c.gpus || rep.Policy != c.policy || rep.DefaultPolicy != c.def ||
				rep.Requests != c.requests || rep.Answered != c.requests || strings.Join(classes, ",") != strings.Join(c.classes, ",") {
				t.Errorf("report %+v", rep)
			}
			all := rep.Classes[0]
			if rep.Preemptions == nil || all.TTFT.N != c.requests || all.E2E.N != c.requests || !(all.TTFT.P50Us <= all.TTFT.P95Us && all.TTFT.P95Us <= all.TTFT.P99Us) ||
				!(rep.RequestsPerS > 0 && rep.OutputTokensPerS > 0) {
				t.Errorf("timings %+v, preemptions %v", all, rep.Preemptions)
			}
		})
	}
}

// TestSimulateLLMEngineProfileUse: a replay with an engine-only policy is the same whether
// the profile holds the planner's fields or not (they are not read), request by request.
func TestSimulateLLMEngineProfileUse(t *testing.T) {
	complete := completeProfile(t)
	for _, policy := range []string{"qlm-vllm-fcfs", "qlm-edf"} {
		t.Run(policy, func(t *testing.T) {
			var got [2][]byte
			for i, prof := range []string{engineFixture("profile.json"), complete} {
				out := filepath.Join(t.TempDir(), "r.jsonl")
				if code, _, stderr := runCLI(t, "simulate", "--llm", "--profile", prof, "--trace", engineFixture("trace.json"), "--policy", policy, "--requests-out", out, "-q"); code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				got[i], _ = os.ReadFile(out)
			}
			if len(got[0]) == 0 || !bytes.Equal(got[0], got[1]) {
				t.Errorf("engine-only and complete profiles replay differently:\n%s\n---\n%s", got[0], got[1])
			}
		})
	}
}

// TestSimulateLLMEngineMatchesPlan: one engine replayed alone is the plan's instance: a QLM
// plan of one instance simulated with the engine's policy gives every request of a trace the
// same first token and finish as plan simulate --llm on the plan's embedded profile.
func TestSimulateLLMEngineMatchesPlan(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(qlmExportPlan)
	if err != nil {
		t.Fatal(err)
	}
	var plan map[string]any
	if err := json.Unmarshal(raw, &plan); err != nil {
		t.Fatal(err)
	}
	keep := func(xs []any, ok func(m map[string]any) bool) []any {
		var out []any
		for _, x := range xs {
			if ok(x.(map[string]any)) {
				out = append(out, x)
			}
		}
		return out
	}
	mistral := func(m map[string]any) bool { return m["model"] == "mistral-7b" }
	q := plan["qlm"].(map[string]any)
	q["instances"], q["groups"] = keep(q["instances"].([]any), mistral), keep(q["groups"].([]any), mistral)
	emb := plan["provenance"].(map[string]any)["embedded"].(map[string]any)
	w := emb["workload"].(map[string]any)
	w["llm_classes"] = keep(w["llm_classes"].([]any), mistral)
	var llms []any
	for _, p := range emb["profiles"].([]any) {
		llms = append(llms, p.(map[string]any)["llms"].([]any)...)
	}
	prof := map[string]any{"apiVersion": "plan/v1", "kind": "Profile", "metadata": map[string]any{"name": "embedded"}, "llms": llms}
	var trace map[string]any
	raw, _ = os.ReadFile(engineFixture("trace.json"))
	if err := json.Unmarshal(raw, &trace); err != nil {
		t.Fatal(err)
	}
	for _, r := range trace["requests"].([]any) {
		r.(map[string]any)["target"] = "mistral-7b"
	}
	resign(t, plan)
	files := map[string]any{"plan.json": plan, "profile.json": prof, "trace.json": trace}
	for name, v := range files {
		raw, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := func(name string) string { return filepath.Join(dir, name) }
	runs := [][]string{
		{"simulate", at("plan.json"), "--trace", at("trace.json"), "--policy", "qlm-vllm-fcfs", "--requests-out", at("plan.jsonl"), "-q"},
		{"simulate", "--llm", "--profile", at("profile.json"), "--model", "mistral-7b", "--trace", at("trace.json"), "--requests-out", at("engine.jsonl"), "-q"},
	}
	for _, args := range runs {
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	type timing struct{ first, done int64 }
	byRow := func(path string) map[int]timing {
		m := map[int]timing{}
		for _, r := range readRecords(t, path) {
			if r.TraceRow == nil || r.FirstTokenUs == nil {
				t.Fatalf("%s: record %+v has no trace row or first token", path, r)
			}
			m[*r.TraceRow] = timing{*r.FirstTokenUs, r.DoneUs}
		}
		return m
	}
	p, e := byRow(at("plan.jsonl")), byRow(at("engine.jsonl"))
	if len(p) != 10 || len(e) != 10 {
		t.Fatalf("%d and %d requests, want 10", len(p), len(e))
	}
	for row, x := range p {
		if e[row] != x {
			t.Errorf("trace row %d: plan %+v, one engine %+v", row, x, e[row])
		}
	}
}

// TestSimulateLLMEngineDuration: an explicit --duration that cuts the trace says so; the
// trace's own window warns about nothing.
func TestSimulateLLMEngineDuration(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		warn string
	}{
		{"trace window", nil, ""},
		{"cut", []string{"--duration", "300ms"}, "simulate: --duration 300ms cuts the trace trace.json: 4 of its 10 requests are not replayed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"simulate", "--llm", "--profile", engineFixture("profile.json"), "--trace", engineFixture("trace.json"), "-q"}, c.args...)
			code, _, stderr := runCLI(t, args...)
			if code != 0 || (c.warn == "" && stderr != "") || !strings.Contains(stderr, c.warn) {
				t.Errorf("exit %d, stderr %q: want %q", code, stderr, c.warn)
			}
		})
	}
}

// TestSimulateLLMEngineBadInput: what a one-engine replay cannot run exits 2 naming the
// flag, the file and the value.
func TestSimulateLLMEngineBadInput(t *testing.T) {
	dir := t.TempDir()
	noKV := filepath.Join(dir, "nokv.json")
	raw, _ := os.ReadFile(engineFixture("profile.json"))
	os.WriteFile(noKV, bytes.Replace(raw, []byte(`"kv_capacity_tokens": 4096,`), nil, 1), 0o644)
	base := []string{"simulate", "--llm", "--profile", engineFixture("profile.json"), "--trace", engineFixture("trace.json")}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no profile", []string{"simulate", "--llm", "--trace", engineFixture("trace.json")}, "--llm: needs --profile FILE"},
		{"no trace", []string{"simulate", "--llm", "--profile", engineFixture("profile.json")}, "--llm: needs --trace FILE"},
		{"a plan too", append(base, qlmExportPlan), "--llm: replays one engine built from --profile: no PLAN"},
		{"a sweep flag", append(base, "--load", "0.5"), "--load: not with --llm"},
		{"profile without --llm", []string{"simulate", qlmExportPlan, "--profile", engineFixture("profile.json")}, "--profile: only with --llm"},
		{"ambiguous profile", []string{"simulate", "--llm", "--profile", engineFixture("profile-three.json"), "--trace", engineFixture("trace.json")},
			"profile-three.json: holds 3 LLMs (llama-3-8b@1xH100, llama-3-8b@2xH100, mistral-7b@1xA100): pick one with --model"},
		{"ambiguous model", []string{"simulate", "--llm", "--profile", engineFixture("profile-three.json"), "--model", "llama-3-8b", "--trace", engineFixture("trace.json")},
			"--model llama-3-8b: testdata/engine/profile-three.json holds 2 such LLMs (llama-3-8b@1xH100, llama-3-8b@2xH100): name one as MODEL@GPU or MODEL@NxGPU"},
		{"unknown model", append(base, "--model", "llama-3-70b"), "--model llama-3-70b: testdata/engine/profile.json holds no such LLM (it holds llama-3-8b@1xH100)"},
		{"a planner's policy, engine-only profile", append(base, "--policy", "qlm"), "--policy qlm reads the planner's fields of the profile"},
		{"unknown policy", append(base, "--policy", "fifo"), `--policy: unknown policy "fifo"`},
		{"profile without KV capacity", []string{"simulate", "--llm", "--profile", noKV, "--trace", engineFixture("trace.json")}, "nokv.json: llms[0].kv_capacity_tokens: missing required field"},
		{"trace for another model", []string{"simulate", "--llm", "--profile", engineFixture("profile.json"), "--trace", engineFixture("target-other.json")},
			`target-other.json: requests[1].target: "mistral-7b": the engine replayed serves llama-3-8b`},
		{"trace without tokens", []string{"simulate", "--llm", "--profile", engineFixture("profile.json"), "--trace", engineFixture("no-tokens.json")},
			"no-tokens.json: requests[1].input_tokens: 0: a one-engine replay needs each request's prompt tokens"},
		{"requests-out a directory", append(base, "--requests-out", dir), "--requests-out: " + dir + ": is a directory"},
		{"requests-out a device", append(base, "--requests-out", os.DevNull), "--requests-out: " + os.DevNull + ": exists and is not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) || stdout != "" {
				t.Fatalf("exit %d, stderr %q, stdout %q: want exit 2 with %q", code, stderr, stdout, c.want)
			}
		})
	}
}
