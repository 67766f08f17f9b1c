package llm

import (
	"context"
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
	ms, err := ReadConfigs(context.Background(), filepath.Join("testdata", "configs"))
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
	moe := `"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 4096, "num_local_experts": 8`
	base := `"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 4096`
	for _, tc := range []struct{ name, json, want string }{
		{"experts in a dense family", `{` + base + `, "num_local_experts": 8}`, `num_local_experts: 8: experts in a model_type "llama" config`},
		{"moe without top-k", `{` + moe + `}`, "num_experts_per_tok: missing"},
		{"top-k past experts", `{` + moe + `, "num_experts_per_tok": 9}`, "num_experts_per_tok: 9: more experts per token than the 8 experts"},
		{"no moe layer", `{` + moe + `, "num_experts_per_tok": 2, "first_k_dense_replace": 32}`, "num_hidden_layers: 32: no layer routes to experts"},
		{"mla without its ranks", `{` + base + `, "kv_lora_rank": 512}`, "qk_nope_head_dim: missing"},
		{"awq", `{` + base + `, "quantization_config": {"quant_method": "awq", "bits": 4}}`, `quantization_config.quant_method: "awq": not modelled`},
		{"int4 compressed", `{` + base + `, "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}}}}`, "config_groups.group_0.weights: 4-bit int: integer weights"},
		{"mxfp4 dense", `{` + base + `, "quantization_config": {"quant_method": "mxfp4"}}`, "quantizes experts: the model has none"},
		{"wrapper without text", `{"model_type": "llama4"}`, "text_config: missing"},
		{"unknown type", `{"model_type": "mamba", "hidden_size": 768}`, `model_type: "mamba": not a decoder family`},
		{"no type", `{"hidden_size": 768}`, "model_type: \"\": missing"},
		{"missing field", `{"model_type": "llama", "hidden_size": 4096}`, "num_hidden_layers: missing"},
		{"kv heads", `{` + strings.Replace(base, `"num_key_value_heads": 8`, `"num_key_value_heads": 5`, 1) + `}`, "num_key_value_heads: 5: must divide num_attention_heads (32)"},
		{"not json", `[1,2]`, "not a JSON object"},
		{"partial rotary", `{` + base + `, "partial_rotary_factor": 1.5}`, "partial_rotary_factor: 1.5: must be in (0, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadConfig("c.json", "m", []byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), "c.json: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ReadConfigs(context.Background(), filepath.Join("testdata", "configs-bad", "moe-topk.json")); err == nil || !strings.Contains(err.Error(), "moe-topk.json: num_experts_per_tok: 10") {
		t.Errorf("moe-topk: %v", err)
	}
}

// TestReadConfigMoE: mixture-of-experts and quantized configs give the published totals —
// Mixtral-8x7B 46.7B with 12.9B active, Qwen3-30B-A3B 30.5B with 3.3B active, Llama-4-Scout
// 108B (17B active) from its text_config, gpt-oss-20b's MXFP4 experts — and the layers that
// stay dense.
func TestReadConfigMoE(t *testing.T) {
	for _, tc := range []struct {
		name, json           string
		params, active       float64
		weights              WeightDType
		experts, topk, dense int
	}{
		{"mixtral", `{"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 32768, "num_local_experts": 8, "num_experts_per_tok": 2}`, 46.7, 12.9, WeightsBF16, 8, 2, 0},
		{"qwen3-moe", `{"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151936, "max_position_embeddings": 40960}`, 30.5, 3.3, WeightsBF16, 128, 8, 0},
		{"llama4-scout fp8", `{"model_type": "llama4", "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}}, "text_config": {"hidden_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "vocab_size": 202048, "max_position_embeddings": 10485760}}`, 107.8, 17.2, WeightsFP8, 16, 1, 0},
		{"gpt-oss-20b", `{"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "num_local_experts": 32, "num_experts_per_tok": 4, "vocab_size": 201088, "max_position_embeddings": 131072, "quantization_config": {"quant_method": "mxfp4"}}`, 20.9, 4.2, WeightsMXFP4, 32, 4, 0},
		{"deepseek-style dense first", `{"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 32768, "num_local_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 3}`, 0, 0, WeightsBF16, 8, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ReadConfig("c.json", tc.name, []byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if m.MoE == nil || m.MoE.Experts != tc.experts || m.MoE.TopK != tc.topk || m.MoE.DenseLayers != tc.dense || m.Weights != tc.weights {
				t.Fatalf("read %+v %+v", m, m.MoE)
			}
			if tc.params > 0 {
				if r := m.ParamsB / tc.params; r < 0.98 || r > 1.02 {
					t.Errorf("%.2fB parameters, published %.1fB", m.ParamsB, tc.params)
				}
				if r := m.ActiveParams() / 1e9 / tc.active; r < 0.95 || r > 1.05 {
					t.Errorf("%.2fB active, published %.1fB", m.ActiveParams()/1e9, tc.active)
				}
			}
		})
	}
}

// FuzzReadConfig: no config.json makes the reader panic, and what it accepts profiles: shapes
// in range, a parameter count above 0, an engine id that is a Hugging Face id or none.
func FuzzReadConfig(f *testing.F) {
	for _, p := range []string{"testdata/configs/Llama-3.2-3B/config.json", "testdata/configs/Qwen3-14B/config.json", "testdata/configs-moe/Mixtral-8x7B/config.json", "testdata/configs-bad/moe-topk.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(tinyConfig + `, "_name_or_path": "\udc00"}`))
	f.Add([]byte(tinyConfig + `, "_name_or_path": "/home/me/ckpt"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// As --llm-config reads a file: named by its directory, the engine id a hub id or none.
		m, err := readConfigData("m/config.json", b)
		if err != nil {
			return
		}
		if m.Layers < 1 || m.Heads < 1 || m.KVHeads < 1 || m.HeadDim < 1 || (m.MoE != nil && (m.MoE.TopK > m.MoE.Experts || m.MoE.DenseLayers >= m.Layers)) {
			t.Errorf("accepted %+v", m)
		}
		if !(m.ParamsB > 0) || (m.HF != "" && !HubID(m.HF)) {
			t.Errorf("accepted params_billion %g, hf_model %q", m.ParamsB, m.HF)
		}
	})
}
