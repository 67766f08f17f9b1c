package llm

import (
	"fmt"
	"slices"

	"github.com/plan-dev/plan/formats"
)

// Sliding-window attention. Some decoders mix layers that attend to the whole context with
// layers that attend only to the last W tokens: gpt-oss alternates them (W = 128), Gemma-2
// alternates them and Gemma-3 keeps five sliding layers to one full (W = 1,024 on the
// published checkpoints). The step model times a sliding layer's attention over at most W
// tokens of context (FlashAttention skips the key blocks outside the window), and vLLM's
// hybrid KV cache manager keeps a sliding layer's KV only for the window (LLMKVGroups).
// Llama-4's chunked local attention (three of four layers attend only within their
// current AttentionChunk-token chunk) is timed the same way, over at most the chunk: exact
// within the first chunk, an upper bound past it (a token at the start of a later chunk
// attends to fewer keys), which keeps the step time from falling as the context grows. Its
// KV follows the release: vLLM turned the hybrid manager off for chunked local attention
// by default (PR #21761, the per-group metadata builds cost ~2 ms a step), so every layer
// kept every token, and turned it back on from 0.14 (formats.VLLMChunkedHybridMinor), where
// a chunked layer keeps only its current chunk's blocks (KVGroups).

// readWindow reads which layers slide and over how many tokens: config.json's layer_types
// ("sliding_attention" per layer: gpt-oss, and recent transformers' Gemma and Qwen
// configs), else Gemma-3's sliding_window_pattern (every pattern-th layer full; 6 when the
// config leaves it out, as transformers' Gemma3TextConfig does) and Gemma-2's alternation;
// sliding_window is the window (Gemma's 4,096 when left out). Qwen's use_sliding_window:
// false turns the window off whatever else the config says. Other families' sliding_window
// (Mistral-7B-v0.1's, Phi-3's) is not read: vLLM applies a window to a layer only where
// the model's code marks it sliding, which for those families is layer_types.
func readWindow(m *Model, c hfConfig, bad func(string, any, string) error) error {
	if c.UseSlidingWindow != nil && !*c.UseSlidingWindow {
		return nil
	}
	window := 0
	if c.SlidingWindow != nil {
		w := *c.SlidingWindow
		if w < 0 || w > 1<<31-1 || w != float64(int(w)) {
			return bad("sliding_window", w, "must be a whole number of tokens in [0, 2^31-1]")
		}
		window = int(w)
	}
	sliding := 0
	switch {
	case len(c.LayerTypes) > 0:
		if len(c.LayerTypes) != m.Layers {
			return bad("layer_types", fmt.Sprintf("%d entries", len(c.LayerTypes)), fmt.Sprintf("must name each of the num_hidden_layers (%d)", m.Layers))
		}
		for i, t := range c.LayerTypes {
			switch t {
			case "sliding_attention":
				sliding++
			case "full_attention", "chunked_attention", "linear_attention":
			default:
				return bad(fmt.Sprintf("layer_types[%d]", i), fmt.Sprintf("%q", t), "not an attention type (sliding_attention, full_attention)")
			}
		}
	case c.ModelType == "gemma3_text" || c.ModelType == "gemma2":
		pattern := 2
		if c.ModelType == "gemma3_text" {
			pattern = 6
			if c.SlidingWindowPattern != nil {
				pattern = *c.SlidingWindowPattern
			}
		}
		if pattern < 1 || pattern > 1<<20 {
			return bad("sliding_window_pattern", pattern, "must be >= 1 (every pattern-th layer attends to the whole context)")
		}
		if window == 0 && c.SlidingWindow == nil {
			window = 4096
		}
		sliding = m.Layers - m.Layers/pattern
	}
	if sliding == 0 || window == 0 {
		return nil
	}
	m.SlidingLayers, m.SlidingWindow = sliding, window
	return nil
}

// fullLayers is how many layers attend to the whole context.
func (m Model) fullLayers() int { return m.Layers - m.SlidingLayers - m.ChunkedLayers }

// boundedLayers are the layers whose attention reaches back at most span tokens: the
// sliding layers over their window, the chunked ones over their chunk (at most); an entry
// of no layers is none (a fixed array: the step model reads it at every cell it times).
func (m Model) boundedLayers() [2]boundedLayers {
	return [2]boundedLayers{{m.SlidingLayers, m.SlidingWindow}, {m.ChunkedLayers, m.AttentionChunk}}
}

// boundedLayers is a count of layers attending to at most span tokens back.
type boundedLayers struct{ layers, span int }

// windowPairs is the (query, key) pairs a chunk of tokens after ctx cached ones visits
// under causal attention within a window of w tokens (w ≤ 0: no window): query at position
// p sees min(p+1, w) keys. FlashAttention's work is these pairs, so a sliding layer's chunk
// costs the full-attention chunk's time scaled by its pairs over the full chunk's.
func windowPairs(tokens, ctx, w int) float64 {
	n, c := float64(tokens), float64(ctx)
	full := n*c + n*(n+1)/2
	if w <= 0 || ctx+tokens <= w {
		return full
	}
	if ctx >= w {
		return n * float64(w)
	}
	// Positions ctx…w−1 see p+1 keys, the rest w.
	k := float64(w - ctx)
	return k*c + k*(k+1)/2 + (n-k)*float64(w)
}

// KVGroups is vLLM's hybrid KV cache layout for m under release v (formats.LLMKVGroups),
// nil where every layer is full attention or every layer is of one bounded kind (one
// group, which holds every token: vLLM's sliding-window manager for a model of sliding
// layers only frees outside the window too, but no catalogue model is one). Chunked local
// layers form groups of their own only where v runs the hybrid manager for them
// (formats.VLLMVersion.ChunkedLocalHybrid); before, vLLM turned the manager off for such a
// model, and its chunked layers held every token like full ones.
func (m Model) KVGroups(v formats.VLLMVersion) *formats.LLMKVGroups {
	s, c := m.SlidingLayers, m.ChunkedLayers
	if !v.ChunkedLocalHybrid() {
		if s > 0 && c > 0 {
			// vLLM turns the whole manager off (no catalogue model mixes the two).
			return nil
		}
		c = 0
	}
	f := m.Layers - s - c
	var counts []int
	for _, n := range []int{f, s, c} {
		if n > 0 {
			counts = append(counts, n)
		}
	}
	if len(counts) < 2 {
		return nil
	}
	// _get_kv_cache_groups_uniform_page_size: groups of the smallest type's count, or of
	// the largest's where it is under 1.5 times the smallest; each type's last group padded.
	size, hi := slices.Min(counts), slices.Max(counts)
	if float64(hi) < 1.5*float64(size) {
		size = hi
	}
	ceil := func(a int) int { return (a + size - 1) / size }
	g := &formats.LLMKVGroups{Full: ceil(f), Sliding: ceil(s), LayersPerGroup: size}
	if s > 0 {
		g.SlidingWindow = m.SlidingWindow
	}
	if c > 0 {
		g.Chunked, g.AttentionChunk = ceil(c), m.AttentionChunk
	}
	return g
}

// KVGroupsUnder is m's KV layout on engine e: none where e runs without the hybrid manager
// (formats.LLMEngine.HybridKVOff), else KVGroups at e's release. A profile whose engine
// block changes after its estimate (a step log's version, a server's flags) takes its
// layout from here, so the layout and the engine agree.
func (m Model) KVGroupsUnder(e *formats.LLMEngine) *formats.LLMKVGroups {
	if e.HybridKVOff() {
		return nil
	}
	return m.KVGroups(e.Version())
}

// readChunked reads Llama-4's chunked local attention: attention_chunk_size, on the layers
// no_rope_layers marks 1 (the RoPE layers; vLLM's llama4 gives them ChunkedLocalAttention,
// the NoPE layers full attention), or, without that list, all but every
// no_rope_layer_interval-th layer (transformers' Llama4TextConfig: 4).
func readChunked(m *Model, c hfConfig, bad func(string, any, string) error) error {
	if c.AttentionChunkSize == nil || *c.AttentionChunkSize == 0 {
		return nil
	}
	if *c.AttentionChunkSize < 0 {
		return bad("attention_chunk_size", *c.AttentionChunkSize, "must be a positive number of tokens")
	}
	chunked := 0
	switch {
	case len(c.NoRopeLayers) > 0:
		if len(c.NoRopeLayers) != m.Layers {
			return bad("no_rope_layers", fmt.Sprintf("%d entries", len(c.NoRopeLayers)), fmt.Sprintf("must name each of the num_hidden_layers (%d)", m.Layers))
		}
		for i, v := range c.NoRopeLayers {
			switch v {
			case 0:
			case 1:
				chunked++
			default:
				return bad(fmt.Sprintf("no_rope_layers[%d]", i), v, "must be 0 (NoPE) or 1 (RoPE)")
			}
		}
	default:
		interval := 4
		if c.NoRopeLayerInterval != nil {
			interval = *c.NoRopeLayerInterval
		}
		if interval < 1 {
			return bad("no_rope_layer_interval", interval, "must be >= 1")
		}
		chunked = m.Layers - m.Layers/interval
	}
	m.ChunkedLayers, m.AttentionChunk = chunked, *c.AttentionChunkSize
	return nil
}
