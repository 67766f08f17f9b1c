package llm

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
)

// TestReadWindow: which layers slide, and over how many tokens, in every form a config
// says it (window.go), and the configs that carry a sliding_window no layer uses.
func TestReadWindow(t *testing.T) {
	base := `"hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 4096, "vocab_size": 1000, "max_position_embeddings": 8192`
	for _, tc := range []struct {
		name            string
		json            string
		sliding, window int
		err             string
	}{
		{"layer types", `{"model_type": "llama", "num_hidden_layers": 4, "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"], ` + base + `}`, 2, 128, ""},
		{"gemma-3 default pattern", `{"model_type": "gemma3_text", "num_hidden_layers": 62, "sliding_window": 1024, ` + base + `}`, 52, 1024, ""},
		{"gemma-3 pattern 4", `{"model_type": "gemma3_text", "num_hidden_layers": 8, "sliding_window": 512, "sliding_window_pattern": 4, ` + base + `}`, 6, 512, ""},
		{"gemma-3 default window", `{"model_type": "gemma3_text", "num_hidden_layers": 12, ` + base + `}`, 10, 4096, ""},
		{"gemma-2 alternates", `{"model_type": "gemma2", "num_hidden_layers": 42, "sliding_window": 4096, ` + base + `}`, 21, 4096, ""},
		{"qwen window off", `{"model_type": "qwen2", "num_hidden_layers": 2, "use_sliding_window": false, "sliding_window": 4096, "layer_types": ["sliding_attention", "sliding_attention"], ` + base + `}`, 0, 0, ""},
		{"mistral window not read", `{"model_type": "mistral", "num_hidden_layers": 4, "sliding_window": 4096, ` + base + `}`, 0, 0, ""},
		{"all full", `{"model_type": "qwen3", "num_hidden_layers": 2, "sliding_window": null, "layer_types": ["full_attention", "full_attention"], ` + base + `}`, 0, 0, ""},
		{"short layer types", `{"model_type": "llama", "num_hidden_layers": 4, "sliding_window": 128, "layer_types": ["sliding_attention"], ` + base + `}`, 0, 0, `layer_types: 1 entries: must name each of the num_hidden_layers (4)`},
		{"unknown layer type", `{"model_type": "llama", "num_hidden_layers": 2, "sliding_window": 128, "layer_types": ["sliding_attention", "windowed"], ` + base + `}`, 0, 0, `layer_types[1]: "windowed"`},
		{"fractional window", `{"model_type": "gemma3_text", "num_hidden_layers": 6, "sliding_window": 10.5, ` + base + `}`, 0, 0, `sliding_window: 10.5`},
		{"zero pattern", `{"model_type": "gemma3_text", "num_hidden_layers": 6, "sliding_window_pattern": 0, ` + base + `}`, 0, 0, `sliding_window_pattern: 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ReadConfig("c.json", "m", []byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "c.json") {
					t.Fatalf("error %v, want one naming c.json and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.SlidingLayers != tc.sliding || m.SlidingWindow != tc.window {
				t.Errorf("%d sliding layers of window %d, want %d of %d", m.SlidingLayers, m.SlidingWindow, tc.sliding, tc.window)
			}
		})
	}
}

// TestKVGroupsAsVLLM: the hybrid layout follows vLLM's grouping rule
// (_get_kv_cache_groups_uniform_page_size), including its own examples.
func TestKVGroupsAsVLLM(t *testing.T) {
	layout := func(layers, sliding int) *formats.LLMKVGroups {
		return Model{Layers: layers, SlidingLayers: sliding, SlidingWindow: 128}.KVGroups(v015)
	}
	for _, tc := range []struct {
		name            string
		got             *formats.LLMKVGroups
		full, sw, group int
	}{
		{"gpt-oss-20b: 12 + 12", lookupGroups(t, "gpt-oss-20b"), 1, 1, 12},
		{"gpt-oss-120b: 18 + 18", lookupGroups(t, "gpt-oss-120b"), 1, 1, 18},
		{"gemma-3-27b: 10 full, 52 sliding, padded", lookupGroups(t, "gemma-3-27b"), 1, 6, 10},
		{"12 sliding + 13 full: groups of the larger", layout(25, 12), 1, 1, 13},
		{"10 full + 20 sliding", layout(30, 20), 1, 2, 10},
		{"20 full + 30 sliding: not under 1.5×, padded", layout(50, 30), 1, 2, 20},
		{"20 full + 29 sliding: under 1.5×", layout(49, 29), 1, 1, 29},
	} {
		g := tc.got
		if g == nil || g.Full != tc.full || g.Sliding != tc.sw || g.LayersPerGroup != tc.group {
			t.Errorf("%s: %+v, want %d full and %d sliding groups of %d", tc.name, g, tc.full, tc.sw, tc.group)
		}
	}
	if g := layout(32, 0); g != nil {
		t.Errorf("a model of full layers: %+v, want nil", g)
	}
	// Llama-4: 12 full and 36 chunked-local layers, four groups of 12 where the release
	// runs the hybrid manager for chunked local attention, one group (nil) before.
	for _, name := range []string{"llama-4-scout", "llama-4-maverick"} {
		g := lookupGroups(t, name)
		if g == nil || g.Full != 1 || g.Chunked != 3 || g.Sliding != 0 || g.LayersPerGroup != 12 || g.AttentionChunk != 8192 {
			t.Errorf("%s at vLLM 0.15: %+v, want 1 full and 3 chunked groups of 12, chunk 8192", name, g)
		}
		m, _ := Lookup(name)
		if g := m.KVGroups(formats.VLLMVersion{Minor: formats.VLLMChunkedHybridMinor - 1}); g != nil {
			t.Errorf("%s before the chunked hybrid manager: %+v, want nil", name, g)
		}
	}
	mixed := Model{Layers: 48, SlidingLayers: 12, SlidingWindow: 128, ChunkedLayers: 24, AttentionChunk: 8192}
	if g := mixed.KVGroups(v015); g == nil || g.Full != 1 || g.Sliding != 1 || g.Chunked != 2 || g.LayersPerGroup != 12 {
		t.Errorf("12 full, 12 sliding, 24 chunked: %+v, want 1 + 1 + 2 groups of 12", g)
	}
	if g := mixed.KVGroups(formats.VLLMVersion{Minor: 12}); g != nil {
		t.Errorf("sliding and chunked before the chunked hybrid manager: %+v, want nil (the manager off)", g)
	}
	if g := layout(32, 32); g != nil {
		t.Errorf("a model of sliding layers only: %+v, want nil (one group)", g)
	}
}

// v015 is the release the validation set ran, whose hybrid manager covers chunked local
// attention.
var v015 = formats.VLLMVersion{Minor: 15}

func lookupGroups(t *testing.T, name string) *formats.LLMKVGroups {
	t.Helper()
	m, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m.KVGroups(v015)
}

// TestWindowPairs against counting: query p sees min(p+1, w) keys.
func TestWindowPairs(t *testing.T) {
	for _, w := range []int{0, 1, 5, 16, 100} {
		for _, ctx := range []int{0, 3, 16, 40, 150} {
			for _, n := range []int{1, 7, 64, 200} {
				want := 0.0
				for p := ctx; p < ctx+n; p++ {
					keys := p + 1
					if w > 0 {
						keys = min(keys, w)
					}
					want += float64(keys)
				}
				if got := windowPairs(n, ctx, w); got != want {
					t.Errorf("windowPairs(%d, %d, %d) = %g, want %g", n, ctx, w, got, want)
				}
			}
		}
	}
}

// TestSlidingAttentionCosts: a sliding layer's attention stops growing at its window, in
// decode and prefill, and the KV budget counts the hybrid pool as vLLM does.
func TestSlidingAttentionCosts(t *testing.T) {
	g, _ := gpus.Lookup("H100")
	for _, name := range []string{"gpt-oss-20b", "gemma-3-27b"} {
		m, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		full := m
		full.SlidingLayers, full.SlidingWindow = 0, 0
		d, df := mustDeployment(m, g, 1), mustDeployment(full, g, 1)
		w := float64(m.SlidingWindow)
		if a, b := d.Decode(8, w).Attention, df.Decode(8, w).Attention; a != b {
			t.Errorf("%s: decode attention at the window %g µs, full %g µs: want equal", name, a, b)
		}
		lo, hi := d.Decode(8, 4*w), df.Decode(8, 4*w)
		if lo.Attention >= hi.Attention {
			t.Errorf("%s: decode attention at 4× the window %g µs, not under full attention's %g", name, lo.Attention, hi.Attention)
		}
		if p, pf := d.Prefill(8192, 0).Attention, df.Prefill(8192, 0).Attention; p >= pf {
			t.Errorf("%s: prefill attention of 8,192 tokens %g µs, not under full attention's %g", name, p, pf)
		}
		if d.DecodeUsPerContextToken() >= df.DecodeUsPerContextToken() {
			t.Errorf("%s: context term %g, not under full attention's %g", name, d.DecodeUsPerContextToken(), df.DecodeUsPerContextToken())
		}
		k := KVBudget(m, g, 1, false)
		gr := m.KVGroups(v015)
		if k.Groups == nil || *k.Groups != *gr {
			t.Fatalf("%s: budget groups %+v, want %+v", name, k.Groups, gr)
		}
		perLayer := k.BytesPerTokenPerGPU / int64(m.Layers)
		if want := k.KVBytes / (perLayer * 16 * int64(gr.LayersPerGroup)); k.Blocks != want {
			t.Errorf("%s: %d pool blocks, want %d", name, k.Blocks, want)
		}
		if want := k.Blocks / int64(gr.Groups()) * 16; k.Tokens != want {
			t.Errorf("%s: %d tokens, want the blocks over %d groups: %d", name, k.Tokens, gr.Groups(), want)
		}
		off := KVBudgetWith(m, g, 1, false, KVSettings{BatchedTokens: 8192, MaxSeqs: 1024, NoHybrid: true})
		if off.Groups != nil || off.Tokens != off.KVBytes/(off.BytesPerTokenPerGPU*16)*16 {
			t.Errorf("%s: hybrid off: groups %+v, %d tokens", name, off.Groups, off.Tokens)
		}
	}
}

// TestReadChunked: Llama-4's chunked local attention sits on its RoPE layers — those
// no_rope_layers marks 1, or, without the list, all but every no_rope_layer_interval-th (4 by
// default) — and only a V1 engine's explanation names the piecewise CUDA graphs it forces.
func TestReadChunked(t *testing.T) {
	base := `"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 4096, "vocab_size": 1000, "max_position_embeddings": 8192`
	for _, tc := range []struct {
		name           string
		json           string
		chunked, chunk int
		err            string
	}{
		{"interval default", `{` + base + `, "num_hidden_layers": 8, "attention_chunk_size": 8192}`, 6, 8192, ""},
		{"interval 2", `{` + base + `, "num_hidden_layers": 8, "attention_chunk_size": 1024, "no_rope_layer_interval": 2}`, 4, 1024, ""},
		{"list", `{` + base + `, "num_hidden_layers": 4, "attention_chunk_size": 8192, "no_rope_layers": [1, 0, 1, 1]}`, 3, 8192, ""},
		{"none", `{` + base + `, "num_hidden_layers": 4, "attention_chunk_size": null}`, 0, 0, ""},
		{"short list", `{` + base + `, "num_hidden_layers": 4, "attention_chunk_size": 8192, "no_rope_layers": [1, 0]}`, 0, 0, "no_rope_layers: 2 entries: must name each of the num_hidden_layers (4)"},
		{"bad entry", `{` + base + `, "num_hidden_layers": 2, "attention_chunk_size": 8192, "no_rope_layers": [1, 2]}`, 0, 0, "no_rope_layers[1]: 2: must be 0 (NoPE) or 1 (RoPE)"},
		{"negative chunk", `{` + base + `, "num_hidden_layers": 2, "attention_chunk_size": -1}`, 0, 0, "attention_chunk_size: -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ReadConfig("c.json", "m", []byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "c.json") {
					t.Fatalf("error %v, want one naming c.json and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.ChunkedLayers != tc.chunked || m.AttentionChunk != tc.chunk {
				t.Errorf("%d chunked layers of %d tokens, want %d of %d", m.ChunkedLayers, m.AttentionChunk, tc.chunked, tc.chunk)
			}
		})
	}
	g, _ := gpus.Lookup("H100")
	scout, err := LookupHF("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic")
	if err != nil {
		t.Fatal(err)
	}
	if scout.ChunkedLayers != 36 || scout.AttentionChunk != 8192 {
		t.Errorf("scout: %d chunked layers of %d tokens, want 36 of 8192", scout.ChunkedLayers, scout.AttentionChunk)
	}
	notes := func(m Model, version string) string {
		t.Helper()
		d, err := NewDeployment(m, g, 2, "nvlink")
		if err != nil {
			t.Fatal(err)
		}
		v, err := formats.ParseVLLMVersion(version)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(d.WithEngine(v, 0).TermsNote(), "\n")
	}
	if n := notes(scout, formats.DefaultVLLMVersion); !strings.Contains(n, "cuda graphs: 36 of the 48 layers are chunked local attention") {
		t.Errorf("scout on the default engine: no piecewise note in\n%s", n)
	}
	if n := notes(scout, formats.DefaultVLLMVersion); !strings.Contains(n, "kv groups: vLLM 0.15 runs its hybrid KV cache manager for the chunked layers") {
		t.Errorf("scout on the default engine: no per-group metadata note in\n%s", n)
	}
	if n := notes(scout, "0.12"); !strings.Contains(n, "cuda graphs") || strings.Contains(n, "kv groups") {
		t.Errorf("scout on vLLM 0.12 (piecewise graphs, no hybrid manager for chunked layers):\n%s", n)
	}
	if n := notes(scout, "0.6"); strings.Contains(n, "cuda graphs") {
		t.Errorf("scout on the V0 engine names piecewise graphs:\n%s", n)
	}
	if n := notes(mustLookup(t, "llama-3.1-70b"), formats.DefaultVLLMVersion); strings.Contains(n, "cuda graphs") {
		t.Errorf("a dense model names piecewise graphs:\n%s", n)
	}
}

// TestChunkedAttentionCosts: a chunked-local layer's attention grows like a full layer's
// within its chunk and stops growing past it, in decode and prefill, so Llama-4's step
// never falls as the context grows; the KV budget (BF16 on four H100s) at vLLM 0.15 counts its four-group pool.
func TestChunkedAttentionCosts(t *testing.T) {
	g, _ := gpus.Lookup("H100")
	m := mustLookup(t, "llama-4-scout")
	full := m
	full.ChunkedLayers, full.AttentionChunk = 0, 0
	d, df := mustDeployment(m, g, 2), mustDeployment(full, g, 2)
	c := float64(m.AttentionChunk)
	if a, b := d.Decode(8, c).Attention, df.Decode(8, c).Attention; a != b {
		t.Errorf("decode attention at the chunk %g µs, every layer full %g µs: want equal", a, b)
	}
	prev := 0.0
	for _, ctx := range []float64{1024, c, 2 * c, 4 * c} {
		a, af := d.Decode(8, ctx).Attention, df.Decode(8, ctx).Attention
		if a < prev {
			t.Errorf("decode attention falls to %g µs at %g tokens of context", a, ctx)
		}
		if ctx > c && a >= af {
			t.Errorf("decode attention at %g tokens %g µs, not under every layer full's %g", ctx, a, af)
		}
		prev = a
	}
	if p, pf := d.Prefill(2048, 3*m.AttentionChunk).Attention, df.Prefill(2048, 3*m.AttentionChunk).Attention; p >= pf {
		t.Errorf("a 2,048-token chunk after 24,576 cached: %g µs, not under every layer full's %g", p, pf)
	}
	k := KVBudgetWith(m, g, 4, false, KVSettings{BatchedTokens: 2048, MaxSeqs: 128})
	off := KVBudgetWith(m, g, 4, false, KVSettings{BatchedTokens: 2048, MaxSeqs: 128, Version: formats.VLLMVersion{Minor: 12}})
	if k.Groups == nil || k.Groups.Chunked != 3 || off.Groups != nil {
		t.Fatalf("groups at 0.15 %+v, at 0.12 %+v: want 3 chunked groups, then none", k.Groups, off.Groups)
	}
	// The pool's blocks hold 12 layers each, four times the 48-layer blocks of one group:
	// the capacity the start-up log states is the same.
	if k.Blocks < 4*off.Blocks || k.Blocks > 4*off.Blocks+3 || k.Tokens != k.Blocks/4*16 {
		t.Errorf("0.15: %d pool blocks, %d tokens; 0.12: %d blocks", k.Blocks, k.Tokens, off.Blocks)
	}
}

// TestNoHybridKVFlag: vLLM's --disable-hybrid-kv-cache-manager (the engine block's
// disable_hybrid_kv_cache_manager) and a KV connector (kv_offload_bytes) each leave a
// hybrid-attention model one KV group: no kv_groups, every layer's KV in a token's blocks.
func TestNoHybridKVFlag(t *testing.T) {
	for _, name := range []string{"gpt-oss-20b", "llama-4-scout"} {
		m := mustLookup(t, name)
		tp := 1
		if name == "llama-4-scout" {
			tp = 4
		}
		on, err := EstimateWith(m, "H100", tp, Variant{})
		if err != nil {
			t.Fatal(err)
		}
		if on.KVGroups == nil {
			t.Fatalf("%s: no kv_groups under vLLM's defaults", name)
		}
		for _, e := range []formats.LLMEngine{{DisableHybridKVCacheManager: true}, {KVOffloadBytes: 1 << 30}} {
			off, err := EstimateWith(m, "H100", tp, Variant{Engine: &e})
			if err != nil {
				t.Fatal(err)
			}
			if off.KVGroups != nil || !off.Engine.HybridKVOff() {
				t.Errorf("%s, engine %+v: kv_groups %+v, want none", name, e, off.KVGroups)
			}
			if d := off.KVCapacityTokens - on.KVCapacityTokens; d < -16*int64(on.KVGroups.Groups()) || d > 16*int64(on.KVGroups.Groups()) {
				t.Errorf("%s, engine %+v: %d tokens, the pool's %d: want the same bytes over one group", name, e, off.KVCapacityTokens, on.KVCapacityTokens)
			}
		}
	}
}
