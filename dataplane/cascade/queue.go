package cascade

import "github.com/plan-dev/plan/dataplane"

// A replica's queue keeps, with each request, when it entered the system (the GPU's pick of
// the oldest head and the trigger's timeout read it), in one array: a push or a batch start
// touches one queue header and one run of memory, where separate ID, time and head arrays
// per worker cost a cache miss each once the replicas outgrow the cache (256 GPUs).

// queued is one waiting request: its ID and its arrival.
type queued struct {
	id dataplane.ReqID
	at dataplane.Time
}

// wqueue is one replica's FIFO: items[head:] wait.
type wqueue struct {
	items []queued
	head  int
}

func (q *wqueue) len() int { return len(q.items) - q.head }

func (q *wqueue) push(id dataplane.ReqID, at dataplane.Time) {
	q.items = append(q.items, queued{id, at})
}

// front is the head (the queue must not be empty).
func (q *wqueue) front() queued { return q.items[q.head] }

// reset empties the queue, keeping its array.
func (q *wqueue) reset() { q.items, q.head = q.items[:0], 0 }

// take appends the IDs of the first n waiting requests to dst and removes them.
func (q *wqueue) take(n int, dst []dataplane.ReqID) []dataplane.ReqID {
	for _, it := range q.items[q.head : q.head+n] {
		dst = append(dst, it.id)
	}
	q.head += n
	if q.head == len(q.items) {
		q.reset()
	} else if q.head > 4096 {
		q.items = append(q.items[:0], q.items[q.head:]...)
		q.head = 0
	}
	return dst
}

// appendIDs appends the IDs of every waiting request to dst.
func (q *wqueue) appendIDs(dst []dataplane.ReqID) []dataplane.ReqID {
	for _, it := range q.items[q.head:] {
		dst = append(dst, it.id)
	}
	return dst
}

// remove takes request id out of the queue: whether it was there and whether it was the
// head.
func (q *wqueue) remove(id dataplane.ReqID) (found, wasHead bool) {
	for i := q.head; i < len(q.items); i++ {
		if q.items[i].id != id {
			continue
		}
		wasHead = i == q.head
		q.items = append(q.items[:i], q.items[i+1:]...)
		if q.len() == 0 {
			q.reset()
		}
		return true, wasHead
	}
	return false, false
}

// pendingOf sets pend[i] to whether request ids[i] is still pending, reusing pend's array.
// A batch's end reads this first, in a loop of independent loads: at hundreds of replicas
// the requests of one batch lie far apart in the engine's table, and their misses overlap
// here where the decision loop, one request at a time, would wait for each in turn. The
// view does not change while the policy decides (decisions apply after Handle returns).
func pendingOf(v dataplane.View, ids []dataplane.ReqID, pend []bool) []bool {
	pend = pend[:0]
	for _, id := range ids {
		pend = append(pend, v.Req(id).Outcome == dataplane.Pending)
	}
	return pend
}
