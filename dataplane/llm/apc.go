package llm

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/dataplane"

	"github.com/plan-dev/plan/dataplane/llm/prefixcache"
)

// Automatic prefix caching (llm-engine-2 §2, "What the simulator must do" 7–8): with
// Model.PrefixCaching the engine's KV blocks live in a prefixcache.Pool, one per engine. A
// waiting request's longest chain of cached full blocks (never its last token) counts as
// computed at admission: those tokens take no token budget and no step time, and the hit
// blocks it shares with running requests take no free block. Blocks are registered under
// their hash once their tokens are scheduled (vLLM's cache_blocks in allocate_slots), and a
// request's blocks are freed last block first, keeping their hash until evicted LRU, so a
// preempted request re-admitted hits its own blocks. With caching off none of this runs: KV
// is counted in tokens of whole blocks as before (KVUsed, Seq.KV).
//
// A sequence whose tokens are all its own (no prefix group, no trace block ids: ownTokens)
// has block hashes no other request shares, so only its own re-admission after a preemption
// can hit them. Its blocks are therefore registered when it leaves the GPU unfinished
// (unhold), exactly as many as registering them step by step would have by then, and never
// when it finishes: the same hits and the same blocks freed in the same order, without a
// hash computed or indexed for the requests that never come back (most of them), which made
// caching on cost about 5x the CPU of caching off on an hour of unique prompts.

// pool returns the engine's block pool when m caches prefixes, nil otherwise. The pool is
// made on first use (and again when the engine's model changed while it held nothing).
func (e *Engine) pool(m *Model) *prefixcache.Pool {
	if !m.PrefixCaching {
		if e.apc != nil && e.apc.NumUsed() == 0 {
			e.apc = nil
		}
		return nil
	}
	nb := m.KVCap / m.Block
	if e.apc == nil || (e.apc.NumUsed() == 0 && (e.apc.BlockSize() != m.Block || e.apc.NumBlocks() != nb)) {
		e.apc = prefixcache.New(nb, m.Block, true)
		if m.OffloadBlocks > 0 {
			e.apc.Offload = prefixcache.NewTier(m.OffloadBlocks)
		}
	}
	return e.apc
}

// hashes are s's chained full-block hashes over its prompt and output (prefixcache.Prompt:
// the trace's prefix identity, Seq.Prefix, and s's own tokens keyed by its ID), computed once
// per block size.
func (s *Seq) hashes(block int) []uint64 {
	if s.hashBlock != block || s.blockHashes == nil {
		p := prefixcache.PromptOf(s.Prompt, s.Prefix, prefixcache.UniqueID(uint64(s.ID)))
		s.blockHashes = p.Hashes(make([]uint64, 0, (s.Prompt+s.Out)/block), block, s.Prompt+s.Out)
		s.hashBlock = block
	}
	return s.blockHashes
}

// ownTokens reports whether every token of s is its own: its trace gave no prefix group and
// no block ids (prefixcache.PromptOf), so no other request's blocks hash as its do.
func (s *Seq) ownTokens() bool {
	p := s.Prefix
	return p == nil || !(len(p.HashIDs) > 0 && p.HashBlockTokens > 0 || p.Group != "" && p.GroupTokens > 0)
}

// lookupHashes are the hashes waiting s is looked up with: none for a sequence of its own
// tokens that registered nothing (nothing of it can be cached), else its block hashes.
func (s *Seq) lookupHashes(block int) []uint64 {
	if s.ownTokens() && !s.ownCached {
		return nil
	}
	return s.hashes(block)
}

// probe is the prompt (or recomputed) tokens waiting h would find cached if admitted now:
// whole blocks of the longest cached chain, at most Ctx − 1 tokens (vLLM's
// get_computed_blocks). 0 without a pool or when h holds blocks. Nothing is counted.
func (e *Engine) probe(h *Seq) int {
	if e.apc == nil || h.KV > 0 {
		return 0
	}
	b := e.apc.BlockSize()
	return e.apc.Match(h.lookupHashes(b), h.Ctx()) * b
}

// loadable is the tokens waiting h would load back from the CPU offload tier if admitted
// now: whole blocks of its chain the tier holds right after the hit tokens the GPU's pool
// has, at most Ctx − 1 tokens in all (as for hits). 0 without a tier.
func (e *Engine) loadable(h *Seq, hit int) int {
	if e.apc == nil || e.apc.Offload == nil || h.KV > 0 {
		return 0
	}
	b := e.apc.BlockSize()
	from := hit / b
	most := (h.Ctx()-1)/b - from
	if most <= 0 {
		return 0
	}
	return e.apc.Offload.Match(h.lookupHashes(b), from, most) * b
}

// kvCost is the KV, in tokens of whole blocks, that waiting h takes from the free blocks when
// admitted holding want tokens with hit tokens found cached: want without a pool; with one,
// its new blocks plus the cached hit blocks no running request holds (vLLM's allocate_slots
// counts them as evictable computed blocks).
func (e *Engine) kvCost(h *Seq, want, hit int) int {
	if e.apc == nil {
		return want
	}
	b := e.apc.BlockSize()
	return e.apc.Cost(int64(h.ID), h.lookupHashes(b), hit/b, want/b) * b
}

// take gives admitted h its KV: want tokens of whole blocks, the first hit of them its
// cached prefix (counted as computed, and as a prefix-cache query of its Ctx tokens), the
// next load of them loaded back from the CPU tier (computed, ready once they crossed the
// host link), and registers the blocks its n scheduled tokens fill.
func (e *Engine) take(now dataplane.Time, m *Model, h *Seq, want, hit, load, n int) {
	if e.apc == nil {
		h.KV = want
		e.kvUsed += want
		return
	}
	b := e.apc.BlockSize()
	hs := h.lookupHashes(b)
	hb := e.apc.Lookup(hs, h.Ctx())
	if hb*b != hit {
		panic(fmt.Sprintf("llm: request %d: %d cached tokens at admission, %d probed", h.ID, hb*b, hit))
	}
	if !e.apc.Allocate(int64(h.ID), hs, hb, want/b) {
		panic(fmt.Sprintf("llm: request %d: %d KV blocks admitted but not free", h.ID, want/b))
	}
	h.Comp += hit + load
	h.Cached += hit + load
	c := e.counters()
	c.PrefixQueries.Add(int64(h.Ctx()))
	c.PrefixHits.Add(int64(hit))
	if e.apc.Offload != nil {
		c.OffloadQueries.Add(int64(h.Ctx() - hit))
		c.OffloadHits.Add(int64(load))
	}
	if load > 0 {
		e.apc.Offload.Load(hs, hb, load/b)
		h.ReadyAt = now + dataplane.Time(math.Ceil(float64(int64(load)*m.KVBytes)/m.HostBytesPerUs))
	}
	e.sync(h)
	h.regBlocks = 0
	e.register(h, h.Comp+n)
}

// grow makes running s hold want tokens of whole blocks (it holds at least as many already
// under admission allocation) and registers the blocks its computed tokens fill.
func (e *Engine) grow(s *Seq, want, computed int) {
	if e.apc == nil {
		e.kvUsed += want - s.KV
		s.KV = want
		return
	}
	b := e.apc.BlockSize()
	if want > s.KV { // a decode step mostly needs no new block: no pool call then
		var hs []uint64 // nil: keep the hashes given at admission
		if !s.ownTokens() {
			hs = s.hashes(b)
		}
		if !e.apc.Allocate(int64(s.ID), hs, 0, want/b) {
			panic(fmt.Sprintf("llm: request %d: %d KV blocks checked but not free", s.ID, want/b))
		}
		if s.KV == 0 {
			s.regBlocks = 0
		}
		e.sync(s)
	}
	e.register(s, computed)
}

// register registers s's blocks that computed tokens fill (Pool.Cache), when there are more
// than it registered so far; a sequence of its own tokens only remembers how many (unhold
// registers them if it leaves unfinished).
func (e *Engine) register(s *Seq, computed int) {
	if s.ownTokens() {
		s.regTokens = computed
		return
	}
	b := e.apc.BlockSize()
	if n := min(computed/b, s.KV/b, len(s.hashes(b))); n > s.regBlocks {
		e.apc.Cache(int64(s.ID), n)
		if e.apc.Offload != nil {
			// Completed blocks are copied to the CPU tier as they are produced.
			e.apc.Offload.Store(s.hashes(b)[s.regBlocks:n])
		}
		s.regBlocks = n
	}
}

// unhold frees s's blocks on the GPU (finish, preemption, abort); the caller sets s.KV
// (a swapped sequence keeps it: its KV is in CPU memory). Pool blocks go to the free queue
// last block first, keeping their hash.
func (e *Engine) unhold(s *Seq) {
	if e.apc == nil {
		e.kvUsed -= s.KV
		return
	}
	if s.ownTokens() && !s.Fin && s.regTokens > 0 {
		// Leaving unfinished (preempted, swapped out, aborted): register what step-by-step
		// registration would have (register's min over the same counts; KV only grows
		// while it runs, and every growth registered).
		b := e.apc.BlockSize()
		hs := s.hashes(b)
		k := min(s.regTokens/b, s.KV/b, len(hs))
		e.apc.Register(int64(s.ID), hs, k)
		s.ownCached = true
		if e.apc.Offload != nil {
			e.apc.Offload.Store(hs[:k])
		}
	} else if s.ownTokens() && e.apc.Offload != nil && s.regTokens > 0 {
		// Finished: its blocks were copied as produced too, and take room no lookup finds.
		e.apc.Offload.StoreAnon(s.regTokens / e.apc.BlockSize())
	}
	e.apc.Free(int64(s.ID))
	e.kvUsed = e.apc.NumUsed() * e.apc.BlockSize()
}

// sync reads s's blocks and the engine's KV use back from the pool.
func (e *Engine) sync(s *Seq) {
	b := e.apc.BlockSize()
	s.KV = e.apc.Held(int64(s.ID)) * b
	e.kvUsed = e.apc.NumUsed() * b
}

// PrefixStats are the engine's prefix-cache counters (zero without caching).
func (e *Engine) PrefixStats() prefixcache.Stats {
	if e.apc == nil {
		return prefixcache.Stats{}
	}
	return e.apc.Stats()
}
