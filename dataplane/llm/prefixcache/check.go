package prefixcache

import "fmt"

// Check verifies the pool's invariants and returns the first one broken: the free queue is
// a well-linked list of exactly the blocks with ref 0; every ref count is what the requests'
// block lists add up to (so none is negative and no block is both free and held); free +
// used = total; every registered hash is indexed once and every index entry names a block
// carrying that hash. O(blocks + requests' blocks): for tests and fuzzing, not the hot path.
func (p *Pool) Check() error {
	n := len(p.blocks)
	inQueue := make([]bool, n)
	count := 0
	prev := none
	for b := p.head; b != none; b = p.blocks[b].next {
		if b < 0 || int(b) >= n {
			return fmt.Errorf("free queue: link to block %d of %d", b, n)
		}
		if inQueue[b] {
			return fmt.Errorf("free queue: block %d twice (a cycle)", b)
		}
		inQueue[b] = true
		if p.blocks[b].prev != prev {
			return fmt.Errorf("free queue: block %d's prev is %d, want %d", b, p.blocks[b].prev, prev)
		}
		prev = b
		count++
	}
	if prev != p.tail {
		return fmt.Errorf("free queue: tail is %d, the list ends at %d", p.tail, prev)
	}
	if fresh := p.numBlocks - n; fresh < 0 || count+fresh != p.nfree {
		return fmt.Errorf("free queue: %d blocks linked and %d never used, count says %d", count, fresh, p.nfree)
	}
	refs := make([]int32, n)
	for id, r := range p.reqs {
		seen := map[int32]bool{}
		for _, b := range r.blocks {
			if seen[b] {
				return fmt.Errorf("request %d holds block %d twice", id, b)
			}
			seen[b] = true
			refs[b]++
		}
		if r.cached > len(r.blocks) {
			return fmt.Errorf("request %d: %d blocks cached of %d held", id, r.cached, len(r.blocks))
		}
	}
	used := 0
	for b := range p.blocks {
		blk := &p.blocks[b]
		switch {
		case blk.ref < 0:
			return fmt.Errorf("block %d: ref %d < 0", b, blk.ref)
		case blk.ref != refs[b]:
			return fmt.Errorf("block %d: ref %d, held by %d requests", b, blk.ref, refs[b])
		case (blk.ref == 0) != inQueue[b]:
			return fmt.Errorf("block %d: ref %d but in free queue = %v", b, blk.ref, inQueue[b])
		}
		if blk.ref > 0 {
			used++
		}
		if blk.hashed && !p.enabled {
			return fmt.Errorf("block %d: hashed with caching off", b)
		}
	}
	if count+used != n {
		return fmt.Errorf("free %d + used %d != total %d", count, used, n)
	}
	indexed := 0
	for h, b := range p.index {
		if !p.blocks[b].hashed || p.blocks[b].hash != h {
			return fmt.Errorf("index: hash %#x names block %d, which carries %#x (hashed %v)", h, b, p.blocks[b].hash, p.blocks[b].hashed)
		}
		indexed++
		for _, d := range p.dups[h] {
			if d == b || !p.blocks[d].hashed || p.blocks[d].hash != h {
				return fmt.Errorf("index: duplicate %d of hash %#x is wrong", d, h)
			}
			indexed++
		}
	}
	for h := range p.dups {
		if _, ok := p.index[h]; !ok {
			return fmt.Errorf("index: duplicates of hash %#x without a first block", h)
		}
	}
	hashed := 0
	for b := range p.blocks {
		if p.blocks[b].hashed {
			hashed++
		}
	}
	if hashed != indexed {
		return fmt.Errorf("index: %d blocks hashed, %d indexed", hashed, indexed)
	}
	return nil
}
