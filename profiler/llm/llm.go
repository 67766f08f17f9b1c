// Package llm builds the LLM profiles QLM plans with (its RCT estimator's inputs, QLM §6, plus
// what the LSOs of §5 cost): prefill time, decode time per token, KV-cache bytes per token and
// capacity, saturated throughput Θ, the average running batch and model load times per model ×
// GPU configuration. The analytic estimate is a step model of separate terms (stepmodel.go):
// the projection GEMMs (efficiency by shape), attention (prefill by prompt length, decode by
// context), the elementwise kernels, tensor-parallel all-reduces by degree and link, and a
// per-step host overhead, each from profiler/roofline's kernel model calibrated on published
// H100 kernel timings. Measured profiles are imported from a formats.Profile file.
package llm

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/roofline"
)

// Serving assumptions [ours], documented so they can be checked against measurements.
const (
	memUtil        = 0.90  // gpu_memory_utilization: the share of GPU memory the engine may use (vLLM's default)
	stepOverheadUs = 400.0 // scheduler + input preparation + sampling per step (host side; unmeasured)
	maxSeqs        = 256   // the engine's running-batch cap
	avgReqTokens   = 400.0 // ShareGPT-like request: ~150 prompt + ~250 output tokens
	diskGBps       = 2.0   // NVMe read bandwidth for cold loads
	minKVTokens    = 8192  // a configuration must hold at least two full 4K contexts
	cpuSwapGB      = 16.0  // host memory for swapped KV caches (vLLM's swap_space is 4 GiB per GPU; ×4 GPUs-worth)
)

// capacity returns the KV tokens that fit on tp GPUs in a BF16 cache (KVBudget).
func capacity(m Model, g gpus.Spec, tp int) int64 { return KVBudget(m, g, tp, false).Tokens }

// GPUCount is the smallest power-of-two tensor-parallel degree (≤ 8) the model can be
// sharded over whose memory holds the weights and at least minKVTokens of KV cache.
func GPUCount(m Model, g gpus.Spec) (int, error) {
	for tp := 1; tp <= 8; tp *= 2 {
		if m.CheckTP(tp) == nil && capacity(m, g, tp) >= minKVTokens {
			return tp, nil
		}
	}
	return 0, fmt.Errorf("LLM %s does not fit 8 × %s", m.Name, g.Name)
}

// CheckFits refuses a tensor-parallel degree whose GPUs cannot hold the weights and
// minKVTokens of KV cache.
func CheckFits(m Model, g gpus.Spec, tp int) error {
	if c := capacity(m, g, tp); c < minKVTokens {
		return fmt.Errorf("LLM %s does not fit %d × %s: room for %d KV tokens after %.1f GB of weights, want at least %d", m.Name, tp, g.Name, max(c, 0), float64(m.WeightBytes())/1e9, minKVTokens)
	}
	return nil
}

// StepUs is the analytic time of one decode step with batch sequences whose KV caches
// together hold kvTokens tokens, on tp GPUs (the link NVLink where the GPU has it).
func StepUs(m Model, g gpus.Spec, tp int, batch int, kvTokens float64) float64 {
	if batch < 1 {
		batch = 1
	}
	return mustDeployment(m, g, tp).Decode(batch, kvTokens/float64(batch)).Total()
}

// Options choose what EstimateAll profiles beyond models and GPUs.
type Options struct {
	// TP lists the tensor-parallel degrees to profile; empty picks the smallest that fits
	// (GPUCount). Degrees a model cannot be sharded over, or whose GPUs cannot hold it, are
	// skipped and named in Skipped.
	TP []int
	// Link joins the GPUs (LinkAuto: NVLink where the GPU has it, else PCIe).
	Link roofline.Link
	// KVCacheDtype is vLLM's --kv-cache-dtype ("" or "auto": BF16; fp8, fp8_e4m3,
	// fp8_e5m2: an FP8 cache), written to the profiles' engine blocks.
	KVCacheDtype string
	// Models are models given by their shapes (ReadConfig), profiled like the named ones.
	Models []Model
	// Quantization is vLLM's --quantization ("" or auto: the checkpoint's weights; fp8
	// quantizes a BF16 one as it loads), ExpertParallel its --enable-expert-parallel
	// (mixture-of-experts models at TP > 1; others skip it).
	Quantization   string
	ExpertParallel bool
	// Engine are the server's settings (Variant.Engine), for every profile.
	Engine *formats.LLMEngine
}

// Estimate builds the analytic profile of model on GPU type gpu at the smallest
// tensor-parallel degree that fits.
func Estimate(model, gpu string) (*formats.LLMProfile, error) {
	return EstimateTP(model, gpu, 0, roofline.LinkAuto)
}

// EstimateTP builds the analytic profile of model on tp GPUs of type gpu joined by link
// (tp 0: the smallest degree that fits), with a BF16 KV cache.
func EstimateTP(model, gpu string, tp int, link roofline.Link) (*formats.LLMProfile, error) {
	return EstimateKV(model, gpu, tp, link, "")
}

// EstimateKV is EstimateTP with vLLM's --kv-cache-dtype kvDtype ("" or "auto": BF16).
func EstimateKV(model, gpu string, tp int, link roofline.Link, kvDtype string) (*formats.LLMProfile, error) {
	return EstimateMem(model, gpu, tp, link, kvDtype, 0)
}

// EstimateMem is EstimateKV on GPUs of memoryBytes each (a cluster's memory_bytes; 0: the
// GPU type's datasheet memory): the weights and the KV budget must fit what the GPUs have.
func EstimateMem(model, gpu string, tp int, link roofline.Link, kvDtype string, memoryBytes int64) (*formats.LLMProfile, error) {
	if kvDtype != "" && !slices.Contains(formats.KVCacheDtypes, kvDtype) {
		return nil, fmt.Errorf("kv cache dtype %q: must be one of %s", kvDtype, strings.Join(formats.KVCacheDtypes, ", "))
	}
	m, err := Lookup(model)
	if err != nil {
		return nil, err
	}
	return EstimateModel(m, gpu, tp, link, kvDtype, memoryBytes)
}

// EstimateModel is EstimateMem for a model given by its shapes (a catalogue entry, or one
// read from a Hugging Face config.json: ReadConfig).
func EstimateModel(m Model, gpu string, tp int, link roofline.Link, kvDtype string, memoryBytes int64) (*formats.LLMProfile, error) {
	return EstimateWith(m, gpu, tp, Variant{Link: link, KVCacheDtype: kvDtype, MemoryBytes: memoryBytes})
}

// Variant is how one engine runs a model beyond its GPUs: the link joining them, the KV
// cache's dtype, the GPUs' memory (0: the datasheet's), the weights' quantization
// ("" or "auto": the checkpoint's; Model.Quantize) and expert parallelism.
type Variant struct {
	Link           roofline.Link
	KVCacheDtype   string
	MemoryBytes    int64
	Quantization   string
	ExpertParallel bool
	// Engine are the server's own settings (vLLM's flags: max_num_seqs,
	// max_num_batched_tokens, max_model_len, gpu_memory_utilization, block_size, prefix
	// caching, vllm_version; nil or zero fields: vLLM's defaults for the GPU and release).
	// They decide the KV budget (the profiling forward's activation peak, the memory share),
	// the largest CUDA-graph step and the release's per-step overhead, and are the profile's
	// engine block.
	Engine *formats.LLMEngine
	// Corrections, when set, replace the fitted step-model corrections: a fit's candidates
	// (bench/vllmruns), never a user's setting.
	Corrections *Corrections
}

// EstimateWith builds the analytic profile of model m on tp GPUs of type gpu run as v
// (tp 0: the smallest degree that fits). Its engine block states v's settings, so the
// exports start the engine that was timed.
func EstimateWith(m Model, gpu string, tp int, v Variant) (*formats.LLMProfile, error) {
	link, kvDtype, memoryBytes := v.Link, v.KVCacheDtype, v.MemoryBytes
	online := m.Weights == WeightsBF16 && v.Quantization != "" && v.Quantization != "auto" && v.Quantization != "bf16"
	m, err := m.Quantize(v.Quantization)
	if err != nil {
		return nil, err
	}
	if kvDtype != "" && !slices.Contains(formats.KVCacheDtypes, kvDtype) {
		return nil, fmt.Errorf("kv cache dtype %q: must be one of %s", kvDtype, strings.Join(formats.KVCacheDtypes, ", "))
	}
	fp8 := strings.HasPrefix(kvDtype, "fp8")
	g, err := gpus.Lookup(gpu)
	if err != nil {
		return nil, err
	}
	if memoryBytes > 0 {
		g.MemoryBytes = memoryBytes
	}
	if err := CheckWeights(m.Weights, g); err != nil {
		return nil, err
	}
	if v.ExpertParallel && tp == 0 {
		return nil, fmt.Errorf("expert parallelism: needs the tensor-parallel size given")
	}
	// A given degree is judged below, under the variant's engine settings: the KV budget
	// moves with max_num_seqs (vLLM's profiling run samples that many rows).
	if tp == 0 {
		if tp, err = GPUCount(m, g); err != nil {
			return nil, err
		}
	}
	d, err := NewDeployment(m, g, tp, link)
	if err != nil {
		return nil, err
	}
	engine := engineDefaults(g.Name)
	engine.Overlay(v.Engine)
	if v.Engine != nil && v.Engine.VLLMVersion != "" {
		if _, err := formats.ParseVLLMVersion(v.Engine.VLLMVersion); err != nil {
			return nil, err
		}
	}
	version := engine.Version()
	engine.VersionDefaults(version)
	d = d.WithKVCache(fp8).WithEngine(version, engine.MaxNumSeqs)
	if v.Corrections != nil {
		c := *v.Corrections
		d.corr = &c
	}
	if v.ExpertParallel {
		if d, err = d.WithExpertParallel(); err != nil {
			return nil, err
		}
	}
	budget := KVBudgetWith(m, g, tp, fp8, KVSettings{BatchedTokens: engine.MaxNumBatchedTokens, MaxSeqs: engine.MaxNumSeqs,
		Utilization: engine.GPUMemoryUtilization, BlockTokens: engine.BlockSize, NoHybrid: engine.HybridKVOff(), Version: version})
	kvCap := budget.Tokens
	if kvCap < minKVTokens {
		return nil, fmt.Errorf("LLM %s does not fit %d × %s under these engine settings: room for %d KV tokens, want at least %d", m.Name, tp, g.Name, max(kvCap, 0), minKVTokens)
	}
	// The running batch the KV cache holds, within the engine's sequence budget.
	seqCap := float64(maxSeqs)
	if engine.MaxNumSeqs > 0 {
		seqCap = min(seqCap, float64(engine.MaxNumSeqs))
	}
	avgBatch := math.Min(seqCap, math.Floor(float64(kvCap)/avgReqTokens))
	// At the average running batch the sequences are half-way through on average.
	step := d.Decode(int(avgBatch), avgReqTokens/2).Total()
	// Prefill as base + per-token: the base is a one-token prefill (streaming the weights,
	// plus the step overhead), the slope through 2,048 tokens.
	base, p2048 := d.Prefill(1, 0).Total(), d.Prefill(2048, 0).Total()
	perTok := (p2048 - base) / 2048
	w := m.WeightBytes()
	if kvDtype != "" && kvDtype != "auto" {
		engine.KVCacheDtype = kvDtype
	}
	if online {
		engine.Quantization = string(m.Weights)
	}
	engine.EnableExpertParallel = v.ExpertParallel
	weightDType := ""
	if m.Weights != WeightsBF16 {
		weightDType = string(m.Weights)
	}
	routed := 0
	if m.MoE != nil {
		routed = m.MoE.Experts
	}
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
		KVBytesPerToken:      m.KVBytesPerToken() * kvElemBytes(fp8) / 2,
		KVCapacityTokens:     kvCap,
		KVGroups:             budget.Groups,
		AvgBatch:             avgBatch,
		Epsilon:              1,
		LoadColdUs:           round(float64(w) / (diskGBps * 1e3)),
		LoadWarmUs:           round(float64(w) / float64(tp) / (g.HostLinkGBps * 1e3)),
		HostLinkGBps:         g.HostLinkGBps,
		Iteration:            iteration(d, int(avgBatch)),
		Engine:               engine,
		StepTimes:            d.StepTimes(),
		HFModel:              configID(m),
		WeightDType:          weightDType,
		RoutedExperts:        routed,
	}, nil
}

// configID is the engine id a model read from a config.json carries (hf_model); "" for a
// catalogue model, whose id the exports know.
func configID(m Model) string {
	if _, err := Lookup(m.Name); err == nil {
		return ""
	}
	return m.HF
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
// decode time over the batch's sequences, both from the step model (every term, overhead
// included), breakpoints where the regime can change; the decode attention traffic of the
// context is the per-context-token term. The prefill curve is exact at its breakpoints and
// linear in between — up to 8,192 tokens, the H100 engines' token budget, since attention
// makes prefill super-linear beyond 4,096 (llm-engine-2.md, "Measured H100 kernel facts") —;
// the decode curve likewise at batch sizes 1…maxSeqs at the typical context.
func iteration(d Deployment, avgBatch int) *formats.LLMIteration {
	// The budgets are the engine block's (engineDefaults), not the older iteration fields.
	it := &formats.LLMIteration{PreemptMode: "auto", CPUSwapBytes: int64(cpuSwapGB * 1e9)}
	for _, n := range prefillBreakpoints {
		it.Prefill = append(it.Prefill, formats.PWLPoint{Tokens: n, Us: round(d.Prefill(n, 0).Total())})
	}
	it.DecodeUsPerContextToken = math.Round(d.DecodeUsPerContextToken()*1e6) / 1e6
	// Breakpoints are fitted at the typical context (half a request's tokens per sequence),
	// so the step model and the iteration model agree there and the context term is the
	// slope around it.
	// Measured GEMMs step with the tile count (m = 129 costs about what 192 does), so the
	// curve also passes through the average batch the planner reads its decode step at.
	sizes := decodeBreakpoints(d.graphSeqsOrDefault())
	if avgBatch > 1 && !slices.Contains(sizes, avgBatch) {
		sizes = append(sizes, avgBatch)
		slices.Sort(sizes)
	}
	for _, b := range sizes {
		ctx := avgReqTokens / 2
		us := round(d.Decode(b, ctx).Total() - it.DecodeUsPerContextToken*ctx*float64(b))
		if n := len(it.Decode); n > 0 {
			us = math.Max(us, it.Decode[n-1].Us) // memory-bound: flat up to rounding
		}
		it.Decode = append(it.Decode, formats.PWLPoint{Tokens: b, Us: us})
	}
	return it
}

// prefillBreakpoints are the prefill curve's token counts: dense where chunked prefill's
// mixed steps fall (a chunk plus the running decodes, up to the token budget) and where the
// terms change regime (the CUDA-graph sizes up to 512, attention's quadratic growth past
// 4,096), so linear interpolation between them follows the step model: a mixture of
// experts' layer is concave in its tokens (the experts touched saturate), and a sparse
// curve under-counts it between points.
var prefillBreakpoints = []int{1, 16, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192}

// decodeBreakpoints are the decode curve's batch sizes up to seqs (at least maxSeqs):
// vLLM's CUDA-graph sizes below 32, then about 1.5× apart — the touched experts of a
// mixture-of-experts layer grow as E·(1−(1−k/E)^b), concave, so coarse points would read
// a decode step between them too fast.
func decodeBreakpoints(seqs int) []int {
	out := []int{1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256}
	for b := 384; b <= max(seqs, maxSeqs); b += b / 3 {
		out = append(out, b)
	}
	if seqs > maxSeqs && !slices.Contains(out, seqs) {
		out = append(out, seqs)
	}
	slices.Sort(out)
	return out
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

// EstimateOn builds the analytic profile of model on tp GPUs of type gpu (one instance,
// tensor-parallel over them, joined as LinkAuto picks; tp 0: the fewest that hold it). A
// tp whose memory cannot hold the weights and minKVTokens of KV cache is an error.
func EstimateOn(model, gpu string, tp int) (*formats.LLMProfile, error) {
	return EstimateTP(model, gpu, tp, roofline.LinkAuto)
}

// Skipped is a (model, GPU, tensor-parallel degree) EstimateAll left out, and why.
type Skipped struct {
	Model, GPU string
	TP         int
	Reason     error
}

// EstimateAll profiles every named model on every named GPU at every asked degree, in the
// given order. Degrees that cannot serve a model (with Options.TP set), or a model no
// degree up to 8 GPUs holds, are skipped and returned; an error if nothing is left.
func EstimateAll(modelNames, gpuNames []string, opt Options) ([]formats.LLMProfile, []Skipped, error) {
	ms := make([]Model, 0, len(modelNames)+len(opt.Models))
	for _, name := range modelNames {
		m, err := Lookup(name)
		if err != nil {
			return nil, nil, err
		}
		ms = append(ms, m)
	}
	ms = append(ms, opt.Models...)
	var out []formats.LLMProfile
	var skipped []Skipped
	for _, m := range ms {
		for _, g := range gpuNames {
			v := Variant{Link: opt.Link, KVCacheDtype: opt.KVCacheDtype, Quantization: opt.Quantization, Engine: opt.Engine}
			if len(opt.TP) == 0 {
				p, err := EstimateWith(m, g, 0, v)
				if err != nil {
					if _, gerr := gpus.Lookup(g); gerr != nil {
						return nil, nil, gerr
					}
					skipped = append(skipped, Skipped{Model: m.Name, GPU: g, Reason: err})
					continue
				}
				out = append(out, *p)
				continue
			}
			for _, tp := range opt.TP {
				v.ExpertParallel = opt.ExpertParallel && m.CheckEP(tp) == nil
				p, err := EstimateWith(m, g, tp, v)
				if err != nil {
					if _, gerr := gpus.Lookup(g); gerr != nil {
						return nil, nil, gerr
					}
					skipped = append(skipped, Skipped{Model: m.Name, GPU: g, TP: tp, Reason: err})
					continue
				}
				out = append(out, *p)
			}
		}
	}
	if len(out) == 0 {
		if len(skipped) == 0 {
			return nil, nil, fmt.Errorf("no model and GPU to profile")
		}
		return nil, skipped, fmt.Errorf("no (model, GPU, tensor parallel size) combination fits: %v", skipped[0].Reason)
	}
	return out, skipped, nil
}

// Import reads measured LLM profiles from a profile document (JSON or YAML) and checks that
// it holds at least one.
func Import(path string) ([]formats.LLMProfile, error) {
	p, err := formats.ReadInto[*formats.Profile](path, nil)
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
