package llm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestReadStepLog: a step log may name the engine that ran it (model, GPU, GPU count, KV
// capacity), the same on every line that gives it, in CSV or JSONL; bad values and lines
// that disagree are errors naming the file, the line, the field and the value.
func TestReadStepLog(t *testing.T) {
	const head = "tokens,prefill_tokens,seconds,model,gpu,gpu_count,kv_capacity_tokens\n"
	for _, tc := range []struct {
		name, data string
		model, gpu string
		tp         int
		kv         int64
		err        string
	}{
		{name: "csv engine columns", data: head + "1,0,0.007,llama-3-8b,L40S,2,120000\n512,512,0.03,llama-3-8b,L40S,2,120000\n",
			model: "llama-3-8b", gpu: "L40S", tp: 2, kv: 120000},
		{name: "csv blank cells", data: head + "1,0,0.007,llama-3-8b,,,\n512,512,0.03,,H100,4,\n", model: "llama-3-8b", gpu: "H100", tp: 4},
		{name: "no engine columns", data: "tokens,prefill_tokens,seconds\n1,0,0.007\n"},
		{name: "jsonl engine keys", data: `{"tokens": 1, "prefill_tokens": 0, "seconds": 0.007, "model": "qwen-2-72b", "gpu": "H200", "gpu_count": 8, "kv_capacity_tokens": 900000}` + "\n" +
			`{"tokens": 64, "prefill_tokens": 64, "seconds": 0.02, "gpu_count": 8}`, model: "qwen-2-72b", gpu: "H200", tp: 8, kv: 900000},
		{name: "model changes", data: head + "1,0,0.007,llama-3-8b,H100,1,1000\n4,0,0.007,llama-3-70b,H100,1,1000\n",
			err: `s.csv: line 3: model: "llama-3-70b": differs from line 2's "llama-3-8b": a step log describes one engine`},
		{name: "gpu count not a number", data: head + "1,0,0.007,m,H100,two,1000\n", err: `s.csv: line 2: gpu_count: "two": must be a whole number in [1, 64]`},
		{name: "gpu count too many", data: head + "1,0,0.007,m,H100,65,1000\n", err: `s.csv: line 2: gpu_count: "65": must be a whole number in [1, 64]`},
		{name: "kv capacity zero", data: head + "1,0,0.007,m,H100,1,0\n", err: `s.csv: line 2: kv_capacity_tokens: "0": must be a whole number >= 1`},
		{name: "jsonl gpu count changes", data: `{"tokens": 1, "prefill_tokens": 0, "seconds": 0.007, "gpu_count": 2}` + "\n" + `{"tokens": 1, "prefill_tokens": 0, "seconds": 0.007, "gpu_count": 4}`,
			err: `s.csv: line 2: gpu_count: "4": differs from line 1's "2"`},
		{name: "jsonl empty model", data: `{"tokens": 1, "prefill_tokens": 0, "seconds": 0.007, "model": ""}`, err: `s.csv: line 1: model: "": must not be empty`},
		{name: "jsonl fractional gpu count", data: `{"tokens": 1, "prefill_tokens": 0, "seconds": 0.007, "gpu_count": 1.5}`, err: `s.csv: line 1: gpu_count: "1.5": must be a whole number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ReadStepLog("s.csv", []byte(tc.data))
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Model != tc.model || l.GPU != tc.gpu || l.GPUCount != tc.tp || l.KVCapacityTokens != tc.kv {
				t.Errorf("engine %q %q %d %d, want %q %q %d %d", l.Model, l.GPU, l.GPUCount, l.KVCapacityTokens, tc.model, tc.gpu, tc.tp, tc.kv)
			}
		})
	}
}

// TestEstimateOn: a known model profiles on any GPU count that holds it, the count the
// profile says; one that does not fit is an error; 0 is the fewest (Estimate).
func TestEstimateOn(t *testing.T) {
	for _, tc := range []struct {
		model, gpu string
		tp, want   int
		err        string
	}{
		{"llama-2-70b", "H100", 4, 4, ""},
		{"llama-2-70b", "H100", 8, 8, ""},
		{"llama-2-70b", "H100", 16, 0, "tensor parallel size 16: must be in 1..8"},
		{"mistral-7b", "A100", 0, 1, ""},
		{"llama-2-70b", "A10", 1, 0, "does not fit 1 × A10"},
	} {
		p, err := EstimateOn(tc.model, tc.gpu, tc.tp)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s on %d×%s: %v, want %q", tc.model, tc.tp, tc.gpu, err, tc.err)
			}
			continue
		}
		if err != nil || p.GPUCount != tc.want {
			t.Errorf("%s on %d×%s: %v, %+v", tc.model, tc.tp, tc.gpu, err, p)
			continue
		}
		doc := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: "plan/v1", Kind: "Profile"}, Metadata: formats.Metadata{Name: "x"}, LLMs: []formats.LLMProfile{*p}}
		if errs := doc.Validate(); len(errs) > 0 {
			t.Errorf("%s on %d×%s: %v", tc.model, tc.tp, tc.gpu, errs)
		}
	}
}

// TestEngineProfileFromSteps: an unknown model's step log makes a profile a replay takes and
// a planner refuses (the planner-only fields are not guessed).
func TestEngineProfileFromSteps(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "steps.csv"))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := ReadSteps("steps.csv", data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := WithSteps(EngineProfile("llama-3-8b", "L40S", 2, 120000), steps)
	if err != nil {
		t.Fatal(err)
	}
	doc := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: "plan/v1", Kind: "Profile"}, Metadata: formats.Metadata{Name: "x"}, LLMs: []formats.LLMProfile{p}}
	if errs := doc.ValidateFor(formats.UseReplay); len(errs) > 0 {
		t.Errorf("for a replay: %v", errs)
	}
	if errs := doc.ValidateFor(formats.UsePlan); len(errs) == 0 {
		t.Error("for planning: no problem, want the planner-only fields")
	}
	if p.GPUCount != 2 || p.KVCapacityTokens != 120000 || p.DecodeUsPerToken != 0 || p.Engine.MaxNumBatchedTokens != 2048 {
		t.Errorf("profile %+v", p)
	}
}

// FuzzReadStepLog: reading a step log never panics, and a log it reads has steps that check
// and engine columns in range.
func FuzzReadStepLog(f *testing.F) {
	for _, name := range []string{"steps.csv", "steps.jsonl", "steps-context.csv"} {
		if data, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("tokens,prefill_tokens,seconds,model,gpu,gpu_count,kv_capacity_tokens\n1,0,0.007,m,g,2,100\n"))
	f.Add([]byte(`{"tokens": 1, "prefill_tokens": 0, "seconds": 0.007, "gpu_count": 2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ReadStepLog("fuzz", data)
		if err != nil {
			return
		}
		if len(l.Steps) == 0 || l.GPUCount < 0 || l.GPUCount > maxGPUCount || l.KVCapacityTokens < 0 {
			t.Fatalf("read %+v", l)
		}
		for _, s := range l.Steps {
			if err := s.check(); err != nil {
				t.Fatalf("step %+v: %v", s, err)
			}
		}
	})
}
