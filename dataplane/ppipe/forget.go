package ppipe

import "github.com/plan-dev/plan/dataplane"

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
