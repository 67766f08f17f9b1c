package llm

import (
	"math"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
)

// KVMemory is the KV cache one engine allocates, term by term, as vLLM sizes it at start-up
// (its worker's determine_available_memory, then the KV cache config: LLM engine digest
// §4): of each GPU's memory, the share gpu_memory_utilization allows, less the weights on
// that rank and the rotary-embedding table, less the activation peak of a profiling
// forward at max_num_batched_tokens, less the memory outside PyTorch's allocator (NCCL and
// cuBLAS workspaces, the custom all-reduce buffers), less the CUDA-graph pool; what is left, in whole blocks of
// BlockTokens tokens of every layer's K and V on that rank. vLLM takes the smallest rank's
// figure, and tensor parallelism gives every rank the same shard, so one rank's is the
// engine's.
type KVMemory struct {
	GPUBytes    int64   `json:"gpu_bytes"`
	Utilization float64 `json:"gpu_memory_utilization"`
	// WeightsPerGPU is the model's weights over the tensor-parallel degree.
	WeightsPerGPU int64 `json:"weights_per_gpu_bytes"`
	// RopeTable is the rotary-embedding table every GPU holds whole beside its weights
	// (Model.RopePositions; vLLM's "model loading" memory counts it).
	RopeTable int64 `json:"rope_table_bytes"`
	// ActivationPeak is the larger of the profiling forward's live activations at
	// BatchedTokens tokens and the dummy sampler pass's top-k/top-p buffers at MaxSeqs
	// sequences over the vocabulary.
	ActivationPeak int64 `json:"activation_peak_bytes"`
	BatchedTokens  int   `json:"max_num_batched_tokens"`
	MaxSeqs        int   `json:"max_num_seqs"`
	NonTorch       int64 `json:"non_torch_bytes"`
	CUDAGraphs     int64 `json:"cuda_graph_bytes"`
	// KVBytes is what is left for the KV cache on each GPU.
	KVBytes int64 `json:"kv_bytes_per_gpu"`
	// BytesPerTokenPerGPU is one token's K and V of every layer on one rank.
	BytesPerTokenPerGPU int64 `json:"kv_bytes_per_token_per_gpu"`
	BlockTokens         int   `json:"block_size"`
	Blocks              int64 `json:"blocks"`
	// Tokens is Blocks × BlockTokens: the engine's KV capacity. Under a hybrid layout
	// (Groups), Blocks is the pool's blocks of Groups.LayersPerGroup layers each and Tokens
	// is Blocks over the group count × BlockTokens, as vLLM reports it.
	Tokens int64                `json:"tokens"`
	Groups *formats.LLMKVGroups `json:"kv_groups,omitempty"`
}

// Memory outside the model's tensors [ours, from vLLM's start-up logs' orders of
// magnitude]: half a GiB of NCCL, cuBLAS and custom all-reduce workspaces per GPU (a
// quarter more under tensor parallelism, for the collectives' buffers), and half a GiB of
// CUDA-graph pool for the default capture sizes.
const (
	nonTorchBytes   = 512 << 20
	nonTorchTPBytes = 128 << 20
	cudaGraphBytes  = 512 << 20
)

// kvBlockTokens is vLLM's default KV block size.
const kvBlockTokens = 16

// KVBudget is the KV memory of model m on tp GPUs of type g under vLLM's default engine
// settings for the GPU (formats.DefaultBatchedTokens), with a BF16 cache or, fp8, an FP8
// one (--kv-cache-dtype fp8: one byte an element).
func KVBudget(m Model, g gpus.Spec, tp int, fp8 bool) KVMemory {
	batched, seqs := formats.DefaultBatchedTokens(g.Name)
	return KVBudgetWith(m, g, tp, fp8, KVSettings{BatchedTokens: batched, MaxSeqs: seqs})
}

// KVSettings are the engine settings the KV budget depends on, as vLLM names them; a zero
// field is vLLM's default (gpu_memory_utilization 0.9, block_size 16; the token and
// sequence budgets have no default here: the caller's engine gives them).
type KVSettings struct {
	BatchedTokens int     // max_num_batched_tokens: the profiling forward's rows
	MaxSeqs       int     // max_num_seqs: the dummy sampler pass's rows
	Utilization   float64 // gpu_memory_utilization
	BlockTokens   int     // block_size
	// NoHybrid: vLLM's hybrid KV cache manager is off (a KV connector runs, as for
	// kv_offload_bytes; or --disable-hybrid-kv-cache-manager), so a sliding-window model's
	// every layer holds every token in one group.
	NoHybrid bool
	// Version is the vLLM release (zero: formats.DefaultVLLMVersion): whether the hybrid
	// manager runs for chunked local attention depends on it (Model.KVGroups).
	Version formats.VLLMVersion
}

// version is s.Version, or the default release.
func (s KVSettings) version() formats.VLLMVersion {
	if s.Version.Minor == 0 {
		return (*formats.LLMEngine)(nil).Version()
	}
	return s.Version
}

// KVBudgetWith is KVBudget under the engine settings s: the budget a server started with
// those flags allocates.
func KVBudgetWith(m Model, g gpus.Spec, tp int, fp8 bool, s KVSettings) KVMemory {
	if s.Utilization <= 0 {
		s.Utilization = memUtil
	}
	if s.BlockTokens <= 0 {
		s.BlockTokens = kvBlockTokens
	}
	k := KVMemory{
		GPUBytes: g.MemoryBytes, Utilization: s.Utilization,
		WeightsPerGPU: m.WeightBytes() / int64(tp),
		RopeTable:     m.ropeTableBytes(),
		BatchedTokens: s.BatchedTokens, MaxSeqs: s.MaxSeqs,
		NonTorch:    nonTorchBytes,
		CUDAGraphs:  cudaGraphBytes,
		BlockTokens: s.BlockTokens,
	}
	if tp > 1 {
		k.NonTorch += nonTorchTPBytes
	}
	k.ActivationPeak = activationPeak(m, tp, s.BatchedTokens, s.MaxSeqs)
	k.BytesPerTokenPerGPU = m.kvBytesPerTokenTP(tp) / int64(tp) * kvElemBytes(fp8) / 2
	free := int64(math.Floor(k.Utilization*float64(k.GPUBytes))) - k.WeightsPerGPU - k.RopeTable - k.ActivationPeak - k.NonTorch - k.CUDAGraphs
	if free <= 0 || k.BytesPerTokenPerGPU <= 0 {
		return k
	}
	k.KVBytes = free
	k.Blocks = free / (k.BytesPerTokenPerGPU * int64(k.BlockTokens))
	k.Tokens = k.Blocks * int64(k.BlockTokens)
	if g := m.KVGroups(s.version()); g != nil && !s.NoHybrid {
		// get_kv_cache_config_from_groups: LayersPerGroup tensors, each shared by one layer
		// of every group, of free/LayersPerGroup bytes; a block is a page of one layer. The
		// start-up log's "GPU KV cache size" is the blocks over the groups, in tokens.
		perLayer := k.BytesPerTokenPerGPU / int64(m.Layers)
		k.Groups = g
		k.Blocks = free / (perLayer * int64(k.BlockTokens) * int64(g.LayersPerGroup))
		k.Tokens = k.Blocks / int64(g.Groups()) * int64(k.BlockTokens)
	}
	return k
}

// activationPeak is the profiling run's peak on one rank (vLLM's gpu_model_runner
// profile_run: the forward at max_num_batched_tokens, then _dummy_sampler_run on one row a
// sequence; the torch allocator's peak is the larger of the two). The forward over tokens
// BF16 rows holds the residual stream and the layer's input (2 × hidden), and at the MLP
// the fused gate/up output (2 × intermediate/tp) with the activation's output
// (intermediate/tp) — the largest layer-local tensors. The sampler pass holds seqs rows of
// the whole vocabulary (the LM head gathers it on every rank) in samplerBytesPerLogit bytes
// an entry.
func activationPeak(m Model, tp, tokens, seqs int) int64 {
	fwd := 2 * float64(tokens) * (2*float64(m.Hidden) + 3*float64(m.Intermediate/tp))
	sampler := samplerBytesPerLogit * float64(seqs) * float64(m.Vocab)
	return int64(max(fwd, sampler))
}

// samplerBytesPerLogit is what the dummy sampler pass keeps live per (sequence, vocabulary
// entry) at its peak, term by term from vLLM's code: _dummy_sampler_run asks for top-k and
// top-p on every row, so TopKTopPSampler.forward_native (FlashInfer's sampler is opt-in)
// runs apply_top_k_top_p, whose logits.sort along the vocabulary is the high-water mark.
// Live there: the LM head's BF16 logits (2 B, still referenced by the runner), the
// sampler's FP32 copy (4), the sort's outputs — values (4) and int64 indices (8) — its
// int64 index input (8) and the radix sort's alternate key/value buffers (4 + 8). Checked
// against vLLM's own "peak activation" lines at 1,024 sequences on H100, where the sampler
// dominates: Llama-3.1-8B 4.76 GiB (this gives 4.65), Qwen3-0.6B 5.56 (5.50), gpt-oss-20b
// 7.38 (7.28), Llama-3.3-70B at TP 2 4.84 (4.65) (llm-d-benchmark's
// config_explorer/empirical-vllm-memory-results.md).
const samplerBytesPerLogit = 2 + 4 + (4 + 8) + 8 + (4 + 8)
