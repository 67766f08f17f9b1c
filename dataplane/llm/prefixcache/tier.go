package prefixcache

// Tier is a second, larger KV tier behind the GPU's block pool: CPU memory holding copies of
// computed blocks by hash, as vLLM's OffloadingConnector keeps them (its CPUOffloadingSpec:
// completed GPU blocks are copied to pinned host memory as they are produced, evicted LRU,
// and a GPU prefix-cache miss that the tier holds is loaded back instead of recomputed).
// Blocks whose hashes no other request can share (a request's own tokens) still take room:
// StoreAnon counts them without indexing. The zero Tier of capacity 0 holds nothing.
type Tier struct {
	capacity   int
	index      map[uint64]int32
	nodes      []tierNode
	head, tail int32 // most and least recently used
	free       []int32
	stats      TierStats
}

type tierNode struct {
	hash       uint64 // 0: an anonymous block (a request's own tokens)
	prev, next int32
}

// TierStats are a tier's counters, in blocks.
type TierStats struct {
	Stored, Evicted, Loaded int64
}

// NewTier makes a tier of capacity blocks (0: none).
func NewTier(capacity int) *Tier {
	return &Tier{capacity: max(capacity, 0), index: map[uint64]int32{}, head: none, tail: none}
}

// Capacity is the blocks the tier holds at most; Len how many it holds.
func (t *Tier) Capacity() int { return t.capacity }

// Len is how many blocks the tier holds.
func (t *Tier) Len() int { return len(t.nodes) - len(t.free) }

// Stats are the tier's counters.
func (t *Tier) Stats() TierStats { return t.stats }

// Store copies blocks of the given hashes into the tier (or, already there, marks them
// recently used), evicting the least recently used blocks past its capacity.
func (t *Tier) Store(hashes []uint64) {
	for _, h := range hashes {
		if at, ok := t.index[h]; ok {
			t.unlink(at)
			t.pushHead(at)
			continue
		}
		t.insert(h)
	}
}

// StoreAnon takes room for n blocks no lookup can find.
func (t *Tier) StoreAnon(n int) {
	for range n {
		t.insert(0)
	}
}

func (t *Tier) insert(h uint64) {
	if t.capacity == 0 {
		return
	}
	if t.Len() >= t.capacity {
		old := t.tail
		t.unlink(old)
		if x := t.nodes[old].hash; x != 0 {
			delete(t.index, x)
		}
		t.free = append(t.free, old)
		t.stats.Evicted++
	}
	var at int32
	if n := len(t.free); n > 0 {
		at, t.free = t.free[n-1], t.free[:n-1]
	} else {
		t.nodes = append(t.nodes, tierNode{})
		at = int32(len(t.nodes) - 1)
	}
	t.nodes[at] = tierNode{hash: h, prev: none, next: none}
	if h != 0 {
		t.index[h] = at
	}
	t.pushHead(at)
	t.stats.Stored++
}

// Match is how many consecutive blocks of hashes from index from on the tier holds, at most
// most of them: the chain the GPU's pool missed that can be loaded instead of recomputed.
func (t *Tier) Match(hashes []uint64, from, most int) int {
	n := 0
	for i := from; i < len(hashes) && n < most; i++ {
		if _, ok := t.index[hashes[i]]; !ok {
			break
		}
		n++
	}
	return n
}

// Load marks the blocks hashes[from:from+n] loaded back to the GPU (recently used).
func (t *Tier) Load(hashes []uint64, from, n int) {
	for _, h := range hashes[from : from+n] {
		if at, ok := t.index[h]; ok {
			t.unlink(at)
			t.pushHead(at)
			t.stats.Loaded++
		}
	}
}

func (t *Tier) pushHead(at int32) {
	n := &t.nodes[at]
	n.prev, n.next = none, t.head
	if t.head != none {
		t.nodes[t.head].prev = at
	}
	t.head = at
	if t.tail == none {
		t.tail = at
	}
}

func (t *Tier) unlink(at int32) {
	n := &t.nodes[at]
	if n.prev != none {
		t.nodes[n.prev].next = n.next
	} else {
		t.head = n.next
	}
	if n.next != none {
		t.nodes[n.next].prev = n.prev
	} else {
		t.tail = n.prev
	}
	n.prev, n.next = none, none
}
