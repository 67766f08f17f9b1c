package llm

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// Model is one model's engine on one GPU type, resolved from its profile: the step-time
// curves and the engine settings (formats.LLMEngine, vLLM's flag names, LLM engine digest §4
// and llm-engine-2 §1), each read once, here.
type Model struct {
	// Name is the model's name (the profile's).
	Name string
	Prof *formats.LLMProfile
	// Prefill and Decode are the step-time curves over scheduled tokens; CtxUs the cost per
	// context token the scheduled sequences' caches hold (digest §2.4).
	Prefill, Decode PWL
	CtxUs           float64
	// MaxBatched (B) and MaxSeqs (S) are the step's token and sequence budgets.
	MaxBatched, MaxSeqs int
	// Chunked, MaxPartial, OutDelay and MaxModelLen are the engine settings of digest §2
	// and §4.
	Chunked     bool
	MaxPartial  int
	OutDelay    int
	MaxModelLen int
	// Priority: waiting requests by priority, then arrival (scheduling_policy priority).
	Priority bool
	// SwapAlways: preemption swaps KV to CPU memory whatever the policy asks (swap_space set,
	// or preemption_mode swap).
	SwapAlways bool
	// Block is the KV block in tokens; KVCap the KV cache in tokens; KVBytes per token.
	// Under a hybrid KV layout (Groups) KVCap is the pool's blocks × Block: every group's
	// blocks counted, which is what Blocks charges a sequence, and KVTokens is the capacity
	// as the profile and vLLM state it (the pool over the group count).
	Block    int
	KVCap    int
	KVTokens int
	KVBytes  int64
	// Groups is the hybrid KV layout the engine allocates under (formats.LLMKVGroups: the
	// profile's kv_groups while vLLM's hybrid manager is on, i.e. no KV offload); nil: one
	// group of every layer. kvMoreFull, kvSliding, kvWindowHeld, kvChunked and
	// kvChunkHeld are its charges as Blocks reads them (layout).
	Groups                              *formats.LLMKVGroups
	kvMoreFull, kvSliding, kvWindowHeld int
	kvChunked, kvChunkHeld              int
	// Preempt is how a preempted sequence leaves: auto (swap when the KV round trip beats
	// recomputing and swap space allows), swap or evict (recompute).
	Preempt        string
	CPUSwap        int64
	HostBytesPerUs float64
	// Alloc is when KV blocks are taken (formats.KVAlloc*), Watermark the fraction of
	// blocks admission keeps free, Release when a finished request's blocks are free again
	// (formats.Release*): llm-engine-2 §1.
	Alloc     string
	Watermark float64
	Release   string
	// PrefixCaching: KV blocks are a prefix-cache pool (enable_prefix_caching, apc.go).
	PrefixCaching bool
	// OffloadBlocks is the CPU offload tier behind the prefix cache, in blocks (the engine
	// block's kv_offload_bytes; 0: none).
	OffloadBlocks int
	// Spec is speculative decoding (nil: off; spec.go); SpecTokens the expected tokens a
	// sequence emits per verify step, (1 − α^(k+1))/(1 − α).
	Spec       *formats.LLMSpeculative
	SpecTokens float64
	// PreemptionMode, SwapSpace (GiB per GPU) and OffloadBytes are the engine block's flags
	// as set (Settings reports them); Preempt, CPUSwap and OffloadBlocks are what the
	// engine does with them.
	PreemptionMode string
	SwapSpace      float64
	OffloadBytes   int64
	// src is where each setting's value came from (settings.go; absent: the default).
	src map[string]Source
}

// NewModel resolves a profile's engine: vLLM V1's defaults (formats.DefaultBatchedTokens,
// block 16, chunked prefill, one partial prefill, a one-step output delay), the older
// iteration fields, then the profile's engine settings, which win.
func NewModel(p *formats.LLMProfile) *Model {
	b, seqs := formats.DefaultBatchedTokens(p.GPU)
	m := &Model{Name: p.Model, Prof: p, MaxBatched: b, MaxSeqs: seqs, Block: 16, KVCap: int(p.KVCapacityTokens), KVBytes: p.KVBytesPerToken,
		Chunked: true, MaxPartial: 1, OutDelay: 1, Preempt: "auto", PrefixCaching: true,
		Alloc: formats.KVAllocDefault, Release: formats.ReleaseDefault, PreemptionMode: defaultPreemptionMode}
	host := p.HostLinkGBps
	if host <= 0 {
		host = 25
	}
	m.HostBytesPerUs = host * 1e3
	if it := p.Iteration; it != nil {
		m.Prefill, m.Decode, m.CtxUs = it.Prefill, it.Decode, it.DecodeUsPerContextToken
		m.override(SetMaxBatched, &m.MaxBatched, it.MaxBatchedTokens, SourceIteration)
		m.override(SetMaxSeqs, &m.MaxSeqs, it.MaxSeqs, SourceIteration)
		m.override(SetBlock, &m.Block, it.BlockTokens, SourceIteration)
		if it.PreemptMode != "" {
			m.Preempt = it.PreemptMode
		}
		m.CPUSwap = it.CPUSwapBytes
	} else {
		// Without an iteration model: prefill = base + per-token·n, decode = the profiled
		// step at the average batch (flat).
		m.Prefill = PWL{{Tokens: 1, Us: p.PrefillBaseUs + p.PrefillUsPerToken}, {Tokens: 2, Us: p.PrefillBaseUs + 2*p.PrefillUsPerToken}}
		m.Decode = PWL{{Tokens: 1, Us: p.DecodeUsPerToken}}
	}
	m.engine(p.Engine)
	if p.Engine == nil || p.Engine.Watermark == nil {
		m.Watermark = formats.DefaultWatermark(m.Alloc)
	}
	m.KVTokens = m.KVCap
	if g := p.KVGroups; g != nil && g.Groups() > 1 {
		m.Groups = g
		if p.Engine.HybridKVOff() {
			// vLLM's hybrid manager is off (the flag, or a KV connector): every layer holds
			// every token, so a sequence's tokens cost the same in every group.
			m.Groups = &formats.LLMKVGroups{Full: g.Groups(), LayersPerGroup: g.LayersPerGroup}
		}
		m.KVCap = m.KVCap / m.Block * g.Groups() * m.Block
	}
	m.layout()
	return m
}

// override replaces a default with a profile's setting when the profile gives one (> 0),
// recording where it came from.
func (m *Model) override(name string, dst *int, v int, s Source) {
	if v > 0 {
		*dst = v
		m.setFrom(name, s)
	}
}

// engine applies the profile's engine settings over the defaults and the older iteration
// fields they replace (max_batched_tokens, max_seqs, block_tokens, cpu_swap_bytes: still
// read, the engine's win).
func (m *Model) engine(e *formats.LLMEngine) {
	if e == nil {
		return
	}
	m.override(SetMaxBatched, &m.MaxBatched, e.MaxNumBatchedTokens, SourceEngine)
	m.override(SetMaxSeqs, &m.MaxSeqs, e.MaxNumSeqs, SourceEngine)
	m.override(SetBlock, &m.Block, e.BlockSize, SourceEngine)
	m.Chunked = e.Chunked()
	if e.EnableChunkedPrefill != nil {
		m.setFrom(SetChunked, SourceEngine)
	}
	m.override(SetMaxPartial, &m.MaxPartial, e.MaxNumPartialPrefills, SourceEngine)
	if e.OutputDelaySteps != nil {
		m.OutDelay = max(*e.OutputDelaySteps, 0)
		m.setFrom(SetOutDelay, SourceEngine)
	}
	m.MaxModelLen = e.MaxModelLen
	if e.MaxModelLen > 0 {
		m.setFrom(SetMaxModelLen, SourceEngine)
	}
	if e.SwapSpace > 0 {
		m.SwapSpace = e.SwapSpace
		m.setFrom(SetSwapSpace, SourceEngine)
		m.CPUSwap = int64(e.SwapSpace * float64(1<<30) * float64(max(m.Prof.GPUCount, 1)))
		m.Preempt, m.SwapAlways = "swap", true
	}
	if e.PreemptionMode != "" {
		m.PreemptionMode = e.PreemptionMode
		m.setFrom(SetPreemptionMode, SourceEngine)
	}
	switch e.PreemptionMode {
	case formats.PreemptionRecompute:
		// vLLM's preemption_mode recompute: never a swap, whatever swap space or policy.
		m.Preempt, m.SwapAlways = "evict", false
	case formats.PreemptionSwap:
		m.Preempt, m.SwapAlways = "swap", true
	}
	m.Priority = e.SchedulingPolicy == "priority"
	if e.SchedulingPolicy != "" {
		m.setFrom(SetPolicy, SourceEngine)
	}
	if e.KVAllocation != "" {
		m.Alloc = e.KVAllocation
		m.setFrom(SetAlloc, SourceEngine)
	}
	if e.Watermark != nil {
		m.Watermark = *e.Watermark
		m.setFrom(SetWatermark, SourceEngine)
	}
	if e.Release != "" {
		m.Release = e.Release
		m.setFrom(SetRelease, SourceEngine)
	}
	if e.KVOffloadBytes > 0 {
		m.OffloadBytes = e.KVOffloadBytes
		m.setFrom(SetKVOffload, SourceEngine)
	}
	if e.KVOffloadBytes > 0 && m.KVBytes > 0 && m.Block > 0 {
		m.OffloadBlocks = int(min(e.KVOffloadBytes/(m.KVBytes*int64(m.Block)), 1<<30))
	}
	// On unless the profile turns it off, as vLLM V1 (llm-engine-2 §2, "Default: on in
	// V1"): with unique prompts nothing hits, but a preempted request's re-admission hits
	// its own cached blocks (§1), so under KV pressure it recomputes less
	// (TestPrefixCacheUniquePromptsKeepTimelines: two preemptions become one). A profile of
	// a V0 engine (profile --import of a log before vLLM 0.8) says enable_prefix_caching: false.
	m.PrefixCaching = e.PrefixCaching()
	if e.EnablePrefixCaching != nil {
		m.setFrom(SetPrefixCaching, SourceEngine)
	}
	if e.Speculative != nil {
		m.Spec, m.SpecTokens = e.Speculative, e.Speculative.TokensPerStep()
	}
}

// PrefillUs is the time to prefill an n-token prompt alone: whole steps of the token budget
// (chunked prefill, LLM engine digest §2) and the rest, in whole µs (estimators read it).
func (m *Model) PrefillUs(n int) dataplane.Time {
	return dataplane.Time(math.Round(m.PrefillTime(float64(n))))
}

// PrefillTime is PrefillUs unrounded, at a prompt of n tokens that may be fractional (a
// mean or a quantile: the planners' closed forms read it, so they size the prefill the
// engine runs).
func (m *Model) PrefillTime(n float64) float64 {
	t := 0.0
	if b := float64(m.MaxBatched); m.Chunked && b > 0 && n > b {
		chunks := math.Floor(n / b)
		t = chunks * m.Prefill.At(m.MaxBatched)
		n -= chunks * b
	}
	if n > 0 {
		t += formats.PWLEval(m.Prefill, n)
	}
	return t
}

// StepUs is the time of one engine step computing tokens tokens, pre of them prompt (or
// recomputed) tokens, over sequences whose caches will hold ctx tokens: the
// prefill-containing curve when pre > 0, else the decode-only curve, both over the scheduled
// tokens, plus the per-context-token term (LLM engine digest §2.4).
func (m *Model) StepUs(tokens, pre, ctx int) dataplane.Time {
	c := m.Decode
	if pre > 0 {
		c = m.Prefill
	}
	return dataplane.Time(math.Round(c.At(tokens) + m.CtxUs*float64(ctx)))
}

// DecodeUs is the time of a decode step advancing b sequences whose caches hold ctx tokens,
// in whole µs.
func (m *Model) DecodeUs(b, ctx int) dataplane.Time {
	return dataplane.Time(math.Round(m.Decode.At(b) + m.CtxUs*float64(ctx)))
}

// Blocks rounds a token count up to whole KV blocks (in tokens). A block of a power of two
// tokens (vLLM's 16, and every size it accepts) rounds with a mask: the engine rounds every
// running sequence's KV at every step, and the division was 3% of an LLM deployment
// search's CPU.
//
// Under a hybrid layout (Groups) it is the KV a sequence of that many tokens holds across
// the groups: a block per Block tokens in each full-attention group, and in each
// sliding-window group the blocks its last window tokens span, at most
// ⌈(window − 1)/Block⌉ + 1 (vLLM's SlidingWindowManager frees the blocks wholly before the
// window as it moves). A prefill chunk briefly holds the chunk's blocks in the sliding
// groups too; that is not counted. In each chunked-local group a sequence holds its
// current chunk's blocks, and vLLM's ChunkedLocalAttentionManager frees the earlier
// chunks' as a new one starts: Blocks charges the most it holds, a whole chunk's and the
// block being written, so a sequence's charge never falls as it grows (the admission
// reserves and the preemption rule need that) and a long sequence's is an upper bound.
func (m *Model) Blocks(tokens int) int {
	var r int
	if b := m.Block; b > 0 && b&(b-1) == 0 && tokens >= 0 {
		r = (tokens + b - 1) &^ (b - 1)
	} else {
		r = (tokens + m.Block - 1) / m.Block * m.Block
	}
	// Without a layout these terms are 0; with one, no call either: Blocks stays inlined.
	return r + m.kvMoreFull*r + m.kvSliding*min(r, m.kvWindowHeld) + m.kvChunked*min(r, m.kvChunkHeld)
}

// layout sets the hybrid layout's charges from Groups and Block (Blocks reads them).
func (m *Model) layout() {
	m.kvMoreFull, m.kvSliding, m.kvWindowHeld, m.kvChunked, m.kvChunkHeld = 0, 0, 0, 0, 0
	if g := m.Groups; g != nil && m.Block > 0 {
		m.kvMoreFull, m.kvSliding, m.kvWindowHeld = g.Full-1, g.Sliding, m.spanHeld(g.SlidingWindow)
		m.kvChunked, m.kvChunkHeld = g.Chunked, m.spanHeld(g.AttentionChunk)
	}
}

// SeqKV is Blocks without the rounding to whole blocks, at a token count that may be
// fractional (a mean): the KV one sequence of that many tokens holds, for the planners'
// closed forms.
func (m *Model) SeqKV(tokens float64) float64 {
	return tokens + float64(m.kvMoreFull)*tokens + float64(m.kvSliding)*min(tokens, float64(m.kvWindowHeld)) +
		float64(m.kvChunked)*min(tokens, float64(m.kvChunkHeld))
}

// spanHeld is the most KV, in tokens of whole blocks, one group whose layers reach back w
// tokens (a sliding window, or a chunk) holds for a sequence: ⌈(w − 1)/Block⌉ + 1 blocks.
func (m *Model) spanHeld(w int) int {
	if w <= 0 {
		return 0
	}
	return ((w-1+m.Block-1)/m.Block + 1) * m.Block
}

// KVBytesHeld is the bytes of KV a sequence holding kv tokens of whole blocks (Blocks'
// measure) keeps on the GPUs: under a hybrid layout a block of one group holds its
// LayersPerGroup layers of a token, not every layer.
func (m *Model) KVBytesHeld(kv int) int64 {
	if g := m.Groups; g != nil && g.LayersPerGroup > 0 {
		layers := g.LayersPerGroup * g.Groups()
		return int64(kv) * m.KVBytes * int64(g.LayersPerGroup) / int64(layers)
	}
	return int64(kv) * m.KVBytes
}

// WatermarkTokens is the KV space admission keeps free, in tokens of whole blocks:
// int(watermark × num_gpu_blocks) blocks (vLLM's watermark_blocks, llm-engine-2 §1).
func (m *Model) WatermarkTokens() int {
	return int(m.Watermark*float64(m.KVCap/m.Block)) * m.Block
}

// MaxPrompt is the longest prompt (plus generated tokens after a recompute) the engine can
// ever admit: the KV cache in whole blocks, less the watermark under admission allocation
// (vLLM V0's can_allocate answers NEVER when total − need < watermark blocks).
func (m *Model) MaxPrompt() int {
	c := m.KVCap / m.Block * m.Block
	if m.Alloc == formats.KVAllocAdmission {
		c -= m.WatermarkTokens()
	}
	return m.TokensWithin(c)
}

// TokensWithin is the most tokens, in whole blocks, one sequence can have while it holds
// at most kv (Blocks' measure): kv in whole blocks but under a hybrid layout, where a
// sequence's tokens cost a block in every group up to the shorter of the window and the
// chunk, then in every group but those, and past the longer only in the full groups.
func (m *Model) TokensWithin(kv int) int {
	g := m.Groups
	if g == nil || kv <= 0 {
		return max(kv, 0) / m.Block * m.Block
	}
	b := m.Block
	// Blocks' measure is r·(groups still growing) plus what the bounded groups hold, which
	// stops growing at each one's span: walk the spans in order (no allocation: the
	// admission check calls this per request).
	type bound struct{ groups, held int }
	bounds := [2]bound{{g.Sliding, m.kvWindowHeld}, {g.Chunked, m.kvChunkHeld}}
	if bounds[1].held < bounds[0].held {
		bounds[0], bounds[1] = bounds[1], bounds[0]
	}
	growing, fixed := g.Groups(), 0
	for _, bd := range bounds {
		if bd.groups == 0 {
			continue
		}
		if r := (kv - fixed) / growing / b * b; r < bd.held {
			return r
		}
		growing -= bd.groups
		fixed += bd.groups * bd.held
		if growing == 0 {
			return math.MaxInt32 // bounded groups only: their spans hold any length
		}
	}
	return (kv - fixed) / growing / b * b
}

// IterationUs evaluates a profile's iteration model: the forward time in whole µs of a
// prefill over prefillTokens prompt tokens (decode = false) or of a decode step advancing
// seqs sequences holding ctx context tokens (decode = true).
func IterationUs(p *formats.LLMProfile, decode bool, prefillTokens, seqs, ctx int) dataplane.Time {
	m := NewModel(p)
	if decode {
		return m.DecodeUs(seqs, ctx)
	}
	return m.PrefillUs(prefillTokens)
}
