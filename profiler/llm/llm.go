// Package llm builds the LLM profiles QLM plans with (its RCT estimator's inputs, QLM §6, plus
// what the LSOs of §5 cost): prefill time, decode time per token, KV-cache bytes per token and
// capacity, saturated throughput Θ, the average running batch and model load times per model ×
// GPU configuration. The analytic estimate treats decode as reading the weights plus the live
// KV cache once per step (bandwidth-bound) unless the batch makes it compute-bound, and
// prefill as compute-bound; tensor parallelism splits both over the GPUs and adds an
// all-reduce cost per layer. Measured profiles are imported from a formats.Profile file.
package llm

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
)

// Model is an LLM architecture.
type Model struct {
	Name    string
	ParamsB float64 // parameters, billions
	Layers  int
	Hidden  int
	Heads   int
	KVHeads int
	// Context is the maximum sequence length.
	Context int
}

// Models from their published configurations.
var models = []Model{
	{Name: "mistral-7b", ParamsB: 7.24, Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, Context: 32768},
	{Name: "vicuna-13b", ParamsB: 13.0, Layers: 40, Hidden: 5120, Heads: 40, KVHeads: 40, Context: 4096},
	{Name: "llama-2-70b", ParamsB: 69.0, Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, Context: 4096},
}

// DefaultGPUs are the GPU types QLM's evaluation used.
var DefaultGPUs = []string{"A10", "A100", "H100"}

// Names lists the known models.
func Names() []string {
	out := make([]string, len(models))
	for i, m := range models {
		out[i] = m.Name
	}
	sort.Strings(out)
	return out
}

// Lookup finds a model by name, case-insensitively.
func Lookup(name string) (Model, error) {
	for _, m := range models {
		if strings.EqualFold(m.Name, name) {
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("LLM %q: unknown; known LLMs: %s", name, strings.Join(Names(), ", "))
}

// WeightBytes is the fp16 weight size.
func (m Model) WeightBytes() int64 { return int64(m.ParamsB * 1e9 * 2) }

// KVBytesPerToken is K and V, fp16, for every layer and KV head.
func (m Model) KVBytesPerToken() int64 {
	return int64(2 * m.Layers * m.KVHeads * (m.Hidden / m.Heads) * 2)
}

// Serving assumptions [ours], documented so they can be checked against measurements.
const (
	memUtil        = 0.90  // share of GPU memory the engine may use (vLLM's default)
	reserveBase    = 1.5e9 // activations, CUDA graphs: fixed part per GPU (bytes)
	reserveFrac    = 0.07  // ... and the part proportional to GPU memory
	etaMem         = 0.70  // achieved share of HBM/GDDR bandwidth in decode
	etaCompute     = 0.45  // achieved share of FP16 tensor peak in prefill and large batches (unmeasured GPUs)
	stepOverheadUs = 400.0 // scheduler + sampling per decode step
	allReduceUs    = 10.0  // per all-reduce; two per layer under tensor parallelism
	maxSeqs        = 256   // the engine's running-batch cap
	avgReqTokens   = 400.0 // ShareGPT-like request: ~150 prompt + ~250 output tokens
	diskGBps       = 2.0   // NVMe read bandwidth for cold loads
	minKVTokens    = 8192  // a configuration must hold at least two full 4K contexts
	cpuSwapGB      = 16.0  // host memory for swapped KV caches (vLLM's swap_space is 4 GiB per GPU; ×4 GPUs-worth)
)

// measuredCompute is the achieved share of the FP16 tensor peak in prefill where it was
// measured: bf16 prefill of Mistral-7B- and Vicuna-13B-shaped decoders on an H100 SXM
// (scripts/gpu/measure_torch.py, 2026-11-22) ran at 541 and 561 TFLOP/s between 1,024 and
// 4,096 tokens, 0.55–0.57 of 989; with the default 0.45 the roofline's prefill was 25–34%
// slow there, while its decode steps were within 7% (at 512 tokens of context). The H200 has
// the H100's compute.
var measuredCompute = map[string]float64{"H100": 0.55, "H200": 0.55}

// computeShare is etaCompute, or the share measured on g.
func computeShare(g gpus.Spec) float64 {
	if s, ok := measuredCompute[g.Name]; ok {
		return s
	}
	return etaCompute
}

// capacity returns the KV tokens that fit on tp GPUs.
func capacity(m Model, g gpus.Spec, tp int) int64 {
	mem := float64(g.MemoryBytes)
	free := float64(tp)*(memUtil*mem-reserveBase-reserveFrac*mem) - float64(m.WeightBytes())
	if free <= 0 {
		return 0
	}
	return int64(free / float64(m.KVBytesPerToken()))
}

// GPUCount is the smallest power-of-two tensor-parallel degree (≤ 8) whose memory holds the
// weights and at least minKVTokens of KV cache.
func GPUCount(m Model, g gpus.Spec) (int, error) {
	for tp := 1; tp <= 8; tp *= 2 {
		if capacity(m, g, tp) >= minKVTokens {
			return tp, nil
		}
	}
	return 0, fmt.Errorf("LLM %s does not fit 8 × %s", m.Name, g.Name)
}

// StepUs is the analytic time of one decode step with batch sequences whose KV caches
// together hold kvTokens tokens, on tp GPUs.
func StepUs(m Model, g gpus.Spec, tp int, batch int, kvTokens float64) float64 {
	bw := etaMem * g.MemBWGBps * 1e3 // bytes/µs per GPU
	memUs := (float64(m.WeightBytes()) + kvTokens*float64(m.KVBytesPerToken())) / float64(tp) / bw
	peak := computeShare(g) * g.FP16TFLOPS * 1e6 // FLOPs/µs per GPU
	computeUs := 2 * m.ParamsB * 1e9 * float64(batch) / float64(tp) / peak
	t := math.Max(memUs, computeUs) + stepOverheadUs
	if tp > 1 {
		t += 2 * float64(m.Layers) * allReduceUs
	}
	return t
}

// Estimate builds the analytic profile of model on GPU type gpu, on the fewest GPUs that
// hold it (GPUCount).
func Estimate(model, gpu string) (*formats.LLMProfile, error) {
	return EstimateOn(model, gpu, 0)
}

// EstimateOn builds the analytic profile of model on tp GPUs of type gpu (one instance,
// tensor-parallel over them; tp 0: the fewest that hold it, GPUCount). A tp whose memory
// cannot hold the weights and minKVTokens of KV cache is an error.
func EstimateOn(model, gpu string, tp int) (*formats.LLMProfile, error) {
	m, err := Lookup(model)
	if err != nil {
		return nil, err
	}
	g, err := gpus.Lookup(gpu)
	if err != nil {
		return nil, err
	}
	if tp == 0 {
		if tp, err = GPUCount(m, g); err != nil {
			return nil, err
		}
	} else if capacity(m, g, tp) < minKVTokens {
		return nil, fmt.Errorf("LLM %s does not fit %d × %s (weights and %d tokens of KV cache)", m.Name, tp, g.Name, minKVTokens)
	}
	kvCap := capacity(m, g, tp)
	avgBatch := math.Min(maxSeqs, math.Floor(float64(kvCap)/avgReqTokens))
	// At the average running batch the sequences are half-way through on average.
	step := StepUs(m, g, tp, int(avgBatch), avgBatch*avgReqTokens/2)
	peak := computeShare(g) * g.FP16TFLOPS * 1e6 * float64(tp)
	perTok := 2 * m.ParamsB * 1e9 / peak
	base := float64(m.WeightBytes())/float64(tp)/(etaMem*g.MemBWGBps*1e3) + stepOverheadUs
	w := m.WeightBytes()
	return &formats.LLMProfile{
		Model:                m.Name,
		GPU:                  g.Name,
		GPUCount:             tp,
		Backend:              "roofline",
		ParamsB:              m.ParamsB,
		WeightBytes:          w,
		PrefillBaseUs:        round(base),
		PrefillUsPerToken:    round(perTok),
		DecodeUsPerToken:     round(step),
		ThroughputTokensPerS: round(avgBatch / step * 1e6),
		KVBytesPerToken:      m.KVBytesPerToken(),
		KVCapacityTokens:     kvCap,
		AvgBatch:             avgBatch,
		Epsilon:              1,
		LoadColdUs:           round(float64(w) / (diskGBps * 1e3)),
		LoadWarmUs:           round(float64(w) / float64(tp) / (g.HostLinkGBps * 1e3)),
		HostLinkGBps:         g.HostLinkGBps,
		Iteration:            iteration(m, g, tp),
		Engine:               engineDefaults(g.Name),
	}, nil
}

// engineDefaults are vLLM V1's engine settings for the GPU (LLM engine digest §4;
// formats.DefaultBatchedTokens: 8192 tokens and 1024 sequences on H100-class GPUs, 2048 and
// 256 elsewhere; 16-token KV blocks), written as the profile's engine block so the simulator
// and `plan export` run what a default vLLM would.
func engineDefaults(gpu string) *formats.LLMEngine {
	b, seqs := formats.DefaultBatchedTokens(gpu)
	return &formats.LLMEngine{MaxNumBatchedTokens: b, MaxNumSeqs: seqs, BlockSize: 16}
}

// iteration is the piecewise-linear iteration model the emulated instances run (our simulator
// model, formats.LLMIteration): prefill time over the prompt tokens of one iteration and
// decode time over the batch's sequences, both from the roofline (max of weight/KV traffic and
// FLOPs, plus the per-step overhead and tensor-parallel all-reduces), breakpoints where the
// regime can change; the attention traffic of the context is the per-context-token term. The
// prefill curve is exact at its breakpoints and linear in between; the decode curve likewise
// at batch sizes 1…maxSeqs at the typical context.
func iteration(m Model, g gpus.Spec, tp int) *formats.LLMIteration {
	// The budgets are the engine block's (engineDefaults), not the older iteration fields.
	it := &formats.LLMIteration{PreemptMode: "auto", CPUSwapBytes: int64(cpuSwapGB * 1e9)}
	for _, n := range []int{1, 128, 512, 1024, 2048, 4096} {
		// Prefill of n tokens: one pass over the weights, 2·P FLOPs per token.
		it.Prefill = append(it.Prefill, formats.PWLPoint{Tokens: n, Us: round(StepUs(m, g, tp, n, float64(n)/2))})
	}
	bw := etaMem * g.MemBWGBps * 1e3
	it.DecodeUsPerContextToken = math.Round(float64(m.KVBytesPerToken())/float64(tp)/bw*1e6) / 1e6
	// The roofline takes the max of memory and compute time, the iteration model adds the
	// context term: breakpoints are fitted at the typical context (half a request's tokens
	// per sequence), so the two agree there and the context term is the slope around it.
	for _, b := range []int{1, 16, 64, 128, maxSeqs} {
		ctx := float64(b) * avgReqTokens / 2
		us := round(StepUs(m, g, tp, b, ctx) - it.DecodeUsPerContextToken*ctx)
		if n := len(it.Decode); n > 0 {
			us = math.Max(us, it.Decode[n-1].Us) // memory-bound: flat up to rounding
		}
		it.Decode = append(it.Decode, formats.PWLPoint{Tokens: b, Us: us})
	}
	return it
}

// Known reports whether the analytic model knows model and gpu (Estimate can profile them).
func Known(model, gpu string) bool {
	_, errM := Lookup(model)
	_, errG := gpus.Lookup(gpu)
	return errM == nil && errG == nil
}

// EngineProfile is the profile of an engine the analytic model does not know (its model or
// GPU), for a measured step log to fill (WithSteps): the engine's fields only — the model on
// tp GPUs of type gpu, its KV capacity, vLLM's engine defaults for the GPU — and none of the
// planner's (formats.PlannerOnlyLLMFields), so it serves `plan simulate --llm`
// (formats.UseReplay), not `plan solve`.
func EngineProfile(model, gpu string, tp int, kvTokens int64) formats.LLMProfile {
	return formats.LLMProfile{
		Model: model, GPU: gpu, GPUCount: max(tp, 1), Backend: "import", KVCapacityTokens: kvTokens,
		Iteration: &formats.LLMIteration{PreemptMode: "auto"},
		Engine:    engineDefaults(gpu),
	}
}

// EstimateAll profiles every named model on every named GPU, in the given order.
func EstimateAll(modelNames, gpuNames []string) ([]formats.LLMProfile, error) {
	var out []formats.LLMProfile
	for _, m := range modelNames {
		for _, g := range gpuNames {
			p, err := Estimate(m, g)
			if err != nil {
				return nil, err
			}
			out = append(out, *p)
		}
	}
	return out, nil
}

// Import reads measured LLM profiles from a profile document (JSON or YAML) and checks that
// it holds at least one.
func Import(path string) ([]formats.LLMProfile, error) {
	p, err := formats.ReadInto[*formats.Profile](path)
	if err != nil {
		return nil, err
	}
	if len(p.LLMs) == 0 {
		return nil, fmt.Errorf("%s: llms: holds no LLM profiles", path)
	}
	out := make([]formats.LLMProfile, len(p.LLMs))
	for i, l := range p.LLMs {
		if l.Backend == "" || l.Backend == "roofline" {
			l.Backend = "import"
		}
		out[i] = l
	}
	return out, nil
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }
