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
//     of least (not resident, queue length), the lowest index among equal ones. A
//     tournament tree over the replicas holds that key per leaf (inactive: none) and the
//     least of its subtree per node. The scan's float key queue + 1e12·(not resident) orders the
//     replicas the same way while a queue holds fewer than 1e12 requests.
//   - a batch end tries every replica in index order; only a replica that is resident,
//     idle, not loading and has a queue can start (try), so a bit set of those replicas is
//     walked in index order instead, and try checks the GPUs as before.
//
// While a replica is down the routing scan runs instead (isDown reads the view, which the
// tree does not track); failures are rare and the scan is the reference.
//
// A node is one int64, key<<kBits | replica: the least key is the least value, and on equal
// keys the lower replica is, so a level of the repair is one minimum of words (eight
// bytes a node where a (key, replica) pair took sixteen). An arrival raises the picked
// replica's key, which moves the minimum of every subtree above it: the repair walks every
// level, the routing cost that grows with the fleet. The tree is 4-ary: log4 n levels, half
// a binary tree's, each the minimum of four siblings that lie in one aligned 32-byte group
// (the words are distinct, so the root, the least, is the binary tree's: the same pick).
// A binary repair at 256 replicas took 8 dependent levels, two thirds of touch's
// instructions there against under half at 16 replicas.
//
// The index also keeps what the autoscaler's passes counted by a scan of every replica:
// the active replicas (scale) and the GPUs held (account), at every tick and every load.
// Both grow with the fleet, and so do a run's ticks (one per 100 ms, and the backlog the
// first replica builds while the others load drains longer: 64 simulated seconds at 16 GPUs,
// 1,022 at 256). touch sees every change of a replica's state, so it updates both counts,
// exactly (integers), as the scans would find them.
type cocktailIndex struct {
	repOf []int32 // worker → replica index (-1: not a replica of the served model)
	leaf  int     // node index of replica 0's leaf
	kBits uint    // bits of the replica index in a node
	// node: the 4-ary tree, root at ckRoot; the children of node a are 4a−8 … 4a−5 (a
	// group of four from a multiple of four), its parent (a&^3)/4 + 2; the leaves, a power
	// of four of them, from leaf on.
	node  []int64
	ready []uint64 // bit k: replica k can start a batch if its GPUs are free
	// st[k]: replica k's state as last counted (ckActive, ckHeld); nActive and held: the
	// active replicas and the GPUs of the held ones (active, loading or resident).
	st      []uint8
	nActive int
	held    int
}

// ckNone is the node of a replica pick never takes (inactive), and of padding.
const ckNone = math.MaxInt64

// ckRoot is the tree's root: nodes 0–2 are unused, so that every group of four siblings
// starts at a multiple of four.
const ckRoot = 3

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
	size := 1
	for size < len(p.reps) {
		size *= 4
	}
	// (size−1)/3 inner nodes, from ckRoot on: the leaves start at a multiple of four.
	ix.leaf = ckRoot + (size-1)/3
	ix.kBits = uint(bits.Len(uint(len(p.reps))))
	ix.node = make([]int64, ix.leaf+size)
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
	i := ix.leaf + k
	if node[i] == v {
		return
	}
	node[i] = v
	// The repair runs on every arrival, log4 n levels: a group of siblings is one slice
	// of four (one bounds check a level; len(node) is a multiple of four).
	for a := uint(i); a > ckRoot; {
		g := a &^ 3
		s := node[g : g+4]
		m := min(s[0], s[1], s[2], s[3])
		a = g>>2 + 2
		if node[a] == m {
			return
		}
		node[a] = m
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
	if root := p.ix.node[ckRoot]; root != ckNone {
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
