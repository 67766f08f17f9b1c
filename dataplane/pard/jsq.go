package pard

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// pick is the module's dispatcher: join-shortest-queue over the workers that serve now (queued
// + forming requests), ties broken round-robin (PARD §4.1 leaves the dispatcher open): the
// first worker with the least load in pool order from m.rr on, wrapping around. The module's
// jsq tree answers that in O(log n) instead of a scan of every worker;
// pickLinear in the tests is the scan it must agree with.
func (p *Pipeline) pick(now dataplane.Time, m *pardModule) dataplane.WorkerID {
	if now >= m.nextAct {
		p.reindex(m, now)
	}
	n := len(m.workers)
	best := dataplane.NoWorker
	if lo := m.jsq.n[1]; lo != jsqIdle {
		i := m.jsq.first(1, 0, m.jsq.size, m.rr, lo)
		if i < 0 {
			i = m.jsq.first(1, 0, m.jsq.size, 0, lo)
		}
		best = m.workers[i]
	}
	if p.checkPick != nil {
		p.checkPick(now, m, best)
	}
	m.rr = (m.rr + 1) % n
	if best == dataplane.NoWorker {
		// Nothing serves (every worker is cold): queue at the first worker, which drains
		// when it starts; the estimate will drop what cannot wait.
		best = m.workers[0]
		if p.workers[best].down {
			best = p.coldLive(m)
		}
	}
	return best
}

// coldLive is the first provisioned worker of m that is not down (a cold one: pick found
// none serving), or NoWorker: then no worker of the module will serve without a recovery.
func (p *Pipeline) coldLive(m *pardModule) dataplane.WorkerID {
	for _, w := range m.workers {
		if pw := &p.workers[w]; !pw.down && pw.activeAt != dataplane.Never {
			return w
		}
	}
	return dataplane.NoWorker
}

// load is worker pw's join-shortest-queue load (Never-like jsqIdle while it does not
// serve at the module's actNow): twice its queued and forming requests, plus one while
// it runs a batch, so a running worker loses ties to an idle one with the same queue.
func (p *Pipeline) load(m *pardModule, pw *pardWorker) int {
	if pw.activeAt > m.actNow || pw.down {
		return jsqIdle
	}
	l := 2 * (pw.q.Len() + len(pw.forming))
	if pw.busy {
		l++
	}
	return l
}

// reload refreshes worker w's jsq leaf after its queue, forming batch or busy flag changed.
func (p *Pipeline) reload(w dataplane.WorkerID) {
	pw := &p.workers[w]
	m := &p.mods[pw.mod]
	if len(m.jsq.n) == 0 {
		return
	}
	m.jsq.set(pw.pos, p.load(m, pw))
}

// reindex rebuilds module m's jsq tree as of now (at attach, after the autoscaler moved
// activeAt, and when a cold worker's activeAt has passed).
func (p *Pipeline) reindex(m *pardModule, now dataplane.Time) {
	m.actNow = now
	m.nextAct = dataplane.Never
	t := &m.jsq
	if len(t.n) == 0 {
		t.size = 1
		for t.size < len(m.workers) {
			t.size *= 2
		}
		t.n = make([]int, 2*t.size)
	}
	for i := range t.n[t.size:] {
		t.n[t.size+i] = jsqIdle
	}
	for i, w := range m.workers {
		pw := &p.workers[w]
		t.n[t.size+i] = p.load(m, pw)
		if pw.activeAt > now && pw.activeAt < m.nextAct {
			m.nextAct = pw.activeAt
		}
	}
	for k := t.size - 1; k >= 1; k-- {
		t.n[k] = min(t.n[2*k], t.n[2*k+1])
	}
}

// jsqIdle is the load of a worker that does not serve: above every real load.
const jsqIdle = math.MaxInt

// jsqTree is a min segment tree over a module's workers in pool order (root 1, leaves
// [size, 2·size), padding jsqIdle).
type jsqTree struct {
	n    []int
	size int
}

func (t *jsqTree) set(pos, v int) {
	k := t.size + pos
	if t.n[k] == v {
		return
	}
	t.n[k] = v
	for k > 1 {
		k >>= 1
		m := min(t.n[2*k], t.n[2*k+1])
		if t.n[k] == m {
			return
		}
		t.n[k] = m
	}
}

// first returns the first leaf position ≥ from under node k (covering [lo, hi)) whose
// load is ≤ v, or -1.
func (t *jsqTree) first(k, lo, hi, from, v int) int {
	if hi <= from || t.n[k] > v {
		return -1
	}
	if k >= t.size {
		return lo
	}
	mid := (lo + hi) / 2
	if i := t.first(2*k, lo, mid, from, v); i >= 0 {
		return i
	}
	return t.first(2*k+1, mid, hi, from, v)
}
