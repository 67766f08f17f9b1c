package prefixcache

import "testing"

// TestTier: blocks are found by hash as a chain from a start, least recently used go first
// past the capacity, anonymous blocks take room unfound, and loading marks blocks used.
func TestTier(t *testing.T) {
	tr := NewTier(4)
	tr.Store([]uint64{1, 2, 3})
	if got := tr.Match([]uint64{9, 1, 2, 3, 4}, 1, 10); got != 3 {
		t.Fatalf("chain from 1: %d, want 3", got)
	}
	if got := tr.Match([]uint64{1, 2, 3}, 0, 2); got != 2 {
		t.Errorf("capped at 2: %d", got)
	}
	tr.Load([]uint64{1}, 0, 1) // 1 is now most recent: 2 is the oldest
	tr.StoreAnon(2)            // evicts 2
	if tr.Len() != 4 || tr.Match([]uint64{2}, 0, 1) != 0 || tr.Match([]uint64{1}, 0, 1) != 1 || tr.Match([]uint64{3}, 0, 1) != 1 {
		t.Errorf("after anonymous stores: len %d, 2 %d, 1 %d, 3 %d", tr.Len(), tr.Match([]uint64{2}, 0, 1), tr.Match([]uint64{1}, 0, 1), tr.Match([]uint64{3}, 0, 1))
	}
	if s := tr.Stats(); s.Stored != 5 || s.Evicted != 1 || s.Loaded != 1 {
		t.Errorf("stats %+v", s)
	}
	none := NewTier(0)
	none.Store([]uint64{1})
	if none.Len() != 0 || none.Match([]uint64{1}, 0, 1) != 0 {
		t.Error("a tier of no capacity holds a block")
	}
}
