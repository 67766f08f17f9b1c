package ppipe

import "github.com/plan-dev/plan/dataplane"

// The pool index makes a probe's per-stage choice cost about O(log n) in the pool size
// instead of a scan of every worker, with the same decision as the scan.
//
// A worker w on server s scores, at a stage probed from time t with inference time inf and
// transfer time net (probe(), PPipe A.3, Alg. 2), in busy-until mode
//
//	max(t0 + net + inf,  D_s + net + inf,  B_w + inf,  U_s)
//
// where t0 = max(t, busy-until of the source uplink) (t0 = t and no net terms at d = 0),
// D_s and U_s are the busy-until of s's downlink and uplink (U_s only before the last
// stage) and B_w that of w: max distributes over +, so this equals the scan's nested
// max. Each pool keeps a segment tree in pool order whose nodes hold the minimum of B, D
// and U over their leaves; max(t0+net+inf, min D + net + inf, min B + inf, min U) bounds
// every score below it. A branch and bound scores leaves exactly (the scan's own
// arithmetic, PPipe.score) and keeps the least score, the lowest pool index among equal
// ones (the scan's tie-break). It enters the child with the lower bound first (the left
// one on a tie), so its first leaf is already a good one, and skips a subtree whose bound
// is above the best score so far, or equal to it with every leaf after the best one's
// position. With the floor t0+net+inf reached, only subtrees to the left at the floor
// remain; entering the left child on ties keeps those few.
//
// Interval mode (gap filling) uses the same tree with weaker, still valid bounds: a
// resource whose first reservation started by the time of its last change is busy without
// a gap until the end R of that first run of back-to-back reservations, so every free slot
// of positive length starting at or after any later probe time lies at or after R (B_w, D_s
// := R, else 0); the floor uses the source uplink's own gap, which the joint gap of the
// transfer never precedes. Both need well-formed interval lists (see key).
//
// The run's end generalizes to any least duration: a slot of a batch of inf lies in a free
// gap at least inf long, so it starts at or after the first gap of the list at least thr
// long for any thr <= inf; the gap before the first reservation counts from the time of
// the last change (time only advances, so it only shrinks). B_w and D_s are that gap's
// start for thr the least positive latency (transfer) of any stage the resource serves
// in: the end of the first run for thr of one microsecond, 0 when the gap before the first
// reservation is long enough. At 16 times the GPUs gap filling leaves most workers short
// gaps between reservations booked ahead; the first run's end bounded nearly none of
// them, and the search scored about 17 leaves a probe at 400 GPUs and 57 at 1,600, so
// the simulation's cost grew faster than linearly with GPUs.
type poolIndex struct {
	trees []poolTree
	// leaves of each worker's resources: wLeaves.of(w) for B, sLeaves.of(s) for D and U.
	wLeaves, sLeaves leafTable
	nw, ns           int
	// wf[i]: resource i's interval list is well formed (interval mode; see key).
	wf []bool
	// thr[i]: the least positive duration any query bounds resource i's slot for (worker:
	// latency; downlink: transfer), Never if none; interval mode.
	thr []dataplane.Time
}

type leafRef struct{ tree, pos int32 }

// leafTable lists the leaves of each of n resources in one array (offsets into refs): every
// book or correct updates a resource's leaves, and at 1,600 GPUs a separate small slice per
// resource was a miss on its header and another on its leaves; the flat arrays (4 bytes a
// resource, 8 a leaf) stay in cache.
type leafTable struct {
	off  []int32 // the leaves of resource i are refs[off[i]:off[i+1]]
	refs []leafRef
}

// makeLeafTable flattens per-resource lists, in order.
func makeLeafTable(lists [][]leafRef) leafTable {
	t := leafTable{off: make([]int32, len(lists)+1)}
	for i, l := range lists {
		t.refs = append(t.refs, l...)
		t.off[i+1] = int32(len(t.refs))
	}
	return t
}

func (t *leafTable) of(i int) []leafRef { return t.refs[t.off[i]:t.off[i+1]] }

// Fields of a tree node.
const (
	fB = iota // the worker's own busy-until (bound)
	fD        // its server's downlink
	fU        // its server's uplink
)

// pad fills the leaves past the pool's end: bounds of padding stay far above every real
// score, yet adding a latency cannot overflow.
const pad = dataplane.Never / 4

// off is the offset that takes a term out of a bound: a node's value plus off is negative
// (no score is), and cannot overflow.
const off = -dataplane.Never / 2

type poolTree struct {
	ws   []dataplane.WorkerID
	size int    // leaves: a power of two ≥ len(ws)
	n    []node // heap-ordered nodes, root 1, leaves [size, 2·size)
}

// node is a tree node's least B, D and U (fB, fD, fU), padded to 32 bytes so that siblings
// 2j and 2j+1, which a dive reads together, are one 64-byte cache line: at 24 bytes every
// other pair straddled two lines, and at 1,600 GPUs the deep levels are out of the
// first-level cache on most dives.
type node [4]dataplane.Time

// pquery is one stage's probe: its inputs, bound terms and the best worker so far.
type pquery struct {
	first, last bool
	src         dataplane.ServerID
	t, inf, net dataplane.Time
	floor       dataplane.Time
	// offB, offD, offU are added to a node's B, D and U in its bound; off (below every
	// score even added to pad) leaves a term out, so bound needs no branches.
	offB, offD, offU dataplane.Time
	best             dataplane.Time
	bpos             int // pool position of bw (-1: none yet)
	bw               dataplane.WorkerID
	bts, bxs, bend   dataplane.Time
}

// build indexes the pool of every stage the dispatcher's pipelines use.
func (ix *poolIndex) build(p *PPipe) {
	ix.nw, ix.ns = p.nw, p.ns
	ix.trees = nil
	wLeaves := make([][]leafRef, p.nw)
	sLeaves := make([][]leafRef, p.ns)
	ix.wf = make([]bool, len(p.res.iv))
	ix.thr = make([]dataplane.Time, len(p.res.iv))
	for i := range ix.thr {
		ix.thr[i] = dataplane.Never
	}
	least := func(i int, ds []dataplane.Time) {
		for _, x := range ds {
			if x > 0 {
				ix.thr[i] = min(ix.thr[i], x)
			}
		}
	}
	for ai := range p.apps {
		for pi := range p.apps[ai].pipes {
			pp := &p.apps[ai].pipes[pi]
			for d, sid := range pp.stages {
				for _, w := range p.dep.Stages[sid].Pool {
					least(int(w), pp.lat[d])
					least(p.nw+p.ns+int(p.server[w]), pp.net[d])
				}
			}
		}
	}
	byStage := map[dataplane.StageID]int{}
	for ai := range p.apps {
		for pi := range p.apps[ai].pipes {
			pp := &p.apps[ai].pipes[pi]
			for _, sid := range pp.stages {
				if _, ok := byStage[sid]; ok {
					continue
				}
				byStage[sid] = len(ix.trees)
				pool := p.dep.Stages[sid].Pool
				size := 1
				for size < len(pool) {
					size *= 2
				}
				tr := poolTree{ws: pool, size: size, n: make([]node, 2*size)}
				for i := range tr.n {
					tr.n[i] = node{pad, pad, pad, 0}
				}
				ti := int32(len(ix.trees))
				for pos, w := range pool {
					ref := leafRef{ti, int32(pos)}
					wLeaves[w] = append(wLeaves[w], ref)
					sLeaves[p.server[w]] = append(sLeaves[p.server[w]], ref)
				}
				ix.trees = append(ix.trees, tr)
			}
		}
	}
	ix.wLeaves, ix.sLeaves = makeLeafTable(wLeaves), makeLeafTable(sLeaves)
	for ai := range p.apps {
		for pi := range p.apps[ai].pipes {
			pp := &p.apps[ai].pipes[pi]
			pp.trees = make([]*poolTree, len(pp.stages))
			for d, sid := range pp.stages {
				pp.trees[d] = &ix.trees[byStage[sid]]
			}
		}
	}
	p.res.ix = ix
	for i := range p.res.iv {
		ix.update(&p.res, i)
	}
}

// key is resource i's bound: its busy-until, or in interval mode the start of its first
// free gap at least thr[i] long (0: the one before the first reservation). It also
// records whether the interval list is well formed (sorted, disjoint, every entry of
// positive length): only then is gap the least free slot, which the interval bounds
// assume. Zero-length reservations (a zero transfer or latency) are legal and break that:
// gap's binary search over ends then can land inside a reservation, so such a resource
// gets no bound until its list is well formed again.
func (ix *poolIndex) key(r *resources, i int) dataplane.Time {
	if !r.fill[i] {
		return r.iv[i].bu
	}
	q := &r.iv[i]
	ix.wf[i] = true
	for k := range q.n {
		if x := r.at(q, k); x.e <= x.s || k > 0 && x.s < r.at(q, k-1).e {
			ix.wf[i] = false
			return 0
		}
	}
	if q.n == 0 || r.at(q, 0).s-r.now >= ix.thr[i] {
		return 0
	}
	for k := int32(1); k < q.n; k++ {
		if r.at(q, k).s-r.at(q, k-1).e >= ix.thr[i] {
			return r.at(q, k-1).e
		}
	}
	return r.at(q, q.n-1).e
}

// update refreshes the leaves that depend on resource i.
func (ix *poolIndex) update(r *resources, i int) {
	switch {
	case i < ix.nw:
		if refs := ix.wLeaves.of(i); len(refs) > 0 {
			v := ix.key(r, i)
			for _, l := range refs {
				ix.trees[l.tree].set(int(l.pos), fB, v)
			}
		}
	case i < ix.nw+ix.ns:
		if r.fill[i] {
			ix.key(r, i) // well-formedness, for the floor
		}
		// The uplink term is the busy-until in both modes (the scan reads busyUntil).
		if refs := ix.sLeaves.of(i - ix.nw); len(refs) > 0 {
			v := r.iv[i].bu
			for _, l := range refs {
				ix.trees[l.tree].set(int(l.pos), fU, v)
			}
		}
	default:
		if refs := ix.sLeaves.of(i - ix.nw - ix.ns); len(refs) > 0 {
			v := ix.key(r, i)
			for _, l := range refs {
				ix.trees[l.tree].set(int(l.pos), fD, v)
			}
		}
	}
}

// set writes field f of leaf pos and repairs the minima above it: each level's new
// minimum is the one just written below it against that node's sibling.
func (t *poolTree) set(pos, f int, v dataplane.Time) {
	n := t.n
	k := t.size + pos
	if n[k][f] == v {
		return
	}
	n[k][f] = v
	for k > 1 {
		v = min(v, n[k^1][f])
		k >>= 1
		if n[k][f] == v {
			return
		}
		n[k][f] = v
	}
}

// search sets q's best worker over tree t (an empty pool leaves the scan's zero values).
func (p *PPipe) search(t *poolTree, q *pquery) {
	q.floor = q.t + q.inf
	q.offB, q.offD, q.offU = q.inf, off, 0
	if q.last {
		q.offU = off
	}
	if !q.first {
		up := p.nw + int(q.src)
		if !p.res.fill[up] {
			q.floor = max(q.t, p.res.iv[up].bu) + q.net + q.inf
			q.offD = q.net + q.inf
		} else if q.net > 0 && p.ix.wf[up] {
			// gap is monotone in t on a well-formed list, and the joint slot of the
			// transfer is one of the source uplink's gaps from some t' ≥ t.
			q.floor = p.res.gap(up, q.t, q.net) + q.net + q.inf
			q.offD = q.net + q.inf
		} else {
			q.floor = q.t + q.net + q.inf
		}
	}
	if p.res.interval && q.inf <= 0 {
		// A zero-length slot can sit inside a run of reservations: no bound from B.
		q.offB = off
	}
	if len(t.ws) == 0 {
		return
	}
	// No position yet: until a leaf is taken only a bound below Never admits.
	q.bpos = -1
	if q.bound(&t.n[1]) < q.best {
		p.dive(t, q)
	}
}

// dive is the branch and bound's first path, without recursion: from the root it follows
// the child of lower bound (the left one on a tie) to a leaf and scores it; then it climbs
// back and searches each sibling of the path that can still hold a better worker. When
// the leaf reached scores the floor (at moderate load some worker is free when the stage
// starts), nothing else can: the siblings to its right can only tie, and every one to its
// left was passed over for a strictly higher bound. At 16 times the GPUs the path is four
// levels longer, and the recursive search's calls and admission tests on the way down
// cost more than the bounds themselves.
func (p *PPipe) dive(t *poolTree, q *pquery) {
	n := t.n
	floor, oB, oD, oU := q.floor, q.offB, q.offD, q.offU
	k := 1
	for k < t.size {
		k *= 2
		c := n[k : k+2 : k+2]
		bl := max(floor, c[0][fB]+oB, c[0][fD]+oD, c[0][fU]+oU)
		br := max(floor, c[1][fB]+oB, c[1][fD]+oD, c[1][fU]+oU)
		if br < bl {
			k++
		}
	}
	pos := k - t.size
	if pos < len(t.ws) {
		ww := t.ws[pos]
		if s, ts, xs, end := p.score(ww, q); s < q.best {
			q.best, q.bpos, q.bw, q.bts, q.bxs, q.bend = s, pos, ww, ts, xs, end
			if s == q.floor {
				return
			}
		}
	}
	lo := pos
	for w := 1; k > 1; k, lo, w = k>>1, lo&^w, w<<1 {
		if sib, slo := k^1, lo^w; q.admits(q.bound(&n[sib]), slo) {
			p.descend(t, sib, slo, w, q)
		}
	}
}

// bound is the least score any leaf under node k can have.
func (q *pquery) bound(n *node) dataplane.Time {
	return max(q.floor, n[fB]+q.offB, n[fD]+q.offD, n[fU]+q.offU)
}

// admits reports whether a subtree of bound b whose first leaf is at pool position lo can
// hold a better worker than the best so far.
func (q *pquery) admits(b dataplane.Time, lo int) bool {
	return b < q.best || b == q.best && lo < q.bpos
}

// descend searches the subtree of node k, whose leaves are pool positions [lo, lo+w).
func (p *PPipe) descend(t *poolTree, k, lo, w int, q *pquery) {
	if k >= t.size {
		if lo >= len(t.ws) {
			return
		}
		ww := t.ws[lo]
		if s, ts, xs, end := p.score(ww, q); s < q.best || s == q.best && lo < q.bpos {
			q.best, q.bpos, q.bw, q.bts, q.bxs, q.bend = s, lo, ww, ts, xs, end
		}
		return
	}
	w >>= 1
	l, r := 2*k, 2*k+1
	bl, br := q.bound(&t.n[l]), q.bound(&t.n[r])
	if br < bl {
		if q.admits(br, lo+w) {
			p.descend(t, r, lo+w, w, q)
		}
		if q.admits(bl, lo) {
			p.descend(t, l, lo, w, q)
		}
		return
	}
	if q.admits(bl, lo) {
		p.descend(t, l, lo, w, q)
	}
	if q.admits(br, lo+w) {
		p.descend(t, r, lo+w, w, q)
	}
}

// waitFloor is a lower bound on the wait probe(pp, b, now) reports, from the roots of the
// pipeline's pool trees alone (busy-until mode; interval mode gets no bound): every
// worker's batch at stage d ends at or after max(t + net + inf, min D + net + inf,
// min B + inf), where t bounds the previous stage's end from below (score's arithmetic
// with each term replaced by the pool's least). Step 1 of the dispatcher (PPipe Alg. 1)
// switches to a pipeline only on a strictly lower wait, so a pipeline whose floor is not
// below the best wait so far need not be probed: the decision is the same, and at
// moderate load, where the first pipeline often has no wait at all, about half of step
// 1's probes are skipped.
func (p *PPipe) waitFloor(pp *ppPipe, b int, now dataplane.Time) dataplane.Time {
	if p.res.interval {
		return -dataplane.Never
	}
	t := now
	var work dataplane.Time
	for d, tr := range pp.trees {
		if len(tr.ws) == 0 {
			return -dataplane.Never // probe's empty-pool result is no bound's business
		}
		root := &tr.n[1]
		inf, net := pp.lat[d][b], pp.net[d][b]
		work += inf + net
		end := max(t+net+inf, root[fB]+inf)
		if d > 0 {
			end = max(end, root[fD]+net+inf)
		}
		t = end
	}
	return t - now - work
}
