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
// --requests-out carry TTFT, TPOT, E2E and tokens (issue 30 items 4 and 5).
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
