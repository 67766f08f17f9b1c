package cascade

import (
	"math"
	"math/bits"

	"github.com/plan-dev/plan/dataplane"
)

// The Cocktail+ indexes make an arrival's routing and a batch end's restarts cost about
// O(log n) and O(n/64) in the replicas instead of a scan of every replica (a planner's
// rate sweep over a large fleet pays that scan per arrival), with the scans' decisions:
//
//   - pick (least-loaded routing, CascadeServe §6.2's Cocktail+) takes the active replica
//     of least (not resident, queue length), the lowest index among equal ones. A segment
//     tree over the replicas holds that key per leaf (inactive: none) and the leftmost
//     least one per node. The scan's float key queue + 1e12·(not resident) orders the
//     replicas the same way while a queue holds fewer than 1e12 requests.
//   - a batch end tries every replica in index order; only a replica that is resident,
//     idle, not loading and has a queue can start (try), so a bit set of those replicas is
//     walked in index order instead, and try checks the GPUs as before.
//
// While a replica is down the routing scan runs instead (isDown reads the view, which the
// tree does not track); failures are rare and the scan is the reference.
type cocktailIndex struct {
	repOf []int32  // worker → replica index (-1: not a replica of the served model)
	size  int      // leaves: a power of two ≥ the replicas
	node  []ckNode // heap-ordered, root 1, leaves [size, 2·size)
	ready []uint64 // bit k: replica k can start a batch if its GPUs are free
}

// ckNode is a subtree's least routing key and the leftmost replica holding it.
type ckNode struct {
	key int64
	k   int32
}

// ckNone is the key of a replica pick never takes (inactive), and of padding.
const ckNone = math.MaxInt64

// ckLoading is added to the key of an active replica that is not resident yet: above any
// queue length, as the scan's 1e12.
const ckLoading = 1 << 50

func (p *Cocktail) buildIndex() {
	ix := &p.ix
	ix.repOf = make([]int32, len(p.dep.Topo.Workers))
	for i := range ix.repOf {
		ix.repOf[i] = -1
	}
	for k, w := range p.reps {
		ix.repOf[w] = int32(k)
	}
	ix.size = 1
	for ix.size < len(p.reps) {
		ix.size *= 2
	}
	ix.node = make([]ckNode, 2*ix.size)
	for i := range ix.node {
		ix.node[i] = ckNode{ckNone, -1}
	}
	ix.ready = make([]uint64, (len(p.reps)+63)/64)
	for k := range p.reps {
		p.touch(k)
	}
}

// touch refreshes replica k's routing key and ready bit after any change of its state.
func (p *Cocktail) touch(k int) {
	ix := &p.ix
	if p.resident[k] && !p.running[k] && !p.loading[k] && len(p.queues[k]) > 0 {
		ix.ready[k>>6] |= 1 << (k & 63)
	} else {
		ix.ready[k>>6] &^= 1 << (k & 63)
	}
	key := int64(ckNone)
	if p.active[k] {
		key = int64(len(p.queues[k]))
		if !p.resident[k] {
			key += ckLoading
		}
	}
	i := ix.size + k
	if ix.node[i].key == key {
		return
	}
	ix.node[i] = ckNode{key, int32(k)}
	for i > 1 {
		i >>= 1
		l, r := ix.node[2*i], ix.node[2*i+1]
		if r.key < l.key {
			l = r
		}
		if ix.node[i] == l {
			return
		}
		ix.node[i] = l
	}
}

// index is the replica of worker w (-1: none).
func (p *Cocktail) index(w dataplane.WorkerID) int {
	if int(w) < 0 || int(w) >= len(p.ix.repOf) {
		return -1
	}
	return int(p.ix.repOf[w])
}

// pick is least-loaded routing over the active replicas: resident ones first (queued plus
// running), else the active one loading with the shortest queue.
func (p *Cocktail) pick() int {
	if p.nDown > 0 {
		return p.pickScan()
	}
	if root := p.ix.node[1]; root.key != ckNone {
		return int(root.k)
	}
	// nothing active (before the first tick): replica 0, which the next scale-up
	// activates first
	return 0
}

// tryAll tries every replica that can start a batch, in index order (the scan's order).
func (p *Cocktail) tryAll(out *dataplane.Decisions) {
	for wi := range p.ix.ready {
		for w := p.ix.ready[wi]; w != 0; w &= w - 1 {
			p.try(wi<<6+bits.TrailingZeros64(w), out)
		}
	}
}
