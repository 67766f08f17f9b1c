package prefixcache

import (
	"fmt"
	"math"
)

// none marks the end of the free queue and an absent link.
const none int32 = -1

// block is one KV block. ref counts the requests holding it; a block with ref 0 is in the
// free queue (and only then). hashed says whether hash names its full contents: a free block
// keeps its hash until it is allocated again (llm-engine-2.md §2).
type block struct {
	ref        int32
	prev, next int32 // free-queue links
	hashed     bool
	hash       uint64
}

// request is what the pool holds for one request: its blocks in order, the chained hashes of
// its full blocks (as given; the pool never copies or changes them) and how many of its
// leading blocks are registered under their hash.
type request struct {
	blocks []int32
	hashes []uint64
	cached int
}

// Stats are the pool's counters. Queries and Hits are tokens, as vLLM V1's
// vllm:prefix_cache_queries and vllm:prefix_cache_hits (hit rate = Hits/Queries;
// specs/ecosystem-dropin.md §1); Lookups is the number of lookups that counted.
type Stats struct {
	Lookups   int64
	Queries   int64
	Hits      int64
	Evictions int64 // cached blocks whose hash was dropped to reuse the block
}

// HitRate is Hits/Queries (0 before any query).
func (s Stats) HitRate() float64 {
	if s.Queries == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Queries)
}

// Pool is a fixed set of KV blocks with vLLM V1's automatic prefix caching
// (vllm/v1/core/block_pool.py; llm-engine-2.md §2). Every operation is O(1) per block
// touched: the free queue is a doubly linked list threaded through the blocks, the cache a
// map from chained block hash to block.
//
// A Pool is not safe for concurrent use: an engine owns one per instance and drives it from
// its one event loop (DESIGN.md, "One policy, two clocks").
type Pool struct {
	// Offload is the CPU tier behind the pool (nil: none); the engine copies completed
	// blocks to it and loads a miss it holds (tier.go).
	Offload   *Tier
	blockSize int
	enabled   bool
	// blocks are the blocks ever handed out, in index order; numBlocks is the pool's size.
	// The blocks past len(blocks) were never used: they stand, in index order, at the head of
	// the free queue (where New put them all, and where nothing is pushed), so they need no
	// record until allocated, and a pool's memory is the blocks its requests have used, not
	// its size (a KV cache of 10^9 tokens costs nothing until filled).
	blocks    []block
	numBlocks int
	// head is evicted first, tail last: the linked free blocks, after the never-used ones;
	// nfree counts both.
	head, tail int32
	nfree      int
	// index maps a hash to the first block registered under it; dups holds later blocks with
	// the same hash (vLLM keeps duplicates: block tables are append-only, §2), promoted in
	// registration order when the first is evicted.
	index map[uint64]int32
	dups  map[uint64][]int32
	reqs  map[int64]*request
	// spare are freed requests' records, kept with their block slices' capacity for the
	// next request: an engine allocates one per admission.
	spare []*request
	stats Stats
}

// New returns a pool of numBlocks blocks of blockSize tokens, every block free. With enabled
// false it is a plain block allocator: lookups hit nothing, count nothing, and freed blocks
// keep no hash.
func New(numBlocks, blockSize int, enabled bool) *Pool {
	if numBlocks < 0 || numBlocks > math.MaxInt32 || blockSize < 1 {
		panic(fmt.Sprintf("prefixcache: New(%d, %d): need 0 <= blocks < 2^31 and block size >= 1", numBlocks, blockSize))
	}
	// The queue starts in block order, as vLLM's FreeKVCacheBlockQueue does: every block
	// never used, none materialized yet.
	return &Pool{
		blockSize: blockSize,
		enabled:   enabled,
		numBlocks: numBlocks,
		nfree:     numBlocks,
		head:      none,
		tail:      none,
		index:     map[uint64]int32{},
		dups:      map[uint64][]int32{},
		reqs:      map[int64]*request{},
	}
}

// popHead takes the free queue's head: the next never-used block while any is left, else
// the linked head, its hash dropped (evicted).
func (p *Pool) popHead() int32 {
	if n := len(p.blocks); n < p.numBlocks {
		p.blocks = append(p.blocks, block{prev: none, next: none})
		p.nfree--
		return int32(n)
	}
	b := p.head
	p.unlink(b)
	p.uncache(b)
	return b
}

// BlockSize is the tokens per block.
func (p *Pool) BlockSize() int { return p.blockSize }

// Enabled reports whether prefix caching is on.
func (p *Pool) Enabled() bool { return p.enabled }

// NumBlocks is the pool's size.
func (p *Pool) NumBlocks() int { return p.numBlocks }

// NumFree is the blocks no request holds, cached (evictable) ones included, as vLLM's
// get_num_free_blocks counts them (§2).
func (p *Pool) NumFree() int { return p.nfree }

// NumUsed is the blocks some request holds: NumBlocks − NumFree.
func (p *Pool) NumUsed() int { return p.numBlocks - p.nfree }

// Usage is the fraction of blocks in use, as vllm:kv_cache_usage_perc reports it.
func (p *Pool) Usage() float64 {
	if p.numBlocks == 0 {
		return 0
	}
	return float64(p.NumUsed()) / float64(p.numBlocks)
}

// NumCached is the blocks registered under a hash (held or free).
func (p *Pool) NumCached() int {
	n := len(p.index)
	for _, d := range p.dups {
		n += len(d)
	}
	return n
}

// Held is how many blocks request id holds.
func (p *Pool) Held(id int64) int {
	if r := p.reqs[id]; r != nil {
		return len(r.blocks)
	}
	return 0
}

// Stats returns the counters.
func (p *Pool) Stats() Stats { return p.stats }

// BlocksFor is how many blocks hold tokens tokens: ceil(tokens / block size).
func (p *Pool) BlocksFor(tokens int) int {
	if tokens <= 0 {
		return 0
	}
	return (tokens + p.blockSize - 1) / p.blockSize
}

// Match is the longest run of leading full blocks of hashes (a request's chained block
// hashes) that are cached, capped so the hit covers at most promptTokens − 1 tokens: the last
// prompt token is always computed, for its logits (vLLM's get_computed_blocks, §2). A prompt
// fully cached whose length is a multiple of the block size thus recomputes its last block.
// It counts nothing.
func (p *Pool) Match(hashes []uint64, promptTokens int) int {
	if !p.enabled || promptTokens <= 1 {
		return 0
	}
	limit := min(len(hashes), (promptTokens-1)/p.blockSize)
	n := 0
	for n < limit {
		if _, ok := p.index[hashes[n]]; !ok {
			break
		}
		n++
	}
	return n
}

// Lookup is Match, counted: Queries += promptTokens and Hits += the hit in tokens, once per
// call, as vLLM V1 records prefix_cache_stats in get_computed_blocks. With caching off it
// counts nothing (vLLM keeps no prefix-cache stats then).
func (p *Pool) Lookup(hashes []uint64, promptTokens int) (hitBlocks int) {
	hitBlocks = p.Match(hashes, promptTokens)
	if p.enabled {
		p.stats.Lookups++
		p.stats.Queries += int64(max(promptTokens, 0))
		p.stats.Hits += int64(hitBlocks * p.blockSize)
	}
	return hitBlocks
}

// Cost is how many free blocks Allocate(id, hashes, hitBlocks, totalBlocks) would take from
// the free queue: the new blocks, plus the hit blocks that are free now (touching them takes
// them out of the queue; vLLM's allocate_slots counts them as num_evictable_computed_blocks).
// hitBlocks matter only for a request that holds no blocks yet.
func (p *Pool) Cost(id int64, hashes []uint64, hitBlocks, totalBlocks int) int {
	held := 0
	if r := p.reqs[id]; r != nil {
		held = len(r.blocks)
	}
	if held > 0 {
		return max(totalBlocks-held, 0)
	}
	hitBlocks = p.checkHits(hashes, hitBlocks)
	cost := max(totalBlocks-hitBlocks, 0)
	for _, h := range hashes[:hitBlocks] {
		if p.blocks[p.index[h]].ref == 0 {
			cost++
		}
	}
	return cost
}

// checkHits returns hitBlocks after checking the caller's contract: the hits are what Match
// returned this step (still cached).
func (p *Pool) checkHits(hashes []uint64, hitBlocks int) int {
	if hitBlocks <= 0 || !p.enabled {
		return 0
	}
	if hitBlocks > len(hashes) {
		panic(fmt.Sprintf("prefixcache: %d hit blocks for %d hashes", hitBlocks, len(hashes)))
	}
	for i, h := range hashes[:hitBlocks] {
		if _, ok := p.index[h]; !ok {
			panic(fmt.Sprintf("prefixcache: hit block %d is not cached (hits must come from Match/Lookup in the same step)", i))
		}
	}
	return hitBlocks
}

// Allocate makes request id hold totalBlocks blocks (vLLM's allocate_slots). A request that
// holds none yet first takes its hitBlocks leading cached blocks (Lookup's result, this
// step): each is touched (ref+1; out of the free queue if it was free). The rest are new
// blocks popped from the head of the free queue, each evicting the hash it kept. hashes are
// the request's chained full-block hashes (Prompt.Hashes), kept by reference for Cache; nil
// keeps the ones given before. It returns false, changing nothing, when Cost exceeds
// NumFree. A request already holding totalBlocks or more is left as it is.
func (p *Pool) Allocate(id int64, hashes []uint64, hitBlocks, totalBlocks int) bool {
	r := p.reqs[id]
	if r == nil {
		if p.Cost(id, hashes, hitBlocks, totalBlocks) > p.nfree {
			return false
		}
		if n := len(p.spare); n > 0 {
			r, p.spare = p.spare[n-1], p.spare[:n-1]
		} else {
			r = &request{}
		}
		p.reqs[id] = r
	} else {
		if hashes == nil {
			hashes = r.hashes
		}
		if p.Cost(id, hashes, hitBlocks, totalBlocks) > p.nfree {
			return false
		}
	}
	r.hashes = hashes
	if len(r.blocks) == 0 {
		if !p.enabled { // Cost checked the hits (none when caching is off)
			hitBlocks = 0
		}
		for _, h := range hashes[:max(hitBlocks, 0)] {
			b := p.index[h]
			if p.blocks[b].ref == 0 {
				p.unlink(b)
			}
			p.blocks[b].ref++
			r.blocks = append(r.blocks, b)
		}
		r.cached = len(r.blocks)
	}
	for len(r.blocks) < totalBlocks {
		b := p.popHead()
		p.blocks[b].ref = 1
		r.blocks = append(r.blocks, b)
	}
	return true
}

// Cache registers the request's first fullBlocks blocks under their hashes (those given to
// Allocate; at most as many as it holds and has hashes for): vLLM's cache_blocks, called once
// a block's tokens are all scheduled. Blocks already registered are skipped; a block whose
// hash another block already has is registered as a duplicate (§2). Off when caching is.
func (p *Pool) Cache(id int64, fullBlocks int) {
	r := p.reqs[id]
	if r == nil || !p.enabled {
		return
	}
	n := min(fullBlocks, len(r.blocks), len(r.hashes))
	for i := r.cached; i < n; i++ {
		b := r.blocks[i]
		if p.blocks[b].hashed {
			continue
		}
		h := r.hashes[i]
		p.blocks[b].hashed, p.blocks[b].hash = true, h
		if _, ok := p.index[h]; ok {
			p.dups[h] = append(p.dups[h], b)
		} else {
			p.index[h] = b
		}
	}
	r.cached = max(r.cached, n)
}

// Register gives request id's blocks their hashes (as Allocate's hashes argument would) and
// registers its first fullBlocks of them (Cache): for a request whose blocks nobody else can
// hit, registered only when it may come back for them. Unknown requests are ignored.
func (p *Pool) Register(id int64, hashes []uint64, fullBlocks int) {
	r := p.reqs[id]
	if r == nil {
		return
	}
	r.hashes = hashes
	p.Cache(id, fullBlocks)
}

// Free releases every block of request id, last block first (vLLM V1 frees a request's
// blocks in reverse order): a block no other request holds goes to the tail of the free
// queue keeping its hash, so of one request's blocks its last is evicted first and its
// shared prefix last. Freeing an unknown request does nothing.
func (p *Pool) Free(id int64) {
	r := p.reqs[id]
	if r == nil {
		return
	}
	for i := len(r.blocks) - 1; i >= 0; i-- {
		b := r.blocks[i]
		p.blocks[b].ref--
		if p.blocks[b].ref == 0 {
			p.pushTail(b)
		}
	}
	delete(p.reqs, id)
	*r = request{blocks: r.blocks[:0]}
	p.spare = append(p.spare, r)
}

// uncache drops block b's hash (it is being reused): the next duplicate, if any, takes its
// place in the index.
func (p *Pool) uncache(b int32) {
	blk := &p.blocks[b]
	if !blk.hashed {
		return
	}
	h := blk.hash
	blk.hashed, blk.hash = false, 0
	p.stats.Evictions++
	if len(p.dups) == 0 { // no hash has a duplicate: b is its hash's one block
		delete(p.index, h)
		return
	}
	d := p.dups[h]
	if p.index[h] == b {
		if len(d) == 0 {
			delete(p.index, h)
			return
		}
		p.index[h] = d[0]
		d = d[1:]
	} else {
		for i, x := range d {
			if x == b {
				d = append(d[:i], d[i+1:]...)
				break
			}
		}
	}
	if len(d) == 0 {
		delete(p.dups, h)
	} else {
		p.dups[h] = d
	}
}

func (p *Pool) pushTail(b int32) {
	blk := &p.blocks[b]
	blk.prev, blk.next = p.tail, none
	if p.tail == none {
		p.head = b
	} else {
		p.blocks[p.tail].next = b
	}
	p.tail = b
	p.nfree++
}

func (p *Pool) unlink(b int32) {
	blk := &p.blocks[b]
	if blk.prev == none {
		p.head = blk.next
	} else {
		p.blocks[blk.prev].next = blk.next
	}
	if blk.next == none {
		p.tail = blk.prev
	} else {
		p.blocks[blk.next].prev = blk.prev
	}
	blk.prev, blk.next = none, none
	p.nfree--
}
