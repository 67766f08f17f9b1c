package pard

import "github.com/plan-dev/plan/dataplane"

// DEPQ is a double-ended priority queue of requests (a min-max heap, Atkinson et al. 1986):
// PopMin and PopMax are both O(log n), Push is O(log n). PARD keeps one per worker keyed by
// the absolute deadline, so High Budget First pops the max end and Low Budget First the min
// end of the same structure; FIFO policies key it by arrival at the module and pop the min.
//
// Ties between equal keys are broken by request ID (smaller = "smaller"), which keeps every
// policy deterministic.
type DEPQ struct {
	h []depqItem
}

type depqItem struct {
	key dataplane.Time
	id  dataplane.ReqID
	aux dataplane.Time
}

func (a depqItem) less(b depqItem) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.id < b.id
}

// Len returns the number of queued requests.
func (q *DEPQ) Len() int { return len(q.h) }

// Push adds request id with key; aux is carried along untouched (PARD stores the arrival
// time at the module there, so a request can wait at two DAG branches at once).
func (q *DEPQ) Push(key dataplane.Time, id dataplane.ReqID, aux dataplane.Time) {
	q.h = append(q.h, depqItem{key, id, aux})
	q.bubbleUp(len(q.h) - 1)
}

// Min returns the smallest (key, id) without removing it; ok is false when empty.
func (q *DEPQ) Min() (key dataplane.Time, id dataplane.ReqID, ok bool) {
	if len(q.h) == 0 {
		return 0, -1, false
	}
	return q.h[0].key, q.h[0].id, true
}

// Max returns the largest (key, id) without removing it; ok is false when empty.
func (q *DEPQ) Max() (key dataplane.Time, id dataplane.ReqID, ok bool) {
	i := q.maxIndex()
	if i < 0 {
		return 0, -1, false
	}
	return q.h[i].key, q.h[i].id, true
}

// PopMin removes the smallest entry and returns its key, request and aux value (the queue
// must not be empty).
func (q *DEPQ) PopMin() (dataplane.Time, dataplane.ReqID, dataplane.Time) { return q.removeAt(0) }

// PopMax removes the largest entry and returns its key, request and aux value (the queue
// must not be empty).
func (q *DEPQ) PopMax() (dataplane.Time, dataplane.ReqID, dataplane.Time) {
	return q.removeAt(q.maxIndex())
}

// Reset empties the queue, keeping its storage.
func (q *DEPQ) Reset() { q.h = q.h[:0] }

func (q *DEPQ) maxIndex() int {
	switch len(q.h) {
	case 0:
		return -1
	case 1:
		return 0
	case 2:
		return 1
	}
	if q.h[1].less(q.h[2]) {
		return 2
	}
	return 1
}

// onMinLevel reports whether index i sits on a min level (even depth).
func onMinLevel(i int) bool {
	d := 0
	for i++; i > 1; i >>= 1 {
		d++
	}
	return d%2 == 0
}

func (q *DEPQ) removeAt(i int) (dataplane.Time, dataplane.ReqID, dataplane.Time) {
	it := q.h[i]
	n := len(q.h) - 1
	q.h[i] = q.h[n]
	q.h = q.h[:n]
	if i < n {
		// Only the root and its children are ever removed, so the moved element can only
		// need to go down (it is ≥ the root's min and ≤ the max-level root's max).
		q.trickleDown(i)
	}
	return it.key, it.id, it.aux
}

func (q *DEPQ) bubbleUp(i int) {
	if i == 0 {
		return
	}
	p := (i - 1) / 2
	if onMinLevel(i) {
		if q.h[p].less(q.h[i]) {
			q.h[i], q.h[p] = q.h[p], q.h[i]
			q.bubbleUpDir(p, false)
		} else {
			q.bubbleUpDir(i, true)
		}
	} else {
		if q.h[i].less(q.h[p]) {
			q.h[i], q.h[p] = q.h[p], q.h[i]
			q.bubbleUpDir(p, true)
		} else {
			q.bubbleUpDir(i, false)
		}
	}
}

// bubbleUpDir moves i up through its grandparents on min levels (min=true) or max levels.
func (q *DEPQ) bubbleUpDir(i int, min bool) {
	for i > 2 {
		g := ((i-1)/2 - 1) / 2
		if min && q.h[i].less(q.h[g]) || !min && q.h[g].less(q.h[i]) {
			q.h[i], q.h[g] = q.h[g], q.h[i]
			i = g
			continue
		}
		return
	}
}

func (q *DEPQ) trickleDown(i int) {
	min := onMinLevel(i)
	n := len(q.h)
	for {
		// m: the smallest (largest) among children and grandchildren.
		c := 2*i + 1
		if c >= n {
			return
		}
		m := c
		better := func(a, b int) bool { // a better than b
			if min {
				return q.h[a].less(q.h[b])
			}
			return q.h[b].less(q.h[a])
		}
		for _, k := range [...]int{c + 1, 2*c + 1, 2*c + 2, 2*(c+1) + 1, 2*(c+1) + 2} {
			if k < n && better(k, m) {
				m = k
			}
		}
		if m <= c+1 { // a child
			if better(m, i) {
				q.h[i], q.h[m] = q.h[m], q.h[i]
			}
			return
		}
		// a grandchild
		if !better(m, i) {
			return
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		p := (m - 1) / 2
		if better(p, m) {
			q.h[m], q.h[p] = q.h[p], q.h[m]
		}
		i = m
	}
}

// Remove takes every entry of request id out of the queue and reports whether there was
// one (EvCancel: a withdrawn request must never reach a batch). It filters the heap and
// rebuilds it bottom-up (Floyd's method, linear for a min-max heap too, Atkinson et al.
// 1986): O(n), which a cancel can afford, while Push and the pops stay O(log n).
func (q *DEPQ) Remove(id dataplane.ReqID) bool {
	k := 0
	for _, it := range q.h {
		if it.id != id {
			q.h[k] = it
			k++
		}
	}
	if k == len(q.h) {
		return false
	}
	q.h = q.h[:k]
	for i := k/2 - 1; i >= 0; i-- {
		q.trickleDown(i)
	}
	return true
}
