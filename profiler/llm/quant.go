package llm

import (
	"fmt"
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
