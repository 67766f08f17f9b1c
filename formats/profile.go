package formats

import (
	"math"
	"strings"

	"github.com/plan-dev/plan/internal/base/gpucat"
)

// Profile holds measured or estimated latencies of one or more models (DNNs split into
// blocks, and LLMs) on GPU types. It is what `plan profile` writes and `plan solve` reads.
type Profile struct {
	TypeMeta
	Metadata Metadata       `json:"metadata"`
	Models   []ModelProfile `json:"models,omitempty"`
	LLMs     []LLMProfile   `json:"llms,omitempty"`
}

// ModelProfile describes one DNN: its layers (used for pre-partitioning), the blocks it was
// grouped into, the bytes crossing every cut between blocks, and latency tables.
type ModelProfile struct {
	Name string `json:"name"`
	// Backend that produced the numbers: onnx, roofline, trt or import.
	Backend string `json:"backend"`
	// Source is the ONNX file, zoo name or trtexec export the profile came from.
	Source string `json:"source,omitempty"`
	// Device the measured backends ran on (cpu, cuda:0); empty for analytic profiles.
	Device string `json:"device,omitempty"`
	// InputShape is the per-sample input shape (batch dimension excluded).
	InputShape []int64 `json:"input_shape,omitempty"`
	// MemoryBytes is the weight memory of the whole model.
	MemoryBytes int64 `json:"memory_bytes"`
	// PartsMemoryBytes lists memory per GPU for models that span several GPUs (CascadeServe).
	PartsMemoryBytes []int64 `json:"parts_memory_bytes,omitempty"`
	// Partition names the pre-partitioning method (greedy or min-traffic) and its bounds.
	Partition *PartitionInfo `json:"partition,omitempty"`
	Layers    []Layer        `json:"layers,omitempty"`
	Blocks    []Block        `json:"blocks"`
	// CutBytes[c-1] is the size at batch 1 (fp16) of every tensor live across cut c, the cut
	// between block c-1 and block c; len = len(Blocks)-1. Transfer is linear in batch.
	CutBytes []int64 `json:"cut_bytes"`
	// Latency holds one entry per (GPU type, vGPU level, batch).
	Latency []LatencyEntry `json:"latency"`
	// Fit is what FitProfile did to the measured latencies: "none" (planned as measured),
	// "outliers" (the values that differ from raw_block_us and raw_total_us replaced points off
	// the isotonic fit of their neighbours; every other value as measured), "" (not fitted:
	// a profile file as written). Plans of earlier versions may hold "monotone" (a whole-curve
	// fit, FitMonotone).
	Fit string `json:"fit,omitempty"`
}

// PartitionInfo records how layers were grouped into blocks.
type PartitionInfo struct {
	Method       string  `json:"method"` // greedy | min-traffic
	Blocks       int     `json:"blocks"` // requested N (the result may have fewer)
	LowerBound   float64 `json:"lower_bound,omitempty"`
	UpperBound   float64 `json:"upper_bound,omitempty"`
	ReferenceGPU string  `json:"reference_gpu,omitempty"`
}

// Layer is one operator (or fused group) in topological order.
type Layer struct {
	Name string `json:"name"`
	Op   string `json:"op"`
	// FLOPs and Bytes at batch 1 (analytic; 0 when unknown).
	FLOPs float64 `json:"flops,omitempty"`
	Bytes float64 `json:"bytes,omitempty"`
	// ParamBytes is the weight size of this layer.
	ParamBytes int64 `json:"param_bytes,omitempty"`
	// OutputBytes is the fp16 size at batch 1 of the layer's outputs.
	OutputBytes int64 `json:"output_bytes,omitempty"`
	// LatencyUs is the latency per GPU type (or "cpu") at the reference batch.
	LatencyUs map[string]float64 `json:"latency_us,omitempty"`
}

// Block is a contiguous range [FirstLayer, EndLayer) of layers, the unit the planner cuts at.
type Block struct {
	FirstLayer  int   `json:"first_layer"`
	EndLayer    int   `json:"end_layer"`
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
}

// LatencyEntry gives per-block latency for one GPU type, vGPU level and batch size.
// VGPU v means the block runs on a 1/v slice while all v slices of the GPU run the same block
// concurrently, so interference is inside the number (as PPipe profiles with MPS).
type LatencyEntry struct {
	GPU   string `json:"gpu"`
	VGPU  int    `json:"vgpu"`
	Batch int    `json:"batch"`
	// BlockUs is the median latency of each block, len = len(Blocks).
	BlockUs []float64 `json:"block_us"`
	// P90Us and CV are optional dispersion statistics from measured backends.
	P90Us []float64 `json:"p90_us,omitempty"`
	CV    []float64 `json:"cv,omitempty"`
	// TotalUs is the whole-model latency when measured as one session (0 = not measured).
	TotalUs float64 `json:"total_us,omitempty"`
	// RawBlockUs and RawTotalUs are the measured values of an entry where the fit replaced an
	// outlier (ModelProfile.Fit): the values of BlockUs and TotalUs that differ from them are
	// the ones planned on instead. Empty when the entry is planned on as measured.
	RawBlockUs []float64 `json:"raw_block_us,omitempty"`
	RawTotalUs float64   `json:"raw_total_us,omitempty"`
}

// LLMProfile is one LLM on one GPU configuration as the LLM engine model reads it
// (dataplane/llm: prefill, decode and iteration times, KV memory, swap costs) and LLM
// planners size by: shared LLM vocabulary, not one system's (QLM's planner, the deployment
// search, `plan simulate --llm`'s engine replay and the LLM benches all read it).
type LLMProfile struct {
	Model    string  `json:"model"`
	GPU      string  `json:"gpu"`
	GPUCount int     `json:"gpu_count"`
	Backend  string  `json:"backend"` // roofline | import
	ParamsB  float64 `json:"params_billion"`
	// WeightBytes is the model's weight memory across all its GPUs.
	WeightBytes int64 `json:"weight_bytes"`
	// PrefillUsPerToken and PrefillBaseUs give prefill time = base + per_token·prompt tokens.
	PrefillBaseUs     float64 `json:"prefill_base_us"`
	PrefillUsPerToken float64 `json:"prefill_us_per_token"`
	// DecodeUsPerToken is the time of one decode iteration at the average running batch.
	DecodeUsPerToken float64 `json:"decode_us_per_token"`
	// ThroughputTokensPerS is the saturated decode throughput Θ.
	ThroughputTokensPerS float64 `json:"throughput_tokens_per_s"`
	KVBytesPerToken      int64   `json:"kv_bytes_per_token"`
	KVCapacityTokens     int64   `json:"kv_capacity_tokens"`
	AvgBatch             float64 `json:"avg_batch"`
	// Epsilon = measured decode time / (O·d), the estimator's correction factor.
	Epsilon float64 `json:"epsilon,omitempty"`
	// LoadColdUs (disk→GPU) and LoadWarmUs (CPU→GPU) model swap costs.
	LoadColdUs   float64 `json:"load_cold_us"`
	LoadWarmUs   float64 `json:"load_warm_us"`
	HostLinkGBps float64 `json:"host_link_gbps,omitempty"`
	// Iteration is the piecewise-linear forward-time model of one engine iteration (our
	// simulator's, the form vLLM simulators fit from measurements); nil = derived from the
	// scalar prefill and decode fields above.
	Iteration *LLMIteration `json:"iteration,omitempty"`
	// HFModel is the model's id for the engine (a Hugging Face repository such as
	// mistralai/Mistral-7B-Instruct-v0.2, or a local path): what `plan export` passes as
	// vLLM's model argument; Model is the name plans and classes use.
	HFModel string `json:"hf_model,omitempty"`
	// Engine holds the engine settings of every instance running this (model, GPU), in
	// vLLM's flag names (LLM engine digest §4); nil = vLLM's defaults (LLMEngine).
	// `plan export` writes the same values as the engine's arguments.
	Engine *LLMEngine `json:"engine,omitempty"`
	// KVGroups is the KV layout of a model whose layers mix full and sliding-window
	// attention (gpt-oss, Gemma-2/3), as vLLM's hybrid KV cache manager lays it out; nil:
	// every layer keeps every token (one group).
	KVGroups *LLMKVGroups `json:"kv_groups,omitempty"`
	// StepTimes says where an analytic profile's step times come from: "measured: ..." (the
	// GPU's published kernel tables) or "estimated: ..." (a roofline calibrated on the
	// nearest measured architecture, with its leave-one-GPU-out error band).
	StepTimes string `json:"step_times,omitempty"`
	// WeightDType is the dtype the model's linear layers run in (bf16, fp8, mxfp4, nvfp4;
	// "" = bf16): the checkpoint's own, or vLLM's online --quantization (Engine.Quantization).
	// Its step times and weight_bytes follow it.
	WeightDType string `json:"weight_dtype,omitempty"`
	// RoutedExperts is a mixture-of-experts model's routed experts per MoE layer (0: a dense
	// model). The expected-error band reads it for the regime (dense or mixture-of-experts)
	// of a model the catalogue does not name (a config.json a user brought).
	RoutedExperts int `json:"routed_experts,omitempty"`
	// Calibration records the measured run the iteration curves were corrected to fit
	// (`plan profile --calibrate`; nil = not calibrated). The curves above are the corrected
	// ones; nothing reads this block but people and `plan validate`.
	Calibration *LLMCalibration `json:"calibration,omitempty"`
}

// LLMKVGroups is a hybrid-attention model's KV layout under vLLM's hybrid KV cache manager
// (vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size): the layers of
// each attention type are split into groups of LayersPerGroup layers (the smaller type's
// count, or the larger's where it is under 1.5 times the smaller; the last group of a type
// padded), each group with its own block table, and every group's blocks come from one pool
// of KV blocks, a block holding block_size tokens of LayersPerGroup layers. A request holds
// in each full-attention group a block per block_size tokens it has, and in each
// sliding-window group only the blocks its last SlidingWindow tokens span (vLLM frees the
// rest as the window moves). kv_capacity_tokens is what vLLM's start-up log reports for
// such a pool: its blocks over the group count, in tokens. vLLM turns the manager off where
// a KV connector runs (engine.kv_offload_bytes): every group then holds every token.
// Chunked groups are Llama-4's chunked local attention layers (vLLM's
// ChunkedLocalAttentionManager, on by default from VLLMChunkedHybridMinor): a request holds
// in each only the blocks of its current AttentionChunk-token chunk, the earlier chunks'
// blocks freed as the next one starts.
type LLMKVGroups struct {
	Full           int `json:"full"`
	Sliding        int `json:"sliding"`
	SlidingWindow  int `json:"sliding_window"`
	Chunked        int `json:"chunked,omitempty"`
	AttentionChunk int `json:"attention_chunk,omitempty"`
	LayersPerGroup int `json:"layers_per_group"`
}

// Groups is the number of KV cache groups.
func (g *LLMKVGroups) Groups() int { return g.Full + g.Sliding + g.Chunked }

// LLMEngine are the engine settings of an LLM instance, named as vLLM's flags (LLM engine
// digest §4). Zero values take vLLM V1's defaults for its OpenAI server
// (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults): max_num_batched_tokens 2048
// and max_num_seqs 256, or 8192 and 1024 on GPUs of 70 GiB and more other than the A100
// (H100, H200, B200, MI300X: DefaultBatchedTokens asks the GPU catalogue); block_size 16; chunked
// prefill on; one partial prefill at a time.
type LLMEngine struct {
	// MaxNumBatchedTokens is the token budget of one engine step (B).
	MaxNumBatchedTokens int `json:"max_num_batched_tokens,omitempty"`
	// MaxNumSeqs is the sequence budget: the most running requests (S).
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
	// BlockSize is the KV allocation granularity in tokens.
	BlockSize int `json:"block_size,omitempty"`
	// EnableChunkedPrefill: a prompt longer than the step's budget left is computed in
	// chunks (nil = true, vLLM V1). Off: a prompt is admitted only whole, and one longer than
	// max_num_batched_tokens is refused at arrival.
	EnableChunkedPrefill *bool `json:"enable_chunked_prefill,omitempty"`
	// MaxNumPartialPrefills is how many requests may be mid-prompt at once (0 = 1). Above
	// 1 a step splits its token budget evenly among the prefills it can schedule (k of them,
	// each chunk at most max_num_batched_tokens / k, as vLLM); vLLM's
	// long_prefill_token_threshold is not modelled.
	MaxNumPartialPrefills int `json:"max_num_partial_prefills,omitempty"`
	// MaxModelLen is the most tokens (prompt + max output) of one request (0 = the KV
	// capacity); longer requests are refused (HTTP 400, LLM engine digest §4).
	MaxModelLen int `json:"max_model_len,omitempty"`
	// GPUMemoryUtilization is the fraction of GPU memory the engine takes (exported only:
	// the KV capacity is the profile's kv_capacity_tokens).
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	// SwapSpace is the CPU swap space per GPU in GiB for swapped-out KV (0 = none:
	// preemption recomputes).
	SwapSpace float64 `json:"swap_space,omitempty"`
	// SchedulingPolicy orders the waiting requests: fcfs (arrival; "" = fcfs) or priority
	// (the request's priority, lower first, then arrival). QLM's own policies order their
	// queues themselves; the vLLM baseline follows it.
	SchedulingPolicy string `json:"scheduling_policy,omitempty"`
	// KVCacheDtype is vLLM's --kv-cache-dtype: "auto" ("" = auto: the model's dtype, BF16
	// here) or an FP8 format (fp8, fp8_e4m3, fp8_e5m2), which halves a token's KV bytes —
	// twice the KV capacity — and reads the measured FP8-cache attention kernels.
	KVCacheDtype string `json:"kv_cache_dtype,omitempty"`
	// Quantization is vLLM's --quantization for a BF16 checkpoint quantized as it loads
	// ("" = none: the checkpoint's own weights; fp8: dynamic FP8, half the weight bytes).
	Quantization string `json:"quantization,omitempty"`
	// KVOffloadBytes is CPU memory for a second KV tier behind the prefix cache (vLLM's
	// OffloadingConnector, cpu_bytes_to_use; 0: none): completed blocks are copied there as
	// they are produced, evicted LRU, and a prompt the GPU's cache misses but the tier holds
	// is loaded back over the host link instead of recomputed. Needs prefix caching.
	KVOffloadBytes int64 `json:"kv_offload_bytes,omitempty"`
	// EnableExpertParallel places a mixture-of-experts model's experts whole on the
	// tensor-parallel GPUs (vLLM's --enable-expert-parallel) instead of splitting each.
	EnableExpertParallel bool `json:"enable_expert_parallel,omitempty"`
	// DisableHybridKVCacheManager turns vLLM's hybrid KV cache manager off
	// (--disable-hybrid-kv-cache-manager): a model mixing full with sliding-window or
	// chunked-local layers keeps every token in every layer, one KV group (HybridKVOff).
	DisableHybridKVCacheManager bool `json:"disable_hybrid_kv_cache_manager,omitempty"`
	// EnablePrefixCaching turns automatic prefix caching on or off (llm-engine-2 §2; nil =
	// on, vLLM V1's default: the engine keeps freed full blocks hashed and a later prompt
	// starting with the same tokens skips their prefill). PrefixCaching reads it.
	EnablePrefixCaching *bool `json:"enable_prefix_caching,omitempty"`
	// OutputDelaySteps is how many steps after the one that computed it a token reaches its
	// client (ours; nil = 1, as measured vLLM: the output of step k is processed while step
	// k+1 runs, digest §2.5).
	OutputDelaySteps *int `json:"output_delay_steps,omitempty"`
	// KVAllocation is when a request's KV blocks are taken (llm-engine-2 §1): admission
	// (vLLM V0: all of a prompt's blocks when it is admitted, later chunks take none), chunk
	// (V1: blocks for each scheduled chunk only) or chunk_full_prompt_check (newer V1 with
	// scheduler_reserve_full_isl: per chunk, but admitted only when the whole prompt fits).
	// "" = KVAllocDefault.
	KVAllocation string `json:"kv_allocation,omitempty"`
	// Watermark is the fraction of KV blocks admission keeps free (vLLM's watermark): under
	// admission always (V0, default 0.01), under the chunk rules only while some request
	// runs (V1, default 0). nil = the allocation's default (DefaultWatermark).
	Watermark *float64 `json:"watermark,omitempty"`
	// Release is when a finished request's blocks are free again (llm-engine-2 §1, "What the
	// simulator must do" 5): same_step (V1's synchronous EngineCore.step frees them before
	// the next step is scheduled) or next_step (V0 with async output processing, V1 with
	// async scheduling: the finished request runs one more step and its blocks are free for
	// the step after). "" = ReleaseDefault.
	Release string `json:"release,omitempty"`
	// PreemptionMode is how a preempted request leaves (vLLM's preemption_mode): recompute
	// (its blocks are freed and it recomputes prompt + generated tokens) or swap (its KV goes
	// to CPU memory; needs swap_space). "" = recompute, or swap where swap_space is set, or
	// the profile's iteration.preempt_mode (as before this setting existed).
	PreemptionMode string `json:"preemption_mode,omitempty"`
	// Speculative turns on speculative decoding (llm-deploy-search §5; nil = off): every
	// decode step verifies draft_tokens proposed tokens per sequence.
	Speculative *LLMSpeculative `json:"speculative,omitempty"`
	// VLLMVersion is the vLLM release the profile's step model and engine rules represent
	// ("0.15"; "" = DefaultVLLMVersion; ParseVLLMVersion says which it can model): the
	// release decides whether the scheduler's host work overlaps each step (async
	// scheduling) and its default KV rules (VersionDefaults).
	VLLMVersion string `json:"vllm_version,omitempty"`
}

// LLMSpeculative are the settings of speculative decoding (Leviathan et al., ICML'23 §3;
// llm-deploy-search §5): a draft proposes k tokens per sequence, the target verifies them in
// one step over k + 1 tokens per sequence, and each is accepted with rate α, so a step emits
// (1 − α^(k+1))/(1 − α) tokens per sequence in expectation.
type LLMSpeculative struct {
	// DraftTokens is k, the tokens proposed per sequence and step (>= 1).
	DraftTokens int `json:"draft_tokens"`
	// AcceptanceRate is α, the chance a proposed token is accepted, in [0, 1).
	AcceptanceRate float64 `json:"acceptance_rate"`
	// DraftStepUs is the time of one draft step in µs (at most one of it and
	// DraftCostRatio; neither = free drafting, as n-gram lookup).
	DraftStepUs float64 `json:"draft_step_us,omitempty"`
	// DraftCostRatio is c, a draft step's time over the target's decode step of the same
	// sequences (Leviathan et al. §3).
	DraftCostRatio float64 `json:"draft_cost_ratio,omitempty"`
	// DraftModel is the draft model's Hugging Face id or path (exported only: vLLM's
	// speculative_config.model). Export needs it when drafting costs time; free drafting
	// exports as n-gram prompt lookup.
	DraftModel string `json:"draft_model,omitempty"`
}

// TokensPerStep is the expected tokens a sequence emits per verify step,
// (1 − α^(k+1))/(1 − α) (Leviathan et al. §3, Eq. 1; α = 0.8, k = 4 gives 3.36).
func (s *LLMSpeculative) TokensPerStep() float64 {
	a, k := s.AcceptanceRate, s.DraftTokens
	return (1 - math.Pow(a, float64(k+1))) / (1 - a)
}

// Values of LLMEngine.KVAllocation.
const (
	KVAllocAdmission       = "admission"
	KVAllocChunk           = "chunk"
	KVAllocChunkFullPrompt = "chunk_full_prompt_check"
	// KVAllocDefault follows current vLLM (llm-engine-2 §1, "Newer V1"): V1 allocates per
	// chunk, and scheduler_reserve_full_isl, default True in current SchedulerConfig,
	// admits a request only when its whole prompt fits, which stops the preempt-and-retry
	// loop of a long prompt admitted on its first chunk.
	KVAllocDefault = KVAllocChunkFullPrompt
)

// KVAllocations are the values LLMEngine.KVAllocation may take.
var KVAllocations = []string{KVAllocAdmission, KVAllocChunk, KVAllocChunkFullPrompt}

// Values of LLMEngine.Release.
const (
	ReleaseSameStep = "same_step"
	ReleaseNextStep = "next_step"
	// ReleaseDefault is V1's synchronous step (EngineCore.step: schedule, execute,
	// update_from_output, free), the default of v0.11 (llm-engine-2 §1, "Release"); the
	// one-step lag of async scheduling is the opt-in next_step. The output delay of a token
	// (output_delay_steps) is a separate setting.
	ReleaseDefault = ReleaseSameStep
)

// Releases are the values LLMEngine.Release may take.
var Releases = []string{ReleaseSameStep, ReleaseNextStep}

// Values of LLMEngine.PreemptionMode.
const (
	PreemptionRecompute = "recompute"
	PreemptionSwap      = "swap"
)

// PreemptionModes are the values LLMEngine.PreemptionMode may take.
var PreemptionModes = []string{PreemptionRecompute, PreemptionSwap}

// DefaultWatermark is vLLM's watermark for an allocation rule: 0.01 under admission (V0's
// BlockSpaceManager default), 0 under the chunk rules (V1's SchedulerConfig, llm-engine-2 §1).
func DefaultWatermark(alloc string) float64 {
	if alloc == KVAllocAdmission {
		return 0.01
	}
	return 0
}

// KVCacheDtypes are the values LLMEngine.KVCacheDtype may take (vLLM's --kv-cache-dtype
// choices for CUDA).
var KVCacheDtypes = []string{"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}

// Quantizations are the values LLMEngine.Quantization may take (vLLM's online
// quantization methods the step model times).
var Quantizations = []string{"fp8"}

// WeightDTypes are the values LLMProfile.WeightDType may take.
var WeightDTypes = []string{"bf16", "fp8", "mxfp4", "nvfp4"}

// KVFP8 reports whether the KV cache is stored in FP8 (one byte an element).
func (e *LLMEngine) KVFP8() bool {
	return e != nil && strings.HasPrefix(e.KVCacheDtype, "fp8")
}

// SchedulingPolicies are the values LLMEngine.SchedulingPolicy may take.
var SchedulingPolicies = []string{"fcfs", "priority"}

// PrefixCaching reports whether the engine caches prefixes: on unless enable_prefix_caching
// says false (vLLM V1's default, llm-engine-2 §2); a nil engine block is the defaults.
func (e *LLMEngine) PrefixCaching() bool {
	return e == nil || e.EnablePrefixCaching == nil || *e.EnablePrefixCaching
}

// Chunked reports whether chunked prefill is on (nil settings or flag: vLLM V1's default, on).
func (e *LLMEngine) Chunked() bool {
	return e == nil || e.EnableChunkedPrefill == nil || *e.EnableChunkedPrefill
}

// DefaultBatchedTokens are vLLM V1's OpenAI-server defaults of max_num_batched_tokens and
// max_num_seqs for a GPU type (EngineArgs.get_batch_defaults): 8192 and 1024 on GPUs of
// 70 GiB or more except the A100 (the GPU catalogue decides: gpucat.LargeEngine), else
// 2048 and 256.
func DefaultBatchedTokens(gpu string) (tokens, seqs int) {
	if gpucat.LargeEngine(gpu) {
		return 8192, 1024
	}
	return 2048, 256
}

// LLMIteration models one continuous-batching engine step (LLM engine digest §2.4): a step
// that computes any prompt (or recomputed) tokens takes Prefill evaluated at all the tokens it
// schedules (prompt chunks plus the decodes batched with them); a decode-only step takes
// Decode at its tokens (one per sequence); both plus DecodeUsPerContextToken times the
// context tokens the scheduled sequences' caches hold. Profiles written before mixed steps
// read the same (a prefill step then held prompt tokens only; a decode step's token count is
// its sequence count). Measured points need not be monotone.
type LLMIteration struct {
	// Prefill and Decode are piecewise-linear in tokens: points in increasing token order,
	// linear between them, flat below the first, extending the last segment above the last
	// at its slope clamped at ≥ 0 (never shorter than the last measured step).
	Prefill []PWLPoint `json:"prefill"`
	Decode  []PWLPoint `json:"decode"`
	// DecodeUsPerContextToken is the attention cost per context token of a decode iteration.
	DecodeUsPerContextToken float64 `json:"decode_us_per_context_token,omitempty"`
	// MaxBatchedTokens is the older name of engine.max_num_batched_tokens (the engine
	// setting wins); 0 = vLLM's default.
	MaxBatchedTokens int `json:"max_batched_tokens,omitempty"`
	// MaxSeqs is the older name of engine.max_num_seqs; 0 = vLLM's default.
	MaxSeqs int `json:"max_seqs,omitempty"`
	// BlockTokens is the KV allocation granularity; 0 = 16.
	BlockTokens int `json:"block_tokens,omitempty"`
	// PreemptMode is how a sequence is preempted on this (model, GPU): auto (swap when the KV
	// round trip over the host link beats recomputing and swap space allows, else evict: our
	// rule for QLM's Insight #2, §2.4), swap (KV to CPU memory) or evict (recompute); "" =
	// auto.
	PreemptMode string `json:"preempt_mode,omitempty"`
	// CPUSwapBytes is the CPU memory for swapped KV caches (0 = none: preemption recomputes).
	CPUSwapBytes int64 `json:"cpu_swap_bytes,omitempty"`
}

// PWLPoint is one breakpoint of a piecewise-linear time in µs over a token count.
type PWLPoint struct {
	Tokens int     `json:"tokens"`
	Us     float64 `json:"us"`
}

// PreemptModes are the values LLMIteration.PreemptMode may take.
var PreemptModes = []string{"auto", "swap", "evict"}

// Model returns the model profile with the given name.
func (p *Profile) Model(name string) (*ModelProfile, bool) {
	for i := range p.Models {
		if p.Models[i].Name == name {
			return &p.Models[i], true
		}
	}
	return nil, false
}

// Lookup returns the latency entry for (gpu, vgpu, batch).
func (m *ModelProfile) Lookup(gpu string, vgpu, batch int) (*LatencyEntry, bool) {
	for i := range m.Latency {
		e := &m.Latency[i]
		if e.GPU == gpu && e.VGPU == vgpu && e.Batch == batch {
			return e, true
		}
	}
	return nil, false
}

// GPUs returns the distinct GPU types in the latency table in first-seen order.
func (m *ModelProfile) GPUs() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range m.Latency {
		if !seen[e.GPU] {
			seen[e.GPU] = true
			out = append(out, e.GPU)
		}
	}
	return out
}

// WholeUs is the sum of block latencies of an entry: the model's latency when not cut.
func (e *LatencyEntry) WholeUs() float64 {
	var s float64
	for _, v := range e.BlockUs {
		s += v
	}
	return s
}
