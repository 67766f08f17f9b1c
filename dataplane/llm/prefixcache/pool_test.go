package prefixcache

import (
	"math"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// hs are chained hashes of n full blocks of a prompt whose tokens are all group g's (equal g
// = equal prefix).
func hs(g uint64, n int) []uint64 {
	return BlockHashes(nil, Root, 16, []Segment{{ID: g, Tokens: 16 * n}})
}

func mustCheck(t *testing.T, p *Pool) {
	t.Helper()
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
}

// admit is an engine's admission of a prompt of tokens tokens: lookup, allocate all its
// blocks, cache its full ones. It returns the hit in blocks (−1: did not fit).
func admit(p *Pool, id int64, hashes []uint64, tokens int) int {
	hit := p.Lookup(hashes, tokens)
	if !p.Allocate(id, hashes, hit, p.BlocksFor(tokens)) {
		return -1
	}
	p.Cache(id, tokens/p.BlockSize())
	return hit
}

func TestLookupCap(t *testing.T) {
	// A prompt fully cached hits at most promptTokens−1 tokens' worth of whole blocks: the
	// last token is always computed (llm-engine-2.md §2).
	for _, tc := range []struct {
		name           string
		cachedBlocks   int
		prompt         int
		want           int
		queries, hitTk int64
	}{
		{"multiple of block: last block recomputed", 2, 32, 1, 32, 16},
		{"one past: both blocks hit", 2, 33, 2, 33, 32},
		{"longer than cached", 2, 100, 2, 100, 32},
		{"one token", 2, 1, 0, 1, 0},
		{"nothing cached", 0, 40, 0, 40, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(16, 16, true)
			h := hs(7, 6)
			if tc.cachedBlocks > 0 {
				admit(p, 1, h[:tc.cachedBlocks], 16*tc.cachedBlocks)
				p.Free(1)
			}
			before := p.Stats()
			if got := p.Lookup(h, tc.prompt); got != tc.want {
				t.Fatalf("Lookup = %d blocks, want %d", got, tc.want)
			}
			s := p.Stats()
			if s.Queries-before.Queries != tc.queries || s.Hits-before.Hits != tc.hitTk {
				t.Fatalf("counted queries %d hits %d, want %d %d", s.Queries-before.Queries, s.Hits-before.Hits, tc.queries, tc.hitTk)
			}
			mustCheck(t, p)
		})
	}
}

func TestEvictionOrder(t *testing.T) {
	// Request A's blocks freed in reverse go to the tail last-first: a new allocation takes
	// the never-used blocks, then A's last block, and A's prefix survives longest.
	p := New(6, 16, true)
	a := hs(1, 3)
	if admit(p, 1, a, 48) != 0 {
		t.Fatal("hit on an empty pool")
	}
	p.Free(1)
	if p.NumFree() != 6 || p.NumCached() != 3 {
		t.Fatalf("free %d cached %d, want 6 and 3 (free counts include cached blocks)", p.NumFree(), p.NumCached())
	}
	// 3 unused + 1 of A's: A's last block goes.
	admit(p, 2, hs(2, 4), 64)
	if got := p.Match(a, 49); got != 2 {
		t.Fatalf("after evicting one block A matches %d, want 2 (its last block evicted first)", got)
	}
	if s := p.Stats(); s.Evictions != 1 {
		t.Fatalf("evictions %d, want 1", s.Evictions)
	}
	// One more block: A's second goes, its first survives.
	admit(p, 3, nil, 16)
	if got := p.Match(a, 49); got != 1 {
		t.Fatalf("A matches %d, want 1", got)
	}
	mustCheck(t, p)
}

func TestTouchAndShare(t *testing.T) {
	p := New(8, 16, true)
	a := hs(1, 4)
	admit(p, 1, a, 64)
	p.Free(1)
	// B (80 tokens) hits A's 4 free cached blocks and needs 5 in all: the hits are touched
	// out of the free queue, 1 is new.
	b := append(slices.Clone(a), hs(9, 5)[4])
	hit := p.Lookup(b, 80)
	if hit != 4 {
		t.Fatalf("hit %d, want 4", hit)
	}
	if c := p.Cost(2, b, hit, 5); c != 5 {
		t.Fatalf("cost %d, want 5 (1 new + 4 evictable hits)", c)
	}
	if !p.Allocate(2, b, hit, 5) {
		t.Fatal("allocate failed")
	}
	p.Cache(2, 5)
	if p.NumFree() != 3 || p.Held(2) != 5 {
		t.Fatalf("free %d held %d, want 3 and 5", p.NumFree(), p.Held(2))
	}
	// C shares B's first 2 blocks while B runs: held blocks cost nothing.
	if hit := p.Lookup(a[:2], 33); hit != 2 {
		t.Fatalf("C hit %d, want 2", hit)
	}
	if c := p.Cost(3, a[:2], 2, 3); c != 1 {
		t.Fatalf("cost %d, want 1 (hits already held by B)", c)
	}
	p.Allocate(3, a[:2], 2, 3)
	mustCheck(t, p)
	p.Free(2)
	// B's first 2 blocks are still C's: not free.
	if p.NumFree() != 5 {
		t.Fatalf("free %d after B left, want 5", p.NumFree())
	}
	mustCheck(t, p)
	p.Free(3)
	if p.NumFree() != 8 || p.NumUsed() != 0 {
		t.Fatalf("free %d used %d, want 8 and 0", p.NumFree(), p.NumUsed())
	}
	mustCheck(t, p)
}

func TestAllocateRefusesWithoutChange(t *testing.T) {
	p := New(4, 16, true)
	admit(p, 1, hs(1, 3), 48)
	before := p.NumFree()
	if p.Allocate(2, nil, 0, 2) {
		t.Fatal("allocated 2 blocks with 1 free")
	}
	if p.NumFree() != before || p.Held(2) != 0 {
		t.Fatal("a refused allocation changed the pool")
	}
	// A running request grows one block at a time (chunked / decode): 3 → 4 fits, 5 does not.
	if !p.Allocate(1, nil, 0, 4) || p.Allocate(1, nil, 0, 5) || p.Held(1) != 4 {
		t.Fatalf("growth: held %d", p.Held(1))
	}
	mustCheck(t, p)
}

func TestDuplicatesKeepHashCached(t *testing.T) {
	// Two requests miss on the same prefix in one step (both look up before either caches):
	// both blocks carry the hash; evicting the first keeps the second findable.
	p := New(4, 16, true)
	a := hs(1, 2)
	h1, h2 := p.Lookup(a, 40), p.Lookup(a, 40)
	p.Allocate(1, a, h1, 2)
	p.Allocate(2, a, h2, 2)
	p.Cache(1, 2)
	p.Cache(2, 2)
	if p.NumCached() != 4 {
		t.Fatalf("cached %d, want 4 (duplicates kept)", p.NumCached())
	}
	p.Free(1)
	p.Free(2)
	admit(p, 3, hs(5, 2), 32) // evicts request 1's two blocks (freed first)
	if got := p.Match(a, 40); got != 2 {
		t.Fatalf("match %d after the first copies were evicted, want 2", got)
	}
	mustCheck(t, p)
}

func TestDisabled(t *testing.T) {
	p := New(4, 16, false)
	a := hs(1, 2)
	admit(p, 1, a, 40)
	p.Free(1)
	if got := p.Lookup(a, 40); got != 0 {
		t.Fatalf("hit %d with caching off", got)
	}
	if s := p.Stats(); s != (Stats{}) || p.NumCached() != 0 {
		t.Fatalf("stats %+v cached %d with caching off", s, p.NumCached())
	}
	mustCheck(t, p)
}

func TestHitContractPanics(t *testing.T) {
	p := New(4, 16, true)
	defer func() {
		if recover() == nil {
			t.Fatal("allocating uncached hits did not panic")
		}
	}()
	p.Allocate(1, hs(1, 2), 2, 2)
}

func TestBlockHashes(t *testing.T) {
	const bs = 16
	prefix := func(a, b []uint64) int {
		n := 0
		for n < min(len(a), len(b)) && a[n] == b[n] {
			n++
		}
		return n
	}
	g := GroupID("sys")
	for _, tc := range []struct {
		name       string
		a, b       Prompt
		tokA, tokB int
		wantShared int
		wantA      int
	}{
		{"group shares floor(prefix/bs)", Prompt{InputTokens: 100, Group: g, GroupTokens: 40, Unique: UniqueID(1)}, Prompt{InputTokens: 90, Group: g, GroupTokens: 40, Unique: UniqueID(2)}, 100, 90, 2, 6},
		{"groups share the shorter prefix", Prompt{InputTokens: 200, Group: g, GroupTokens: 64, Unique: UniqueID(1)}, Prompt{InputTokens: 200, Group: g, GroupTokens: 100, Unique: UniqueID(2)}, 200, 200, 4, 12},
		{"other group shares nothing", Prompt{InputTokens: 64, Group: g, GroupTokens: 64, Unique: UniqueID(1)}, Prompt{InputTokens: 64, Group: GroupID("x"), GroupTokens: 64, Unique: UniqueID(1)}, 64, 64, 0, 4},
		{"mooncake ids at bs 16", Prompt{InputTokens: 1500, HashIDs: []int64{4, 5, 6}, HashBlockTokens: 512, Unique: UniqueID(1)}, Prompt{InputTokens: 1400, HashIDs: []int64{4, 5, 8}, HashBlockTokens: 512, Unique: UniqueID(2)}, 1500, 1400, 64, 93},
		{"mooncake partial last id shares its tokens", Prompt{InputTokens: 600, HashIDs: []int64{4, 5}, HashBlockTokens: 512, Unique: UniqueID(1)}, Prompt{InputTokens: 1024, HashIDs: []int64{4, 5}, HashBlockTokens: 512, Unique: UniqueID(2)}, 600, 1024, 37, 37},
		{"own prompt and output: same key same blocks", Prompt{InputTokens: 50, Unique: UniqueID(3)}, Prompt{InputTokens: 50, Unique: UniqueID(3)}, 90, 70, 4, 5},
		{"unique prompts share nothing", Prompt{InputTokens: 50, Unique: UniqueID(3)}, Prompt{InputTokens: 50, Unique: UniqueID(4)}, 50, 50, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.a.Hashes(nil, bs, tc.tokA)
			b := tc.b.Hashes(nil, bs, tc.tokB)
			if len(a) != tc.wantA || len(a) != tc.tokA/bs || len(b) != tc.tokB/bs {
				t.Fatalf("%d and %d full blocks, want %d and %d", len(a), len(b), tc.tokA/bs, tc.tokB/bs)
			}
			if got := prefix(a, b); got != tc.wantShared {
				t.Fatalf("shared %d blocks, want %d", got, tc.wantShared)
			}
		})
	}
	// Hashes chain: an equal block after a different one hashes differently.
	x := BlockHashes(nil, Root, bs, []Segment{{1, 16}, {3, 16}})
	y := BlockHashes(nil, Root, bs, []Segment{{2, 16}, {3, 16}})
	if len(x) != 2 || len(y) != 2 || x[1] == y[1] {
		t.Fatalf("second blocks hash equal after different first blocks: %x %x", x, y)
	}
}

// TestPromptOf: a replayed request's Arrival.Prefix names the same blocks as the trace row it
// came from: a group shares floor(prefix/bs) blocks with its group, hash ids their ids' blocks.
func TestPromptOf(t *testing.T) {
	const bs = 16
	a := PromptOf(100, &dataplane.Prefix{Group: "sys", GroupTokens: 40}, UniqueID(1)).Hashes(nil, bs, 100)
	b := PromptOf(90, &dataplane.Prefix{ID: "x", Group: "sys", GroupTokens: 40}, UniqueID(2)).Hashes(nil, bs, 90)
	if a[0] != b[0] || a[1] != b[1] || a[2] == b[2] {
		t.Fatal("group members do not share exactly floor(40/16) = 2 blocks")
	}
	m := PromptOf(600, &dataplane.Prefix{HashIDs: []int64{0, 1}, HashBlockTokens: 512}, UniqueID(3)).Hashes(nil, bs, 600)
	n := TraceRow{InputLength: 600, HashIDs: []int64{0, 1}}.Prompt(512, UniqueID(4)).Hashes(nil, bs, 600)
	if !slices.Equal(m, n) {
		t.Fatal("hash ids through Attrs differ from the trace row's")
	}
	own := PromptOf(64, nil, UniqueID(5)).Hashes(nil, bs, 64)
	if len(own) != 4 || slices.Contains(a, own[0]) {
		t.Fatal("a request with no prefix shares blocks")
	}
}

// TestPoolLazyBlocks: a pool's memory is the blocks its requests used, not its size: a KV
// cache of 2^31-1 blocks (what a profile's kv_capacity_tokens may ask for) holds no block
// record until one is allocated, hands them out in block order as the eager free queue did,
// and keeps its invariants.
func TestPoolLazyBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		blocks int
		alloc  []int // blocks each request takes, in order
	}{
		{"largest", math.MaxInt32, []int{3, 5}},
		{"exactly filled", 8, []int{3, 5}},
		{"empty", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.blocks, 16, true)
			if len(p.blocks) != 0 || p.NumFree() != tc.blocks || p.NumBlocks() != tc.blocks {
				t.Fatalf("new pool: %d records, %d free of %d", len(p.blocks), p.NumFree(), p.NumBlocks())
			}
			next := int32(0)
			for id, n := range tc.alloc {
				if !p.Allocate(int64(id), nil, 0, n) {
					t.Fatalf("request %d: %d blocks refused", id, n)
				}
				for _, b := range p.reqs[int64(id)].blocks {
					if b != next {
						t.Fatalf("request %d got block %d, want %d (block order)", id, b, next)
					}
					next++
				}
			}
			if len(p.blocks) != int(next) || p.NumUsed() != int(next) {
				t.Fatalf("%d records, %d used, want %d", len(p.blocks), p.NumUsed(), next)
			}
			if err := p.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
