package cascade

import (
	"math"
	"slices"
)

// Deficit routing (CascadeServe §5) picks, at each gear position, the replica whose target
// share of the position's requests most exceeds its observed share: the argmax over the
// replicas k of sh[k]·total − sent[k], the first on ties. Scanning every replica on every
// arrival makes the simulator's cost per event grow with the GPUs (events/s
// constant in N), so each position keeps an index that makes the same choice in O(G) for G
// distinct share values (1 in a plan whose replicas of a model share its load evenly): O(1)
// per group while the group's counts are a round robin's, O(log n) otherwise.
//
// Why it is exact: replicas with the same share s compute the same product x = s·total (the
// same floating-point operations on the same operands), and x − sent[k] is monotone in
// sent[k]; sent counts are integers, and while |x − sent| < 2^52 two different counts round
// to different differences, so within a share group the best replica is the one with the
// least sent count, the first on ties — a segment tree's minimum. Across groups the best of
// each group is compared by the scan's own expression, ties to the lower replica. Shares that
// are not finite, or above maxIndexedShare, and any position while a replica is down (the
// live-share rescaling), fall back to the scan.

// maxIndexedShare bounds the shares the index serves: with total < 2^40 (a trillion requests
// at one position, beyond any run) x − sent stays below 2^52.
const maxIndexedShare = 1 << 10

// deficitIndex is one gear position's index: its replicas grouped by share value.
type deficitIndex struct {
	// ok: every share is NaN-free, finite and at most maxIndexedShare.
	ok     bool
	groups []shareGroup
	// group[k], slot[k]: replica k's group (-1: share ≤ 0, never picked) and its leaf.
	group, slot []int32
	// whole: one group of every replica, in order (group[k] = 0, slot[k] = ks[k] = k), the
	// plan whose replicas of a model share its load evenly. pick and update then take the
	// slot for the replica and skip the three per-replica arrays: each arrival reads the
	// next replica's entries, a new line every 8 or 16 replicas, and at hundreds of
	// replicas those lines have left the first-level cache since the round robin last came.
	whole bool
}

// shareGroup is the replicas of one share value, in replica order, under a segment tree
// whose nodes hold the member (slot) with the least sent count, the lower slot on ties.
//
// The tree is the general case. Routing itself only ever adds one to the count of the
// group's least member, the lowest on ties, so from equal counts (a reset) the counts stay
// c+1 on a prefix of the slots and c on the rest: the least member is the first slot of the
// rest, and the group is a round robin. While rr holds, next is that slot and the tree is not
// kept (its O(log n) repair per request, with a data-dependent branch per level, was the
// largest cost of routing that grows with the replicas); any other change (a pick by the
// scan while a replica is down) rebuilds the tree from the counts and leaves rr.
type shareGroup struct {
	share float64
	ks    []int
	size  int
	tree  []int32
	rr    bool
	next  int32
}

func newDeficitIndex(sh []float64) deficitIndex {
	d := deficitIndex{ok: true, group: make([]int32, len(sh)), slot: make([]int32, len(sh))}
	for k, s := range sh {
		d.group[k] = -1
		if math.IsNaN(s) || math.IsInf(s, 0) || s > maxIndexedShare {
			d.ok = false
		}
		if !(s > 0) {
			continue
		}
		gi := slices.IndexFunc(d.groups, func(g shareGroup) bool { return g.share == s })
		if gi < 0 {
			gi = len(d.groups)
			d.groups = append(d.groups, shareGroup{share: s})
		}
		d.group[k], d.slot[k] = int32(gi), int32(len(d.groups[gi].ks))
		d.groups[gi].ks = append(d.groups[gi].ks, k)
	}
	d.whole = len(d.groups) == 1 && len(d.groups[0].ks) == len(sh)
	for gi := range d.groups {
		g := &d.groups[gi]
		for i, k := range g.ks {
			d.whole = d.whole && i == k
		}
		g.size = 1
		for g.size < len(g.ks) {
			g.size *= 2
		}
		g.tree = make([]int32, 2*g.size)
	}
	return d
}

// reset rebuilds every group's tree from the counts sent, and its round robin when the
// counts have the round robin's form.
func (d *deficitIndex) reset(sent []float64) {
	for gi := range d.groups {
		g := &d.groups[gi]
		g.build(sent)
		g.rr, g.next = g.roundRobin(sent)
	}
}

// roundRobin reports whether the members' counts are c+1 on a prefix and c on the rest, and
// where the rest starts (0 when all are equal).
func (g *shareGroup) roundRobin(sent []float64) (bool, int32) {
	c := sent[g.ks[len(g.ks)-1]]
	i := 0
	for i < len(g.ks) && sent[g.ks[i]] == c+1 {
		i++
	}
	for _, k := range g.ks[i:] {
		if sent[k] != c {
			return false, 0
		}
	}
	return true, int32(i)
}

// build fills the tree from the counts sent.
func (g *shareGroup) build(sent []float64) {
	for i := range g.size {
		g.tree[g.size+i] = -1
		if i < len(g.ks) {
			g.tree[g.size+i] = int32(i)
		}
	}
	for n := g.size - 1; n >= 1; n-- {
		g.tree[n] = g.less(sent, g.tree[2*n], g.tree[2*n+1])
	}
}

// less returns the member of a and b with the smaller count, a on ties (a is the left,
// lower one); -1 is an empty leaf.
func (g *shareGroup) less(sent []float64, a, b int32) int32 {
	if a < 0 {
		return b
	}
	if b < 0 || sent[g.ks[b]] >= sent[g.ks[a]] {
		return a
	}
	return b
}

// update repairs the tree after replica k's count changed.
func (d *deficitIndex) update(sent []float64, k int) {
	gi, slot := int32(0), int32(k)
	if !d.whole {
		if gi, slot = d.group[k], d.slot[k]; gi < 0 {
			return
		}
	}
	g := &d.groups[gi]
	if g.rr {
		if slot == g.next {
			// the least member got one more: the next slot is the least now
			if g.next++; int(g.next) == len(g.ks) {
				g.next = 0
			}
			return
		}
		g.rr = false
		g.build(sent)
		return
	}
	for n := (g.size + int(slot)) / 2; n >= 1; n /= 2 {
		g.tree[n] = g.less(sent, g.tree[2*n], g.tree[2*n+1])
	}
}

// pick is the scan's choice with every replica live (live share 1): the replica of greatest
// sh[k]/1·total − sent[k], the lowest k on ties, 0 when no share is positive.
func (d *deficitIndex) pick(total float64, sent []float64) int {
	const live = 1.0
	best, bv := 0, math.Inf(-1)
	for gi := range d.groups {
		g := &d.groups[gi]
		k := int(g.least())
		if !d.whole {
			k = g.ks[k]
		}
		// The scan's expression, operation for operation (a fused multiply-subtract, where
		// the compiler makes one, is then made in both).
		if v := g.share/live*total - sent[k]; v > bv || (v == bv && k < best) {
			best, bv = k, v
		}
	}
	return best
}

// least is the group's member (slot) of least count, the lowest on ties.
func (g *shareGroup) least() int32 {
	if g.rr {
		return g.next
	}
	return g.tree[1]
}
