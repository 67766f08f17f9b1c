package prefixcache

import (
	"testing"
)

// FuzzPool runs random operation sequences (admit with shared prefixes, grow, cache, free)
// on a small pool and checks its invariants after every operation: ref counts >= 0 and equal
// to the holders, free + used = total, no block both free and held, the cache index
// consistent (Check), hits never above the cap, the counters only growing.
func FuzzPool(f *testing.F) {
	f.Add(uint8(8), uint8(4), true, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add(uint8(3), uint8(16), true, []byte{0, 0, 0, 0, 3, 3, 3, 0, 0, 1, 1, 2, 2})
	f.Add(uint8(20), uint8(2), false, []byte{9, 200, 31, 7, 64, 128, 255, 1})
	f.Fuzz(func(t *testing.T, nblocks, bsize uint8, enabled bool, ops []byte) {
		bs := int(bsize%32) + 1
		p := New(int(nblocks%64), bs, enabled)
		live := map[int64][]uint64{}
		tokens := map[int64]int{}
		var last Stats
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int(ops[i+1])
			id := int64(op>>3) % 8
			switch op % 4 {
			case 0, 1: // admit id (if not live): group arg%3 shares arg%5 blocks, the rest its own
				if _, ok := live[id]; ok {
					break
				}
				n := arg%7 + 1
				pr := Prompt{InputTokens: n*bs - arg%2, Group: GroupID(string(rune('a' + arg%3))), GroupTokens: (arg % 5) * bs, Unique: UniqueID(uint64(id) + uint64(i)<<8)}
				h := pr.Hashes(nil, bs, pr.InputTokens)
				hit := p.Lookup(h, pr.InputTokens)
				if hit*bs > max(pr.InputTokens-1, 0) || hit > len(h) {
					t.Fatalf("hit %d blocks of %d tokens for a %d-token prompt", hit, bs, pr.InputTokens)
				}
				cost := p.Cost(id, h, hit, p.BlocksFor(pr.InputTokens))
				free := p.NumFree()
				ok := p.Allocate(id, h, hit, p.BlocksFor(pr.InputTokens))
				if ok != (cost <= free) {
					t.Fatalf("allocate = %v with cost %d and %d free", ok, cost, free)
				}
				if ok {
					if p.NumFree() != free-cost {
						t.Fatalf("free %d after allocating cost %d from %d", p.NumFree(), cost, free)
					}
					live[id], tokens[id] = h, pr.InputTokens
					p.Cache(id, pr.InputTokens/bs)
				}
			case 2: // grow a live request by arg%3 blocks
				if _, ok := live[id]; ok {
					p.Allocate(id, nil, 0, p.Held(id)+arg%3)
				}
			case 3:
				p.Free(id)
				delete(live, id)
			}
			if err := p.Check(); err != nil {
				t.Fatalf("op %d (%d %d): %v", i/2, op, arg, err)
			}
			s := p.Stats()
			if s.Queries < last.Queries || s.Hits < last.Hits || s.Hits > s.Queries || s.Evictions < last.Evictions {
				t.Fatalf("counters went back or hits exceed queries: %+v after %+v", s, last)
			}
			last = s
		}
		for id := range live {
			p.Free(id)
		}
		if p.NumFree() != p.NumBlocks() {
			t.Fatalf("%d of %d free after freeing everything", p.NumFree(), p.NumBlocks())
		}
		if err := p.Check(); err != nil {
			t.Fatal(err)
		}
	})
}
