package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestValidateForUse: plan validate checks a profile for what it is used for: planning by
// default (every planner-only field required), one engine's replay with --for replay.
func TestValidateForUse(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"engine-only for planning", []string{engineFixture("profile.json")}, 2, "profile.json: llms[0].avg_batch: missing required field"},
		{"engine-only for replay", []string{"--for", "replay", engineFixture("profile.json")}, 0, "profile.json: ok (Profile)"},
		{"other kinds unchanged", []string{"--for", "replay", engineFixture("trace.json"), engineFixture("profile-three.json")}, 0, "trace.json: ok (Trace)"},
		{"a bad use", []string{"--for", "serve", engineFixture("profile.json")}, 2, `--for: "serve": must be one of plan, replay`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"validate"}, c.args...)...)
			if code != c.code || !strings.Contains(stdout+stderr, c.want) {
				t.Errorf("exit %d, %s%s: want exit %d with %q", code, stdout, stderr, c.code, c.want)
			}
		})
	}
	_, _, stderr := runCLI(t, "validate", engineFixture("profile.json"))
	if n := strings.Count(stderr, "missing required field"); n != len(formats.PlannerOnlyLLMFields) {
		t.Errorf("%d fields missing for planning, want the %d planner-only ones:\n%s", n, len(formats.PlannerOnlyLLMFields), stderr)
	}
}

// TestProfileImportLog: plan profile --import takes the model, GPU, GPU count and KV capacity
// from the step log or the flags, for any model on any GPU count: a known model keeps the
// planner's fields, any other is an engine-only profile that replays; flags that disagree
// with the log are errors naming the file, line, field and value.
func TestProfileImportLog(t *testing.T) {
	steps := filepath.Join("..", "..", "..", "..", "profiler", "llm", "testdata", "steps.csv")
	log := engineFixture("steps-log.csv")
	cases := []struct {
		name  string
		args  []string
		model string
		gpu   string
		gpus  int
		kv    int64
		use   formats.ProfileUse
		err   string
	}{
		{name: "log names an unknown engine", args: []string{"--import", log}, model: "llama-3-8b", gpu: "L40S", gpus: 2, kv: 120000, use: formats.UseReplay},
		{name: "flags name an unknown engine", args: []string{"--import", steps, "--llm", "qwen-2-7b", "--gpu", "L40S", "--gpu-count", "1", "--kv-capacity-tokens", "50000"},
			model: "qwen-2-7b", gpu: "L40S", gpus: 1, kv: 50000, use: formats.UseReplay},
		{name: "a known model on the log's GPU count", args: []string{"--import", steps, "--llm", "llama-2-70b", "--gpu", "H100", "--gpu-count", "4"},
			model: "llama-2-70b", gpu: "H100", gpus: 4, use: formats.UsePlan},
		{name: "as before", args: []string{"--import", steps, "--llm", "mistral-7b", "--gpu", "A100"}, model: "mistral-7b", gpu: "A100", gpus: 1, use: formats.UsePlan},
		{name: "model disagrees", args: []string{"--import", log, "--llm", "mistral-7b"}, err: `steps-log.csv: line 2: model: "llama-3-8b": --llm says "mistral-7b"`},
		{name: "gpu count disagrees", args: []string{"--import", log, "--gpu-count", "4"}, err: "steps-log.csv: line 2: gpu_count: 2: --gpu-count says 4"},
		{name: "unknown engine without KV", args: []string{"--import", steps, "--llm", "qwen-2-7b", "--gpu", "L40S"}, err: "qwen-2-7b on L40S is not in the analytic model"},
		{name: "no model", args: []string{"--import", steps}, err: "--import: give --llm MODEL"},
		{name: "no GPU", args: []string{"--import", steps, "--llm", "qwen-2-7b"}, err: "steps.csv names no GPU: give --gpu GPU (or a gpu column)"},
		{name: "several GPUs", args: []string{"--import", steps, "--llm", "mistral-7b", "--gpu", "A100,H100"}, err: "--import: --llm mistral-7b gives 2 LLM profiles"},
		{name: "too many GPUs", args: []string{"--import", log, "--gpu-count", "65"}, err: "--gpu-count: 65: must be in [1, 64]"},
		{name: "gpu count without a log", args: []string{"--llm", "mistral-7b", "--gpu-count", "2"}, err: "--gpu-count: only with --import"},
		{name: "a known model too big for the count", args: []string{"--import", steps, "--llm", "llama-2-70b", "--gpu", "A10", "--gpu-count", "1"}, err: "does not fit 1 × A10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "p.json")
			code, _, stderr := rootRun(t, append(append([]string{"profile"}, c.args...), "-o", out, "-q")...)
			if c.err != "" {
				if code != 2 || !strings.Contains(stderr, c.err) {
					t.Fatalf("exit %d, %s: want exit 2 with %q", code, stderr, c.err)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			p, err := formats.DecodeProfileFor(out, data, c.use)
			if err != nil {
				t.Fatalf("for %s: %v", c.use, err)
			}
			_, errPlan := formats.DecodeProfileFor(out, data, formats.UsePlan)
			l := p.LLMs[0]
			if len(p.LLMs) != 1 || l.Model != c.model || l.GPU != c.gpu || l.GPUCount != c.gpus || (c.kv > 0 && l.KVCapacityTokens != c.kv) ||
				l.Backend != "import" || (errPlan == nil) != (c.use == formats.UsePlan) {
				t.Errorf("profile %+v (planning: %v)", l, errPlan)
			}
			var raw map[string]any
			_ = json.Unmarshal(data, &raw)
			if c.use == formats.UseReplay {
				// The engine-only profile replays.
				code, _, stderr := runCLI(t, "simulate", "--llm", "--profile", out, "--trace", engineFixture("trace.json"), "-q")
				if code != 0 {
					t.Errorf("replaying it: exit %d: %s", code, stderr)
				}
			}
		})
	}
}

// TestFewRequestsRemedy: the few-requests warning of a plan's replay points at the trace,
// which sets the window, never at a --duration the run does not use.
func TestFewRequestsRemedy(t *testing.T) {
	for _, c := range []struct {
		name      string
		args      []string
		want, not string
	}{
		{"trace window", []string{"--trace", llmFixture("five.json")}, "replay a longer trace (the trace five.json sets the window; --duration is not used)", "use a longer --duration"},
		{"explicit duration", []string{"--load", "1", "--duration", "30s"}, "use a longer --duration", "replay a longer trace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"simulate", qlmExportPlan, "-q"}, c.args...)...)
			if code != 0 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, c.not) {
				t.Errorf("exit %d, stderr %s: want %q, not %q", code, stderr, c.want, c.not)
			}
		})
	}
}

// TestProfileImportEngineVersion: a step log that gives the engine's vLLM version makes a
// profile whose engine block states that version and schedules as it did (a V0 log: KV for
// the whole prompt at admission, blocks free a step late), says so, and a replay of it names
// the settings.
func TestProfileImportEngineVersion(t *testing.T) {
	steps, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "profiler", "llm", "testdata", "steps.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(steps)), "\n")
	var b strings.Builder
	b.WriteString(lines[0] + ",vllm_version\n")
	for _, l := range lines[1:] {
		b.WriteString(l + ",0.6.3\n")
	}
	dir := t.TempDir()
	log, out := filepath.Join(dir, "v0.csv"), filepath.Join(dir, "p.json")
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := rootRun(t, "profile", "--import", log, "--llm", "mistral-7b", "--gpu", "A100", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "vllm_version 0.6: the V0 engine") {
		t.Errorf("stderr does not say what the version implied:\n%s", stderr)
	}
	p, err := formats.ReadInto[*formats.Profile](out, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := p.LLMs[0].Engine
	if e == nil || e.KVAllocation != formats.KVAllocAdmission || e.Release != formats.ReleaseNextStep || e.PrefixCaching() {
		t.Fatalf("engine %+v, want V0's admission, next_step and no prefix caching", e)
	}
	if e.VLLMVersion != "0.6" {
		t.Errorf("engine vllm_version %q, want the log's 0.6 (the exports name its image)", e.VLLMVersion)
	}
	code, stdout, stderr := runCLI(t, "simulate", "--llm", "--profile", out, "--trace", engineFixture("trace.json"))
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	for _, w := range []string{"kv_allocation", "admission", "next_step"} {
		if !strings.Contains(stdout+stderr, w) {
			t.Errorf("the replay's report does not name %q:\n%s%s", w, stdout, stderr)
		}
	}
}

// TestProfileImportKVLayout: an imported step log's engine decides the profile's KV layout:
// Llama-4 logged on vLLM 0.15 keeps its chunked groups, on 0.12 (no hybrid manager for
// chunked local attention) one group, whatever release the estimate began from.
func TestProfileImportKVLayout(t *testing.T) {
	steps, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "profiler", "llm", "testdata", "steps.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(steps)), "\n")
	for _, tc := range []struct {
		version string
		groups  bool
	}{{"0.15.1", true}, {"0.12.0", false}} {
		t.Run(tc.version, func(t *testing.T) {
			var b strings.Builder
			b.WriteString(lines[0] + ",vllm_version\n")
			for _, l := range lines[1:] {
				b.WriteString(l + "," + tc.version + "\n")
			}
			dir := t.TempDir()
			log, out := filepath.Join(dir, "steps.csv"), filepath.Join(dir, "p.json")
			if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := rootRun(t, "profile", "--import", log, "--llm", "llama-4-scout", "--gpu", "H100", "--gpu-count", "4", "-o", out)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			p, err := formats.ReadInto[*formats.Profile](out, nil)
			if err != nil {
				t.Fatal(err)
			}
			if g := p.LLMs[0].KVGroups; (g != nil) != tc.groups || (g != nil && g.Chunked != 3) {
				t.Errorf("vLLM %s: kv_groups %+v, want chunked groups %v", tc.version, g, tc.groups)
			}
		})
	}
}
