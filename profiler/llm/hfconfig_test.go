package llm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/profiler/roofline"
)

// TestReadConfigs: the bundled config.json files give the published shapes — Llama-3.2-3B's
// 3.21B parameters with its tied embeddings, Qwen3-14B's 14.8B with head_dim 128 over a 5120
// hidden size — named by their directories, and each profiles on the H100.
func TestReadConfigs(t *testing.T) {
	ms, err := ReadConfigs(filepath.Join("testdata", "configs"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"llama-3.2-3b": 3.21, "qwen3-14b": 14.77}
	if len(ms) != len(want) {
		t.Fatalf("%d models, want %d", len(ms), len(want))
	}
	for _, m := range ms {
		w, ok := want[m.Name]
		if !ok {
			t.Errorf("unexpected model %q", m.Name)
			continue
		}
		if r := m.ParamsB / w; r < 0.985 || r > 1.015 {
			t.Errorf("%s: %.2fB parameters, published %.2fB", m.Name, m.ParamsB, w)
		}
		if _, err := EstimateModel(m, "H100", 1, roofline.LinkAuto, "", 0); err != nil {
			t.Errorf("%s on H100: %v", m.Name, err)
		}
	}
}

// TestReadConfigBad: what the dense step model cannot describe, and broken configs, are
// refused naming the file, the field and the value.
func TestReadConfigBad(t *testing.T) {
	base := `"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 4096`
	for _, tc := range []struct{ name, json, want string }{
		{"moe", `{` + base + `, "num_local_experts": 8}`, "num_local_experts: 8: a mixture-of-experts model"},
		{"deepseek moe", `{` + base + `, "n_routed_experts": 256}`, "n_routed_experts: 256"},
		{"mla", `{` + base + `, "kv_lora_rank": 512}`, "kv_lora_rank: 512: multi-head latent attention"},
		{"quantized", `{` + base + `, "quantization_config": {"quant_method": "fp8"}}`, "quantization_config: present"},
		{"unknown type", `{"model_type": "mamba", "hidden_size": 768}`, `model_type: "mamba": not a dense decoder family`},
		{"no type", `{"hidden_size": 768}`, "model_type: \"\": missing"},
		{"missing field", `{"model_type": "llama", "hidden_size": 4096}`, "num_hidden_layers: missing"},
		{"kv heads", `{` + strings.Replace(base, `"num_key_value_heads": 8`, `"num_key_value_heads": 5`, 1) + `}`, "num_key_value_heads: 5: must divide num_attention_heads (32)"},
		{"not json", `[1,2]`, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadConfig("c.json", "m", []byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), "c.json: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ReadConfigs(filepath.Join("testdata", "configs-bad", "mixtral.json")); err == nil || !strings.Contains(err.Error(), "mixtral.json: num_local_experts: 8") {
		t.Errorf("mixtral: %v", err)
	}
}

// FuzzReadConfig: no config.json makes the reader panic.
func FuzzReadConfig(f *testing.F) {
	for _, p := range []string{"testdata/configs/Llama-3.2-3B/config.json", "testdata/configs/Qwen3-14B/config.json", "testdata/configs-bad/mixtral.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadConfig("f.json", "m", b)
		if err == nil && (m.Layers < 1 || m.Heads < 1 || m.KVHeads < 1 || m.HeadDim < 1) {
			t.Errorf("accepted %+v", m)
		}
	})
}
