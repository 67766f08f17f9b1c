package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/sim"
)

func llmFixture(name string) string { return filepath.Join("testdata", "llm", name) }

var qlmExportPlan = filepath.Join("..", "..", "..", "..", "testdata", "export", "qlm", "plan.json")

// golden compares got with testdata/llm/NAME (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := llmFixture(name)
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

// TestSimulateLLMTrace: a per-request trace replays exactly on an LLM plan: each request
// once, in the class it names (a class name or a model as target, a class field, or round-
// robin), with its own tokens; the Azure CSV imports by its header; the report and
// --requests-out carry TTFT, TPOT, E2E and tokens.
func TestSimulateLLMTrace(t *testing.T) {
	cases := []struct {
		name, trace string
		requests    int64
	}{
		{"five", "five.json", 5},
		{"azure5", "azure5.csv", 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "requests.jsonl")
			code, stdout, stderr := runCLI(t, "simulate", qlmExportPlan, "--trace", llmFixture(c.trace), "--requests-out", out, "-q")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			golden(t, c.name+".golden", []byte(stdout))
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".jsonl", data)
			var lines int64
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				var r sim.RequestRecord
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				if r.InputTokens <= 0 || r.OutputTokens <= 0 || r.TraceRow == nil || int64(*r.TraceRow) != lines {
					t.Fatalf("line %d: %s", lines, sc.Text())
				}
				lines++
			}
			code, stdout, stderr = runCLI(t, "simulate", qlmExportPlan, "--trace", llmFixture(c.trace), "-O", "json", "-q")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rep sim.Report
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			if lines != c.requests || len(rep.Points) != 1 || rep.Points[0].Total.Requests != c.requests || rep.Points[0].Total.LLM == nil {
				t.Fatalf("%d request lines, report %+v: want %d requests once", lines, rep.Points, c.requests)
			}
		})
	}
}

// TestSimulateLLMTraceBadInput: trace requests the plan cannot replay exit 2 naming the file,
// the request (line) and the value.
func TestSimulateLLMTraceBadInput(t *testing.T) {
	dir := t.TempDir()
	var plan map[string]any
	raw, err := os.ReadFile(qlmExportPlan)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil {
		t.Fatal(err)
	}
	q := plan["qlm"].(map[string]any)
	q["instances"] = q["instances"].([]any)[:1] // no instance serves vicuna-13b
	noVicuna := filepath.Join(dir, "plan.json")
	raw, _ = json.Marshal(plan)
	if err := os.WriteFile(noVicuna, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"prompt beyond the class", []string{qlmExportPlan, "--trace", llmFixture("azure-long.csv")},
			`azure-long.csv: requests[1].input_tokens: 3000: more than class "mistral-batch" allows (input_tokens.max 2048)`},
		{"malformed CSV", []string{qlmExportPlan, "--trace", llmFixture("azure-bad.csv")}, `azure-bad.csv:3: ContextTokens: "abc"`},
		{"unknown target", []string{qlmExportPlan, "--trace", llmFixture("unknown-target.json")}, `requests[0].target: "llama-3": unknown target`},
		{"class no instance serves", []string{noVicuna, "--trace", llmFixture("five.json")},
			`five.json: requests[3]: class "vicuna-chat": its model "vicuna-13b" is served by no instance of ` + noVicuna},
		{"requests-out in no directory", []string{qlmExportPlan, "--requests-out", filepath.Join(dir, "no", "r.jsonl")}, "--requests-out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"simulate"}, c.args...)...)
			if code != 2 || !strings.Contains(stderr, c.want) || stdout != "" {
				t.Fatalf("exit %d, stderr %q, stdout %q: want exit 2 with %q", code, stderr, stdout, c.want)
			}
		})
	}
}

// withClassSLOs writes the bundled QLM plan with SLO fields set on its embedded classes.
func withClassSLOs(t *testing.T, slos map[string]map[string]string) string {
	t.Helper()
	raw, err := os.ReadFile(qlmExportPlan)
	if err != nil {
		t.Fatal(err)
	}
	var plan map[string]any
	if err := json.Unmarshal(raw, &plan); err != nil {
		t.Fatal(err)
	}
	classes := plan["provenance"].(map[string]any)["embedded"].(map[string]any)["workload"].(map[string]any)["llm_classes"].([]any)
	for _, c := range classes {
		c := c.(map[string]any)
		for k, v := range slos[c["name"].(string)] {
			c[k] = v
		}
	}
	resign(t, plan)
	path := filepath.Join(t.TempDir(), "plan.json")
	raw, _ = json.Marshal(plan)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSimulateLLMSLOs: a class's TTFT and TPOT SLOs count in attainment: a request finished
// by its deadline that misses either is late; a bad SLO exits 2.
func TestSimulateLLMSLOs(t *testing.T) {
	cases := []struct {
		name string
		slos map[string]map[string]string
		// want is late/ttft_missed/tpot_missed per class of five.json (2 mistral-chat, 2
		// mistral-batch, 1 vicuna-chat request).
		want map[string][3]int64
	}{
		{"none", nil, map[string][3]int64{"mistral-chat": {}, "mistral-batch": {}, "vicuna-chat": {}}},
		{"ttft unmeetable", map[string]map[string]string{"mistral-chat": {"ttft_slo": "1us"}, "mistral-batch": {"tpot_slo": "1h"}},
			map[string][3]int64{"mistral-chat": {2, 2, 0}, "mistral-batch": {}, "vicuna-chat": {}}},
		{"tpot unmeetable", map[string]map[string]string{"vicuna-chat": {"tpot_slo": "1us", "ttft_slo": "1h"}},
			map[string][3]int64{"mistral-chat": {}, "mistral-batch": {}, "vicuna-chat": {1, 0, 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "simulate", withClassSLOs(t, c.slos), "--trace", llmFixture("five.json"), "-O", "json", "-q")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rep sim.Report
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			for _, a := range rep.Points[0].Apps {
				got := [3]int64{a.Late, a.LLM.TTFTMissed, a.LLM.TPOTMissed}
				if got != c.want[a.Name] {
					t.Errorf("%s: late/ttft/tpot missed %v, want %v", a.Name, got, c.want[a.Name])
				}
			}
		})
	}
	bad := withClassSLOs(t, map[string]map[string]string{"vicuna-chat": {"ttft_slo": "-1s"}})
	code, _, stderr := runCLI(t, "simulate", bad, "--trace", llmFixture("five.json"))
	if code != 2 || !strings.Contains(stderr, "ttft_slo") || !strings.Contains(stderr, "-1s") {
		t.Fatalf("negative ttft_slo: exit %d, %s", code, stderr)
	}
}

// TestSimulateLLMReportCDFs: --report on an LLM plan draws the TTFT and TPOT CDFs beside the
// attainment curve and the timeline.
func TestSimulateLLMReportCDFs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rep")
	code, _, stderr := runCLI(t, "simulate", qlmExportPlan, "--trace", llmFixture("five.json"), "--report", dir, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{"ttft_cdf.png", "ttft_cdf.svg", "tpot_cdf.png", "tpot_cdf.svg", "report.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestValidateLLMTraceTargets: what a trace may name with an LLM plan is what replays: a class
// name or a class's model as target (a class name failed validation before), nothing else.
func TestValidateLLMTraceTargets(t *testing.T) {
	cases := []struct {
		trace    string
		code     int
		contains string
	}{
		{"five.json", 0, "five.json: ok"},
		{"unknown-target.json", 2, `requests[0].target: "llama-3": unknown target`},
	}
	for _, c := range cases {
		code, stdout, stderr := runCLI(t, "validate", qlmExportPlan, llmFixture(c.trace))
		if code != c.code || !strings.Contains(stdout+stderr, c.contains) {
			t.Errorf("validate %s: exit %d, %s%s: want exit %d with %q", c.trace, code, stdout, stderr, c.code, c.contains)
		}
	}
}
