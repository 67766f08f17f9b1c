package llm_test

import (
	"testing"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/formats"
)

// hybridProfile is flatProfile (160 tokens of KV as the profile states it) under a hybrid
// layout of one full-attention and one sliding-window group of a 32-token window: a pool of
// 2 × 10 blocks, a sequence holding a block per 16 tokens in the full group and at most
// ⌈31/16⌉ + 1 = 3 blocks (48 tokens) in the sliding one.
func hybridProfile(e formats.LLMEngine) *formats.LLMProfile {
	p := flatProfile(e)
	p.KVGroups = &formats.LLMKVGroups{Full: 1, Sliding: 1, SlidingWindow: 32, LayersPerGroup: 12}
	return p
}

// TestHybridKVCharges: what a sequence holds across the groups, the pool, and the longest
// sequence it takes, as vLLM's hybrid manager allocates (formats.LLMKVGroups).
func TestHybridKVCharges(t *testing.T) {
	m := llm.NewModel(hybridProfile(formats.LLMEngine{}))
	if m.KVCap != 320 || m.KVTokens != 160 {
		t.Fatalf("pool %d tokens, stated %d: want 2 groups × 160 and 160", m.KVCap, m.KVTokens)
	}
	for _, tc := range []struct{ tokens, held int }{
		{0, 0}, {1, 32}, {16, 32}, {17, 64}, {48, 96}, {49, 112}, {65, 128}, {160, 208},
	} {
		if got := m.Blocks(tc.tokens); got != tc.held {
			t.Errorf("Blocks(%d) = %d, want %d", tc.tokens, got, tc.held)
		}
	}
	// The longest sequence: 272 tokens hold 272 + 48 = 320, the pool.
	if got := m.MaxPrompt(); got != 272 {
		t.Errorf("MaxPrompt %d, want 272", got)
	}
	if m.Refuses(272, 0) || !m.Refuses(273, 0) {
		t.Errorf("Refuses(272) %v, Refuses(273) %v: want the limit at 272", m.Refuses(272, 0), m.Refuses(273, 0))
	}
	// TokensWithin inverts Blocks over every KV amount, for both layouts.
	for _, mm := range []*llm.Model{m, llm.NewModel(flatProfile(formats.LLMEngine{}))} {
		for kv := 0; kv <= 1000; kv += 7 {
			n := mm.TokensWithin(kv)
			if mm.Blocks(n) > kv || mm.Blocks(n+mm.Block) <= kv {
				t.Errorf("groups %v: TokensWithin(%d) = %d: Blocks %d, next block %d", mm.Groups, kv, n, mm.Blocks(n), mm.Blocks(n+mm.Block))
			}
		}
	}
	if got := m.SeqKV(10); got != 20 {
		t.Errorf("SeqKV(10) = %g, want 20", got)
	}
	if got := m.SeqKV(100); got != 148 {
		t.Errorf("SeqKV(100) = %g, want 100 + 48", got)
	}
	// Settings state the profile's capacity, not the pool's, and the layout it is under.
	got := map[string]string{}
	for _, s := range m.Settings() {
		got[s.Name] = s.Value
	}
	if got[llm.SetKVCapacity] != "160" || got[llm.SetKVGroups] != "1 full + 1 sliding (window 32) of 12 layers" {
		t.Errorf("settings kv_capacity_tokens %q, kv_groups %q", got[llm.SetKVCapacity], got[llm.SetKVGroups])
	}
	for _, s := range llm.NewModel(flatProfile(formats.LLMEngine{})).Settings() {
		if s.Name == llm.SetKVGroups {
			t.Errorf("a one-group cache lists kv_groups %q", s.Value)
		}
	}
}

// TestHybridKVOffloadHoldsEveryToken: under a KV connector (kv_offload_bytes) or
// --disable-hybrid-kv-cache-manager vLLM runs without the hybrid manager, so every group
// holds every token; the flag is reported among the settings.
func TestHybridKVOffloadHoldsEveryToken(t *testing.T) {
	for _, e := range []formats.LLMEngine{{KVOffloadBytes: 1 << 20}, {DisableHybridKVCacheManager: true}} {
		m := llm.NewModel(hybridProfile(e))
		if m.Groups == nil || m.Groups.Sliding != 0 || m.Groups.Full != 2 {
			t.Fatalf("engine %+v: groups %+v, want 2 full", e, m.Groups)
		}
		if got := m.Blocks(100); got != 224 {
			t.Errorf("engine %+v: Blocks(100) = %d, want 2 × 112", e, got)
		}
		flagged := false
		for _, s := range m.Settings() {
			flagged = flagged || s.Name == llm.SetNoHybridKV && s.Value == "true"
		}
		if flagged != e.DisableHybridKVCacheManager {
			t.Errorf("engine %+v: disable_hybrid_kv_cache_manager among the settings %v", e, flagged)
		}
	}
}

// TestHybridKVAdmitsBeside: the sliding group's window is what lets a second request in.
// kvRequests' A (64 + 6) holds 80 + 48 = 128 of the pool's 320 once decoding and B (96)
// needs 96 + 48 = 144: under admission allocation B starts beside A, where with every layer
// holding every token (160 tokens: A 80, B 96) it waits for A to finish.
func TestHybridKVAdmitsBeside(t *testing.T) {
	for _, caching := range []bool{false, true} {
		e := formats.LLMEngine{KVAllocation: formats.KVAllocAdmission, EnablePrefixCaching: new(caching)}
		hy, _ := llm.Replay(llm.NewModel(hybridProfile(e)), kvRequests, fcfs.New())
		full, _ := llm.Replay(llm.NewModel(flatProfile(e)), kvRequests, fcfs.New())
		if hy[1].Refused || hy[1].FirstToken >= hy[0].Done {
			t.Errorf("caching %v, hybrid: B's first token %d, A done %d: want B beside A", caching, hy[1].FirstToken, hy[0].Done)
		}
		if full[1].FirstToken < full[0].Done {
			t.Errorf("caching %v, one group: B's first token %d before A is done (%d)", caching, full[1].FirstToken, full[0].Done)
		}
	}
}

// TestChunkedKVCharges: Llama-4's layout under vLLM's hybrid manager — one full-attention
// group and three chunked-local groups (here of 32-token chunks) — charges a sequence a
// block per 16 tokens in the full group and, in each chunked group, at most the chunk and
// the block being written (⌈31/16⌉ + 1 = 3 blocks, 48 tokens); a layout of both bounded
// kinds charges each its own span; TokensWithin inverts Blocks on every layout.
func TestChunkedKVCharges(t *testing.T) {
	chunked := func(g formats.LLMKVGroups) *llm.Model {
		p := flatProfile(formats.LLMEngine{})
		p.KVGroups = &g
		return llm.NewModel(p)
	}
	m := chunked(formats.LLMKVGroups{Full: 1, Chunked: 3, AttentionChunk: 32, LayersPerGroup: 12})
	if m.KVCap != 640 || m.KVTokens != 160 {
		t.Fatalf("pool %d tokens, stated %d: want 4 groups × 160 and 160", m.KVCap, m.KVTokens)
	}
	for _, tc := range []struct{ tokens, held int }{
		{0, 0}, {1, 64}, {16, 64}, {17, 128}, {48, 192}, {49, 208}, {100, 256},
	} {
		if got := m.Blocks(tc.tokens); got != tc.held {
			t.Errorf("Blocks(%d) = %d, want %d", tc.tokens, got, tc.held)
		}
	}
	if got := m.SeqKV(100); got != 100+3*48 {
		t.Errorf("SeqKV(100) = %g, want 100 + 3 × 48", got)
	}
	// The longest sequence: 496 tokens hold 496 + 3 × 48 = 640, the pool.
	if got := m.MaxPrompt(); got != 496 {
		t.Errorf("MaxPrompt %d, want 496", got)
	}
	for _, s := range m.Settings() {
		if s.Name == llm.SetKVGroups && s.Value != "1 full + 3 chunked (chunk 32) of 12 layers" {
			t.Errorf("kv_groups %q", s.Value)
		}
	}
	both := chunked(formats.LLMKVGroups{Full: 1, Sliding: 1, SlidingWindow: 16, Chunked: 2, AttentionChunk: 64, LayersPerGroup: 8})
	if got, want := both.Blocks(200), 208+32+2*80; got != want {
		t.Errorf("sliding and chunked: Blocks(200) = %d, want %d", got, want)
	}
	bounded := chunked(formats.LLMKVGroups{Sliding: 1, SlidingWindow: 16, Chunked: 1, AttentionChunk: 64, LayersPerGroup: 8})
	for _, mm := range []*llm.Model{m, both, bounded} {
		for kv := 0; kv <= 2000; kv += 7 {
			n := mm.TokensWithin(kv)
			if mm.Blocks(n) > kv || (n < 1<<30 && mm.Blocks(n+mm.Block) <= kv) {
				t.Errorf("groups %+v: TokensWithin(%d) = %d: Blocks %d, next block %d", *mm.Groups, kv, n, mm.Blocks(n), mm.Blocks(n+mm.Block))
			}
		}
	}
}
