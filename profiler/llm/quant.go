package llm

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/kerneltab"
)

// WeightDType is the dtype a model's linear layers run in, named as vLLM's --quantization
// names the method ("" for the checkpoint's BF16).
type WeightDType string

// The weight dtypes the step model times (from the measured tables' dtypes).
const (
	WeightsBF16  WeightDType = ""
	WeightsFP8   WeightDType = "fp8"   // per-tensor FP8 weights, dynamic FP8 activations
	WeightsMXFP4 WeightDType = "mxfp4" // MXFP4 routed experts, BF16 elsewhere (gpt-oss)
	WeightsNVFP4 WeightDType = "nvfp4" // NVFP4 weights and activations (Blackwell)
)

// Quantizations are the values Quantize and `--quantization` take ("auto": the
// checkpoint's own dtype).
var Quantizations = []string{"auto", "bf16", "fp8", "mxfp4", "nvfp4"}

// fp4Bytes is one 4-bit weight with its block scales (one 8-bit scale per 16 or 32
// weights): about 4.25–4.5 bits.
const fp4Bytes = 0.53

// String is the dtype's name, "bf16" for the unquantized one.
func (w WeightDType) String() string {
	if w == WeightsBF16 {
		return "bf16"
	}
	return string(w)
}

// Quantize returns m with its linear layers in q ("auto" or "": unchanged; "bf16": the
// unquantized weights, for a BF16 checkpoint only). FP8 may quantize a BF16 checkpoint
// online, as vLLM's --quantization fp8 does; MXFP4 needs a mixture-of-experts model (it
// quantizes the experts); a quantized checkpoint cannot be run at another dtype.
func (m Model) Quantize(q string) (Model, error) {
	q = strings.ToLower(strings.TrimSpace(q))
	switch q {
	case "", "auto":
		return m, nil
	case "bf16", "bfloat16":
		if m.Weights != WeightsBF16 {
			return m, fmt.Errorf("quantization bf16: %s is a %s checkpoint", m.Name, m.Weights)
		}
		return m, nil
	}
	if !slices.Contains(Quantizations, q) {
		return m, fmt.Errorf("quantization %q: must be one of %s", q, strings.Join(Quantizations, ", "))
	}
	w := WeightDType(q)
	if m.Weights != WeightsBF16 && m.Weights != w {
		return m, fmt.Errorf("quantization %s: %s is a %s checkpoint (it runs as %s only)", q, m.Name, m.Weights, m.Weights)
	}
	if w == WeightsMXFP4 && m.MoE == nil {
		return m, fmt.Errorf("quantization mxfp4: quantizes experts; %s is a dense model", m.Name)
	}
	m.Weights = w
	return m, nil
}

// CheckWeights refuses a weight dtype the GPU cannot run: FP4 (NVFP4) needs Blackwell's
// FP4 tensor cores; FP8 needs FP8 tensor cores (Ada, Hopper, Blackwell) or vLLM's
// weight-only FP8 kernels on Ampere; nothing quantized runs before Ampere.
func CheckWeights(w WeightDType, g gpus.Spec) error {
	switch w {
	case WeightsBF16:
		return nil
	case WeightsNVFP4:
		if g.Arch != "blackwell" {
			return fmt.Errorf("quantization nvfp4: needs a Blackwell GPU (FP4 tensor cores); %s is %s", g.Name, g.Arch)
		}
	case WeightsFP8, WeightsMXFP4:
		if !slices.Contains([]string{"ampere", "ada", "hopper", "blackwell"}, g.Arch) {
			return fmt.Errorf("quantization %s: needs an Ampere or newer GPU; %s is %s", w, g.Name, g.Arch)
		}
	}
	return nil
}

// gemmDType is the measured-table dtype of the decoder's dense linear layers (attention
// projections, dense and shared-expert MLPs): MXFP4 checkpoints keep those in BF16.
func (w WeightDType) gemmDType() kerneltab.DType {
	switch w {
	case WeightsFP8:
		return kerneltab.FP8
	case WeightsNVFP4:
		return kerneltab.NVFP4
	}
	return kerneltab.BF16
}

// moeDType is the measured-table dtype of m's fused expert layer (block-scaled FP8 for a
// DeepSeek-style checkpoint).
func (m Model) moeDType() kerneltab.DType {
	if m.Weights == WeightsFP8 && m.BlockFP8 {
		return kerneltab.FP8Block
	}
	return m.Weights.moeDType()
}

// moeDType is the measured-table dtype of the fused expert layer.
func (w WeightDType) moeDType() kerneltab.DType {
	switch w {
	case WeightsFP8:
		return kerneltab.FP8
	case WeightsNVFP4:
		return kerneltab.NVFP4
	case WeightsMXFP4:
		return kerneltab.MXFP4
	}
	return kerneltab.BF16
}

// attentionModules are the names one layer's attention projections go by in a checkpoint:
// grouped-query attention's (and the fused qkv_proj some loaders use) and latent
// attention's, under the plain and the multimodal wrapper's prefixes.
func (m Model) attentionModules(layer int) []string {
	projs := []string{"q_proj", "k_proj", "v_proj", "o_proj"}
	if m.MLA != nil {
		projs = []string{"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"}
		if m.MLA.QLoraRank == 0 {
			projs = []string{"q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"}
		}
	}
	var out []string
	for _, prefix := range []string{"model.layers", "language_model.model.layers"} {
		for _, p := range projs {
			out = append(out, fmt.Sprintf("%s.%d.self_attn.%s", prefix, layer, p))
		}
	}
	return out
}

// ignoreRule is one entry of a quantization_config's list of modules left unquantized,
// in the forms the formats use: "re:" and a regular expression matched from the name's
// start (compressed-tensors' ignore), a glob (ModelOpt's exclude_modules), a module class
// ("Llama4TextAttention": attention modules), a dotted module name (it and its children:
// vLLM's ignored_layers) or a bare word matched anywhere in the name (Hugging Face's
// modules_to_not_convert).
type ignoreRule struct {
	re   *regexp.Regexp
	text string
}

func parseIgnoreRule(s string) (ignoreRule, error) {
	if expr, ok := strings.CutPrefix(s, "re:"); ok {
		re, err := regexp.Compile("^(?:" + expr + ")")
		if err != nil {
			return ignoreRule{}, fmt.Errorf("not a regular expression: %v", err)
		}
		return ignoreRule{re: re}, nil
	}
	if strings.ContainsAny(s, "*?[") {
		if _, err := path.Match(s, ""); err != nil {
			return ignoreRule{}, fmt.Errorf("not a glob: %v", err)
		}
	}
	return ignoreRule{text: s}, nil
}

// matches reports whether the rule leaves module name (an attention projection) unquantized.
func (r ignoreRule) matches(name string) bool {
	s := r.text
	switch {
	case r.re != nil:
		return r.re.MatchString(name)
	case strings.ContainsAny(s, "*?["):
		ok, _ := path.Match(s, name)
		return ok
	case !strings.Contains(s, ".") && strings.HasSuffix(s, "Attention"):
		return true // a class name: these names are all attention modules
	case strings.Contains(s, "."):
		return name == s || strings.HasPrefix(name, s+".")
	}
	return s != "" && strings.Contains(name, s)
}

// attentionUnquantized reports whether rules leave every layer's attention projections
// unquantized (under one of the two prefixes): the checkpoint then runs them in BF16 while
// its other linear layers are quantized, as llm-compressor's Llama-4 and mixture-of-experts
// FP8 recipes publish them ("re:.*self_attn" in their ignore lists). Part of the layers is
// not enough: the step model times one dtype for every layer's projections.
func (m Model) attentionUnquantized(rules []ignoreRule) bool {
	if len(rules) == 0 || m.Layers == 0 {
		return false
	}
	// Layers past the first checkedLayers (and the last) are named as those are: a config
	// may state up to 2^24 layers, and each check runs every rule on every name.
	for l := 0; l < m.Layers; l++ {
		if l >= checkedLayers && l < m.Layers-1 {
			continue
		}
		names := m.attentionModules(l)
		half := len(names) / 2
		covered := func(ns []string) bool {
			for _, n := range ns {
				if !slices.ContainsFunc(rules, func(r ignoreRule) bool { return r.matches(n) }) {
					return false
				}
			}
			return true
		}
		if !covered(names[:half]) && !covered(names[half:]) {
			return false
		}
	}
	return true
}

// checkedLayers bounds the layers attentionUnquantized matches the rules against, beyond the
// last one: more than any published decoder has.
const checkedLayers = 256

// attnDType is the measured-table dtype of the attention projections: BF16 where the
// checkpoint leaves them unquantized.
func (m Model) attnDType() kerneltab.DType {
	if m.AttentionBF16 {
		return kerneltab.BF16
	}
	return m.Weights.gemmDType()
}
