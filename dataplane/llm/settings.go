package llm

import (
	"fmt"
	"maps"
	"strconv"

	"github.com/plan-dev/plan/formats"
)

// The resolved engine's settings as they are reported: each in vLLM's flag name, with its
// value and where the value came from. The Model resolves every setting once (NewModel);
// the simulator's engine report, the QLM planner and the deployment search read them here,
// so a default changed in one place changes for all of them.

// Source is where a resolved engine setting's value came from.
type Source string

// The sources of a setting, in the order NewModel applies them (each later one wins).
const (
	// SourceDefault: vLLM V1's default for the GPU (formats.DefaultBatchedTokens, block 16,
	// chunked prefill, ...).
	SourceDefault Source = "default"
	// SourceIteration: the profile's older iteration fields (max_batched_tokens, max_seqs,
	// block_tokens), read when the engine block does not set the setting.
	SourceIteration Source = "iteration"
	// SourceEngine: the profile's engine block.
	SourceEngine Source = "engine"
	// SourceProfile: the profile's measurement itself (the KV capacity).
	SourceProfile Source = "profile"
	// SourceFlag: a command-line flag laid over the profile (WithFlag).
	SourceFlag Source = "flag"
)

// Setting is one resolved engine setting: vLLM's flag name, its value as the flag takes it
// and where it came from.
type Setting struct {
	Name   string
	Value  string
	Source Source
}

// The names of the settings whose source NewModel records (the others are fixed by the
// engine block alone and read it directly).
const (
	SetMaxBatched     = "max_num_batched_tokens"
	SetMaxSeqs        = "max_num_seqs"
	SetBlock          = "block_size"
	SetChunked        = "enable_chunked_prefill"
	SetMaxPartial     = "max_num_partial_prefills"
	SetMaxModelLen    = "max_model_len"
	SetOutDelay       = "output_delay_steps"
	SetPolicy         = "scheduling_policy"
	SetAlloc          = "kv_allocation"
	SetWatermark      = "watermark"
	SetRelease        = "release"
	SetPreemptionMode = "preemption_mode"
	SetSwapSpace      = "swap_space"
	SetKVOffload      = "kv_offload_bytes"
	SetNoHybridKV     = "disable_hybrid_kv_cache_manager"
	SetPrefixCaching  = "enable_prefix_caching"
	SetKVCapacity     = "kv_capacity_tokens"
	SetKVGroups       = "kv_groups"
)

// setFrom records where a setting's value came from.
func (m *Model) setFrom(name string, s Source) {
	if m.src == nil {
		m.src = map[string]Source{}
	}
	m.src[name] = s
}

// SourceOf is where the resolved value of a setting came from (SourceDefault when nothing
// set it).
func (m *Model) SourceOf(name string) Source {
	if s, ok := m.src[name]; ok {
		return s
	}
	return SourceDefault
}

// WithFlag lays a command-line setting over the resolved engine: max_num_batched_tokens,
// max_num_seqs or block_size (the budgets a deployment search tries), v > 0. It reports
// whether the name is one it takes.
func (m *Model) WithFlag(name string, v int) bool {
	var dst *int
	switch name {
	case SetMaxBatched:
		dst = &m.MaxBatched
	case SetMaxSeqs:
		dst = &m.MaxSeqs
	case SetBlock:
		dst = &m.Block
	default:
		return false
	}
	if v > 0 {
		*dst = v
		m.src = maps.Clone(m.src) // a copied Model keeps its own sources
		m.setFrom(name, SourceFlag)
		m.layout() // the window's blocks depend on the block size
	}
	return true
}

// ModelLen is the longest sequence the engine serves: max_model_len, else (0) the KV
// capacity.
func (m *Model) ModelLen() int {
	if m.MaxModelLen > 0 {
		return m.MaxModelLen
	}
	return m.KVTokens
}

// Settings are the engine's resolved settings in the order the engine report prints them:
// the step budgets, the prefill rules, the KV rules that decide queueing against preemption
// (llm-engine-2 §1), the offload and prefix-cache tiers, and the KV capacity. swap_space and
// kv_offload_bytes appear only when the engine block sets them.
func (m *Model) Settings() []Setting {
	itoa := strconv.Itoa
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	policy := "fcfs"
	if m.Priority {
		policy = "priority"
	}
	out := []Setting{
		{SetMaxBatched, itoa(m.MaxBatched), m.SourceOf(SetMaxBatched)},
		{SetMaxSeqs, itoa(m.MaxSeqs), m.SourceOf(SetMaxSeqs)},
		{SetBlock, itoa(m.Block), m.SourceOf(SetBlock)},
		{SetChunked, strconv.FormatBool(m.Chunked), m.SourceOf(SetChunked)},
		{SetMaxPartial, itoa(m.MaxPartial), m.SourceOf(SetMaxPartial)},
		{SetMaxModelLen, itoa(m.ModelLen()), m.SourceOf(SetMaxModelLen)},
		{SetOutDelay, itoa(m.OutDelay), m.SourceOf(SetOutDelay)},
		{SetPolicy, policy, m.SourceOf(SetPolicy)},
		{SetAlloc, m.Alloc, m.SourceOf(SetAlloc)},
		{SetWatermark, g(m.Watermark), m.SourceOf(SetWatermark)},
		{SetRelease, m.Release, m.SourceOf(SetRelease)},
		{SetPreemptionMode, m.PreemptionMode, m.SourceOf(SetPreemptionMode)},
	}
	if m.SwapSpace > 0 {
		out = append(out, Setting{SetSwapSpace, g(m.SwapSpace), m.SourceOf(SetSwapSpace)})
	}
	if m.OffloadBytes > 0 {
		out = append(out, Setting{SetKVOffload, strconv.FormatInt(m.OffloadBytes, 10), m.SourceOf(SetKVOffload)})
	}
	if m.Prof.Engine != nil && m.Prof.Engine.DisableHybridKVCacheManager {
		out = append(out, Setting{SetNoHybridKV, "true", SourceEngine})
	}
	out = append(out,
		Setting{SetPrefixCaching, strconv.FormatBool(m.PrefixCaching), m.SourceOf(SetPrefixCaching)},
		Setting{SetKVCapacity, itoa(m.KVTokens), SourceProfile})
	if g := m.Groups; g != nil {
		// The hybrid layout the cache is allocated under (what the capacity means).
		v := fmt.Sprintf("%d full", g.Full)
		if g.Sliding > 0 {
			v += fmt.Sprintf(" + %d sliding (window %d)", g.Sliding, g.SlidingWindow)
		}
		if g.Chunked > 0 {
			v += fmt.Sprintf(" + %d chunked (chunk %d)", g.Chunked, g.AttentionChunk)
		}
		out = append(out, Setting{SetKVGroups, fmt.Sprintf("%s of %d layers", v, g.LayersPerGroup), SourceProfile})
	}
	return out
}

// defaultPreemptionMode is the preemption_mode flag's value when the engine block gives
// none: vLLM's recompute.
const defaultPreemptionMode = formats.PreemptionRecompute
