package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileLLMListTPExplain: --llm takes a comma-separated list, --tp profiles each model
// at each degree that fits (the rest named on stderr), and --explain prints a table per
// profile with the gemm, attention, allreduce, elementwise, overhead and total columns at
// the seven cells, in text and in --output json.
func TestProfileLLMListTPExplain(t *testing.T) {
	out := filepath.Join(t.TempDir(), "llm.json")
	code, stdout, stderr := rootRun(t, "profile", "--llm", "llama-3.1-8b, llama-3.1-70b", "--gpu", "H100", "--tp", "1,4", "--explain", "-o", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p := readProfile(t, out)
	got := map[string]int{}
	for _, l := range p.LLMs {
		got[l.Model] += l.GPUCount
	}
	if len(p.LLMs) != 3 || got["llama-3.1-8b"] != 5 || got["llama-3.1-70b"] != 4 {
		t.Fatalf("profiles %v: want llama-3.1-8b at TP1 and TP4, llama-3.1-70b at TP4", got)
	}
	if !strings.Contains(stderr, "skipped llama-3.1-70b on H100") {
		t.Errorf("stderr %q: want the skipped 70B-at-TP1 named", stderr)
	}
	for _, want := range []string{"llama-3.1-70b on 4 × H100 over nvlink", "gemm", "attention", "allreduce", "elementwise", "overhead", "total", "prefill 8192", "decode b=128 ctx=2048"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("explain output lacks %q:\n%s", want, stdout)
		}
	}
	if n := strings.Count(stdout, "step time by term"); n != 3 {
		t.Errorf("%d explain tables, want 3", n)
	}
	code, stdout, stderr = rootRun(t, "--output", "json", "profile", "--llm", "qwen2.5-7b", "--gpu", "H100", "--explain", "-o", filepath.Join(t.TempDir(), "q.json"))
	if code != ExitOK {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	var doc struct {
		Explain []struct {
			Model string `json:"model"`
			TP    int    `json:"tp"`
			Cells []struct {
				Phase   string                     `json:"phase"`
				Terms   map[string]json.RawMessage `json:"terms"`
				TotalUs float64                    `json:"total_us"`
			} `json:"cells"`
		} `json:"explain"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	if len(doc.Explain) != 1 || len(doc.Explain[0].Cells) != 7 || !strings.Contains(stdout, `"step_times": "measured: h100_sxm`) || !strings.Contains(stdout, `"kv_memory"`) {
		t.Fatalf("json explain %+v", doc.Explain)
	}
	for _, c := range doc.Explain[0].Cells {
		sum := 0.0
		for k, raw := range c.Terms {
			if k == "sources" { // the measured-table points the terms came from
				continue
			}
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("term %s: %s", k, raw)
			}
			sum += v
		}
		if c.TotalUs <= 0 || sum-c.TotalUs > 1e-6*c.TotalUs || c.TotalUs-sum > 1e-6*c.TotalUs {
			t.Errorf("cell %+v: terms sum to %g, total %g", c, sum, c.TotalUs)
		}
	}
}
