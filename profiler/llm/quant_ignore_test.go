package llm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/roofline"
)

// scoutFP8Config is Llama-4-Scout's text shapes under a compressed-tensors FP8 config with
// the given ignore list (JSON array text; "" for none).
func scoutFP8Config(ignore string) string {
	q := `"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}`
	if ignore != "" {
		q += `, "ignore": ` + ignore
	}
	return `{"model_type": "llama4", "quantization_config": {` + q + `}, "text_config": {"hidden_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "vocab_size": 202048, "max_position_embeddings": 10485760}}`
}

// everyLayer lists each of the 48 layers' attention projections under prefix, leaving out
// skip.
func everyLayer(prefix, skip string) string {
	var names []string
	for l := 0; l < 48; l++ {
		for _, p := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
			if n := fmt.Sprintf("%s.%d.self_attn.%s", prefix, l, p); n != skip {
				names = append(names, `"`+n+`"`)
			}
		}
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// The ignore list's forms (compressed-tensors' regular expressions and class names, globs,
// dotted names, bare words) decide whether the attention projections stay BF16; only every
// layer's whole attention counts.
func TestIgnoreListAttention(t *testing.T) {
	for _, tc := range []struct {
		name, ignore string
		want         bool
	}{
		{"none", "", false},
		{"lm head only", `["lm_head"]`, false},
		{"llm-compressor llama-4 recipe", `["re:.*lm_head", "re:.*self_attn", "re:.*router", "re:.*vision_model.*", "re:.*multi_modal_projector.*", "Llama4TextAttention"]`, true},
		{"regex alone", `["re:.*self_attn"]`, true},
		{"class name alone", `["Llama4TextAttention"]`, true},
		{"glob", `["*self_attn*"]`, true},
		{"bare word", `["self_attn"]`, true},
		{"one layer", `["model.layers.0.self_attn"]`, false},
		{"every projection named", everyLayer("language_model.model.layers", ""), true},
		{"one projection missing", everyLayer("model.layers", "model.layers.47.self_attn.o_proj"), false},
		{"only the MLP", `["re:.*mlp.*"]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ReadConfig("c.json", "scout", []byte(scoutFP8Config(tc.ignore)))
			if err != nil {
				t.Fatal(err)
			}
			if m.Weights != WeightsFP8 || m.AttentionBF16 != tc.want {
				t.Fatalf("weights %s, attention BF16 %v; want fp8, %v", m.Weights, m.AttentionBF16, tc.want)
			}
		})
	}
}

func TestIgnoreListBad(t *testing.T) {
	for _, tc := range []struct{ name, ignore, want string }{
		{"bad regex", `["re:(self_attn"]`, `quantization_config.ignore[0]: "re:(self_attn": not a regular expression`},
		{"bad glob", `["lm_head", "[self"]`, `quantization_config.ignore[1]: "[self": not a glob`},
		{"not a list", `"self_attn"`, `quantization_config.ignore: "self_attn": must be a list`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadConfig("c.json", "scout", []byte(scoutFP8Config(tc.ignore)))
			if err == nil || !strings.Contains(err.Error(), "c.json: "+tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Attention kept in BF16 costs its projections' second byte in memory and is timed on the
// BF16 GEMM table: a larger weight footprint and a slower decode step than the same
// checkpoint with every linear layer in FP8.
func TestAttentionBF16Costs(t *testing.T) {
	quantized, err := ReadConfig("c.json", "scout", []byte(scoutFP8Config(`["re:.*lm_head"]`)))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := ReadConfig("c.json", "scout", []byte(scoutFP8Config(`["re:.*self_attn"]`)))
	if err != nil {
		t.Fatal(err)
	}
	extra := float64(kept.WeightBytes() - quantized.WeightBytes())
	if want := float64(kept.Layers) * kept.attnParams(); extra < want-1 || extra > want+1 {
		t.Errorf("weights grow by %.0f bytes, want one byte per attention parameter: %.0f", extra, want)
	}
	if quantized.SameShapes(kept) {
		t.Error("SameShapes: the two checkpoints run different dtypes")
	}
	h100, err := gpus.Lookup("H100")
	if err != nil {
		t.Fatal(err)
	}
	step := func(m Model) (float64, Breakdown) {
		d, err := NewDeployment(m, h100, 2, roofline.LinkAuto)
		if err != nil {
			t.Fatal(err)
		}
		b := d.Decode(8, 2048)
		return b.Total(), b
	}
	fast, _ := step(quantized)
	slow, b := step(kept)
	if slow <= fast {
		t.Errorf("decode step: %.3f ms with BF16 attention, %.3f ms with FP8: want slower", slow/1e3, fast/1e3)
	}
	var bf16QKV bool
	for _, s := range b.Sources {
		bf16QKV = bf16QKV || strings.Contains(s.Point.String(), "gemm[bfloat16] m=8 n=3584 k=5120")
	}
	if !bf16QKV {
		t.Errorf("sources %v: want the QKV projection on the BF16 table", b.Sources)
	}
}

// The catalogue's listed checkpoint carries its own quantization; another re-publication
// resolves to the base model, for the caller to quantize as vLLM would online.
func TestLookupCheckpoint(t *testing.T) {
	m, err := LookupHF("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "llama-4-scout" || m.Weights != WeightsFP8 || !m.AttentionBF16 {
		t.Fatalf("listed checkpoint: %s weights %s attention BF16 %v", m.Name, m.Weights, m.AttentionBF16)
	}
	base, err := LookupHF("meta-llama/Llama-4-Scout-17B-16E-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	online, err := base.Quantize("fp8")
	if err != nil {
		t.Fatal(err)
	}
	if online.AttentionBF16 || base.Weights != WeightsBF16 {
		t.Fatalf("base %s, online fp8 attention BF16 %v: --quantization fp8 quantizes attention too", base.Weights, online.AttentionBF16)
	}
	if m.WeightBytes() <= online.WeightBytes() {
		t.Errorf("checkpoint %d bytes, online FP8 %d: the checkpoint keeps attention in BF16", m.WeightBytes(), online.WeightBytes())
	}
	other, err := LookupHF("RedHatAI/Llama-3.1-8B-Instruct-FP8-dynamic")
	if err != nil {
		t.Fatal(err)
	}
	if other.Name != "llama-3.1-8b" || other.Weights != WeightsBF16 || other.AttentionBF16 {
		t.Errorf("unlisted re-publication: %s weights %s attention BF16 %v", other.Name, other.Weights, other.AttentionBF16)
	}
}
