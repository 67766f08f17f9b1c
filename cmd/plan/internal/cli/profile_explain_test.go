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

// TestProfileExplainHybridKV: --explain states a hybrid KV layout as vLLM allocates it —
// pool blocks of one group's layers, the tokens vLLM reports over the groups, and what a
// sequence holds in each kind of group — for Llama-4's chunked local attention from vLLM
// 0.14 (one group before), and gpt-oss's sliding window.
func TestProfileExplainHybridKV(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		without []string
	}{
		{"scout at 0.15", []string{"--llm", "llama-4-scout", "--gpu", "H100", "--tp", "2", "--quantization", "fp8"},
			[]string{"× 2048 B a token of one layer × 12 layers a group) = ", "over 4 groups = ", "1 full-attention, 3 chunked-local (8192-token chunks) groups of 12 layers", "at most its current chunk's blocks in a chunked one"}, []string{"sliding"}},
		{"scout at 0.12", []string{"--llm", "llama-4-scout", "--gpu", "H100", "--tp", "2", "--quantization", "fp8", "--vllm-version", "0.12"},
			[]string{"÷ (16-token blocks × 98304 B a token) = "}, []string{"hybrid KV layout", "chunked-local"}},
		{"gpt-oss", []string{"--llm", "gpt-oss-20b", "--gpu", "H100"},
			[]string{"over 2 groups = ", "1 full-attention, 1 sliding-window (128 tokens) groups of 12 layers", "at most its last window's blocks in a sliding one"}, []string{"chunked"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"profile"}, tc.args...), "--explain", "-o", filepath.Join(t.TempDir(), "p.json"))
			code, stdout, stderr := rootRun(t, args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			i := strings.Index(stdout, "KV cache per GPU")
			if i < 0 {
				t.Fatalf("no KV budget in:\n%s", stdout)
			}
			kv := stdout[i:]
			for _, w := range tc.want {
				if !strings.Contains(kv, w) {
					t.Errorf("lacks %q:\n%s", w, kv)
				}
			}
			for _, w := range tc.without {
				if strings.Contains(kv, w) {
					t.Errorf("has %q:\n%s", w, kv)
				}
			}
		})
	}
}
