package llm

import (
	"fmt"
	"strconv"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// RunStats is what a policy that drives LLM engines reports of a run (simulate's LLM
// report): the policy's name, the preemption events of all its engines (vLLM's
// vllm:num_preemptions_total, llm-engine-2 §1 "Counter") and the distinct requests
// preempted, and the engine settings that differ from vLLM's defaults.
type RunStats struct {
	Policy            string
	Preemptions       int64
	PreemptedRequests int64
	Settings          []string
	// PrefixQueries and PrefixHits are the prefix caches' lookups and hits in tokens
	// (Counters.PrefixQueries, PrefixHits; 0 without prefix caching).
	PrefixQueries, PrefixHits int64
	// OffloadQueries and OffloadHits are the CPU offload tiers' lookups and hits in tokens
	// (Counters.OffloadQueries, OffloadHits; 0 without an offload tier).
	OffloadQueries, OffloadHits int64
}

// StatsReporter is implemented by policies that drive LLM engines.
type StatsReporter interface {
	EngineStats() RunStats
}

// RequestReporter is implemented by policies that drive LLM engines and keep, per completed
// request, its prompt tokens found in the prefix cache (Seq.Cached) and its preemptions
// (Seq.Preemptions): what `--requests-out` writes beside each request.
type RequestReporter interface {
	RequestLLM(id dataplane.ReqID) (cached, preemptions int)
}

// NonDefault lists, as "name=value" in formats.LLMEngine's order, the engine settings of m
// that differ from what a profile of the same GPU without settings would run (vLLM V1's
// defaults, formats.LLMEngine): what a report must name for a reader to reproduce the run.
func (m *Model) NonDefault() []string {
	d := NewModel(&formats.LLMProfile{Model: m.Name, GPU: m.Prof.GPU, GPUCount: m.Prof.GPUCount, KVCapacityTokens: m.Prof.KVCapacityTokens})
	var out []string
	add := func(name string, differs bool, v string) {
		if differs {
			out = append(out, name+"="+v)
		}
	}
	itoa := strconv.Itoa
	add("max_num_batched_tokens", m.MaxBatched != d.MaxBatched, itoa(m.MaxBatched))
	add("max_num_seqs", m.MaxSeqs != d.MaxSeqs, itoa(m.MaxSeqs))
	add("block_size", m.Block != d.Block, itoa(m.Block))
	add("enable_chunked_prefill", m.Chunked != d.Chunked, strconv.FormatBool(m.Chunked))
	add("max_num_partial_prefills", m.MaxPartial != d.MaxPartial, itoa(m.MaxPartial))
	add("max_model_len", m.MaxModelLen != d.MaxModelLen, itoa(m.MaxModelLen))
	if e := m.Prof.Engine; e != nil {
		add("swap_space", e.SwapSpace > 0, strconv.FormatFloat(e.SwapSpace, 'g', -1, 64))
		add("enable_prefix_caching", !e.PrefixCaching(), "false")
		add("preemption_mode", e.PreemptionMode != "", e.PreemptionMode)
		add("kv_offload_bytes", e.KVOffloadBytes > 0, strconv.FormatInt(e.KVOffloadBytes, 10))
		add("kv_cache_dtype", e.KVCacheDtype != "" && e.KVCacheDtype != "auto", e.KVCacheDtype)
		add("quantization", e.Quantization != "", e.Quantization)
		add("enable_expert_parallel", e.EnableExpertParallel, "true")
		add("disable_hybrid_kv_cache_manager", e.DisableHybridKVCacheManager, "true")
	}
	add("weight_dtype", m.Prof.WeightDType != "", m.Prof.WeightDType)
	add("scheduling_policy", m.Priority, "priority")
	add("output_delay_steps", m.OutDelay != d.OutDelay, itoa(m.OutDelay))
	add("kv_allocation", m.Alloc != d.Alloc, m.Alloc)
	add("watermark", m.Watermark != formats.DefaultWatermark(m.Alloc), fmt.Sprint(m.Watermark))
	add("release", m.Release != d.Release, m.Release)
	if sp := m.Spec; sp != nil {
		add("speculative", true, fmt.Sprintf("draft_tokens=%d,acceptance_rate=%g", sp.DraftTokens, sp.AcceptanceRate))
	}
	return out
}
