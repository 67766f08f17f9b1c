package llmspec

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestClassFit: a class whose longest request passes a given profile's max_model_len or KV
// capacity is refused naming the class, the profile entry and the limit, as plan solve
// refuses it; with a cluster given only its GPU types' profiles count.
func TestClassFit(t *testing.T) {
	prof := &formats.Profile{LLMs: []formats.LLMProfile{
		{Model: "m", GPU: "H100", GPUCount: 1, KVCapacityTokens: 100000, Engine: &formats.LLMEngine{MaxModelLen: 8192}},
		{Model: "m", GPU: "A100", GPUCount: 1, KVCapacityTokens: 6000},
		{Model: "other", GPU: "H100", GPUCount: 1, KVCapacityTokens: 10},
	}}
	class := func(in, out int) []LLMClass {
		return []LLMClass{{Name: "c", Model: "m", InputTokens: TokenProfile{Mean: 10, Max: in}, OutputTokens: TokenProfile{Mean: 10, Max: out}}}
	}
	h100 := &formats.Cluster{GPUs: []formats.GPUPool{{Type: "H100", Count: 1}}}
	for _, c := range []struct {
		name    string
		cs      []LLMClass
		cluster bool
		want    []string
	}{
		{"fits", class(2000, 1000), false, nil},
		{"past the KV of one", class(4096, 4096), false, []string{"llm_classes[0].input_tokens.max + output_tokens.max: 8192: more than the KV cache's 6000 tokens (p.json: llms[1] (m on 1×A100)"}},
		{"past the context", class(8000, 1000), false, []string{"9000: more than the engine's max_model_len 8192 (p.json: llms[0] (m on 1×H100): engine.max_model_len)", "9000: more than the KV cache's 6000"}},
		{"cluster of H100s", class(4096, 4096), true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			docs := map[string]formats.Document{"p.json": prof}
			if c.cluster {
				docs["c.yaml"] = h100
			}
			errs := classFit(c.cs, docs)
			if len(errs) != len(c.want) {
				t.Fatalf("%d problems %v, want %d", len(errs), errs, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("problem %q does not say %q", errs[i].Error(), w)
				}
			}
		})
	}
}
