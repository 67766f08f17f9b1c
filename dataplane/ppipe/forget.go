package ppipe

import "github.com/plan-dev/plan/dataplane"

// idTable is per-request policy state indexed by ReqID from base: forget
// trims its front as the engine retires requests (dataplane.Forgetter, increasing ID order),
// so it spans only the requests between the oldest not yet forgotten and the newest set,
// however many requests have passed. Lookups stay O(1) slice indexing on the hot path.
type idTable[T any] struct {
	base dataplane.ReqID
	v    []T
}

// at returns id's entry (the zero value when unset or forgotten).
func (t *idTable[T]) at(id dataplane.ReqID) T {
	if id >= t.base && int(id-t.base) < len(t.v) {
		return t.v[id-t.base]
	}
	var zero T
	return zero
}

// set stores x for id; a forgotten id (below base) is ignored: the engine never shows one
// to a policy again.
func (t *idTable[T]) set(id dataplane.ReqID, x T) {
	if id < t.base {
		return
	}
	var zero T
	for int(id-t.base) >= len(t.v) {
		t.v = append(t.v, zero)
	}
	t.v[id-t.base] = x
}

// unset clears id's entry without growing the table.
func (t *idTable[T]) unset(id dataplane.ReqID) {
	if id >= t.base && int(id-t.base) < len(t.v) {
		var zero T
		t.v[id-t.base] = zero
	}
}

// forget drops every entry up to and including id. Re-slicing the front off is amortized
// O(1): the next append that outgrows the shortened capacity copies only the live span.
func (t *idTable[T]) forget(id dataplane.ReqID) {
	if id < t.base {
		return
	}
	n := int(id-t.base) + 1
	if n >= len(t.v) {
		t.v = t.v[:0]
	} else {
		clear(t.v[:n])
		t.v = t.v[n:]
	}
	t.base = id + 1
}

// size is the number of entries held (tests: memory depends on what is in flight).
func (t *idTable[T]) size() int { return len(t.v) }

// removeQueued takes request id out of q, keeping the others' order (EvCancel: a withdrawn
// request must never be dispatched). It reports whether id was queued. O(len(q)): cancels
// are rare next to arrivals, and the queue's hot path stays a plain slice.
func removeQueued(q *dataplane.ReqQueue, id dataplane.ReqID, scratch []dataplane.ReqID) (bool, []dataplane.ReqID) {
	n := q.Len()
	k := -1
	for i := 0; i < n; i++ {
		if q.At(i) == id {
			k = i
			break
		}
	}
	if k < 0 {
		return false, scratch
	}
	// Re-push the others: they are in order already, so every Push appends.
	scratch = append(scratch[:0], q.FrontN(n)...)
	scratch = append(scratch[:k], scratch[k+1:]...)
	q.Drop(n)
	for _, r := range scratch {
		q.Push(r)
	}
	return true, scratch
}
