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
//
// A node is one int64, key<<kBits | replica: the least key is the least value, and on equal
// keys the lower replica is, so a level of the repair is one minimum of two words (eight
// bytes a node where a (key, replica) pair took sixteen). An arrival raises the picked
// replica's key, which moves the minimum of every subtree above it: the repair walks all
// log n levels, the routing cost that grows with the fleet.
//
// The index also keeps what the autoscaler's passes counted by a scan of every replica:
// the active replicas (scale) and the GPUs held (account), at every tick and every load.
// Both grow with the fleet, and so do a run's ticks (one per 100 ms, and the backlog the
// first replica builds while the others load drains longer: 64 simulated seconds at 16 GPUs,
// 1,022 at 256). touch sees every change of a replica's state, so it updates both counts,
// exactly (integers), as the scans would find them.
type cocktailIndex struct {
	repOf []int32  // worker → replica index (-1: not a replica of the served model)
	size  int      // leaves: a power of two ≥ the replicas
	kBits uint     // bits of the replica index in a node
	node  []int64  // heap-ordered, root 1, leaves [size, 2·size)
	ready []uint64 // bit k: replica k can start a batch if its GPUs are free
	// st[k]: replica k's state as last counted (ckActive, ckHeld); nActive and held: the
	// active replicas and the GPUs of the held ones (active, loading or resident).
	st      []uint8
	nActive int
	held    int
}

// ckNone is the node of a replica pick never takes (inactive), and of padding.
const ckNone = math.MaxInt64

// ckLoading is added to the key of an active replica that is not resident yet: above any
// queue length, as the scan's 1e12 (2^40 > 1e12: a resident replica with a queue shorter
// than 1e12 orders before every loading one either way).
const ckLoading = 1 << 40

// ckMaxBits bounds the replica bits: keys stay below 2^41 (ckLoading plus a queue shorter
// than 2^40), so the node fits an int64 with up to 2^22 replicas; beyond that pick scans.
const ckMaxBits = 22

// Replica states touch counts.
const (
	ckActive = 1 << iota
	ckHeld
)

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
	ix.kBits = uint(bits.Len(uint(len(p.reps))))
	ix.node = make([]int64, 2*ix.size)
	for i := range ix.node {
		ix.node[i] = ckNone
	}
	ix.ready = make([]uint64, (len(p.reps)+63)/64)
	ix.st = make([]uint8, len(p.reps))
	for k := range p.reps {
		p.touch(k)
	}
}

// touch refreshes replica k's routing key, ready bit and counted state after any change of
// its state.
func (p *Cocktail) touch(k int) {
	ix := &p.ix
	if p.resident[k] && !p.running[k] && !p.loading[k] && len(p.queues[k]) > 0 {
		ix.ready[k>>6] |= 1 << (k & 63)
	} else {
		ix.ready[k>>6] &^= 1 << (k & 63)
	}
	var st uint8
	v := int64(ckNone)
	if p.active[k] {
		st = ckActive | ckHeld
		key := int64(len(p.queues[k]))
		if !p.resident[k] {
			key += ckLoading
		}
		v = key<<ix.kBits | int64(k)
	} else if p.loading[k] || p.resident[k] {
		st = ckHeld
	}
	if old := ix.st[k]; old != st {
		p.countState(k, old, -1)
		p.countState(k, st, 1)
		ix.st[k] = st
	}
	node := ix.node
	i := ix.size + k
	if node[i] == v {
		return
	}
	node[i] = v
	// The repair runs on every arrival, log n levels: the test below never fails (the
	// children of a node are below len(node), which is even), and it lets the compiler drop
	// the level's three bounds checks.
	for u := uint(i); u > 1; {
		l := u &^ 1
		if l+1 >= uint(len(node)) {
			break
		}
		m := min(node[l], node[l+1])
		u = l >> 1
		if node[u] == m {
			return
		}
		node[u] = m
	}
}

// countState adds sign times replica k's contribution in state st to the counts.
func (p *Cocktail) countState(k int, st uint8, sign int) {
	if st&ckActive != 0 {
		p.ix.nActive += sign
	}
	if st&ckHeld != 0 {
		p.ix.held += sign * len(p.gpus[k])
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
	if p.nDown > 0 || p.ix.kBits > ckMaxBits {
		return p.pickScan()
	}
	if root := p.ix.node[1]; root != ckNone {
		return int(root & (1<<p.ix.kBits - 1))
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
