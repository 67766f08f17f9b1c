package cascade

import "github.com/plan-dev/plan/dataplane"

// A replica's queue is one array of request IDs with its head, and the head's arrival (the
// GPU's pick of the oldest head and the trigger's timeout read it, §4.5). Deficit routing
// spreads consecutive requests over every replica of a model, so at hundreds of replicas
// the tail a push writes is a cache line no recent push touched; queues also hold hundreds
// of requests while a lower gear's backlog drains (§5's α rule). Four-byte entries put
// sixteen pushes on a line where (ID, arrival) pairs put four, and only the head's arrival
// is ever read: it is kept beside the head, set from the push into an empty queue or, when
// a batch start or a drop moves the head, from the request (pushes always pass the request's
// own Arrival, so the value is the one an entry would have held).

// wqueue is one replica's FIFO, with what every push and batch start reads of the replica
// beside it: ids[head:] wait; at is the arrival of ids[head] when any waits; stage and the
// GPU list (ngpu, gpu) are the replica's (tab.Replicas[w]). At hundreds of replicas a push's replica is one no
// recent event touched, and its queue header and its replica spec (stage, GPU list) were a
// miss each, in two arrays; one 64-byte record makes them one: an array of them is 64-byte
// aligned (a multiple of 64 bytes gets a size class that is a multiple of 64, in a
// page-aligned span; large arrays are page-aligned), so no record straddles two lines.
//
// The GPU list is held in the record itself, up to inlineGPUs GPUs (every replica of the
// golden plan and of the scale cases has one): as a slice into a shared array it was one
// more line per push (markW) and per replica tried (tryGPU's free check), an L1 miss at
// hundreds of replicas. A replica on more GPUs keeps them in Policy.wideGPUs.
type wqueue struct {
	ids   []dataplane.ReqID
	at    dataplane.Time
	head  int32
	stage int32
	ngpu  uint32
	gpu   [inlineGPUs]int32
}

// inlineGPUs is how many GPU IDs the queue record holds: what fills its 64 bytes.
const inlineGPUs = 5

func (q *wqueue) len() int { return len(q.ids) - int(q.head) }

// push appends request id, which arrived at at.
func (q *wqueue) push(id dataplane.ReqID, at dataplane.Time) {
	if q.len() == 0 {
		q.at = at
	}
	q.ids = append(q.ids, id)
}

// front is the head's ID (the queue must not be empty).
func (q *wqueue) front() dataplane.ReqID { return q.ids[q.head] }

// reset empties the queue, keeping its array.
func (q *wqueue) reset() { q.ids, q.head = q.ids[:0], 0 }

// advance removes the first n waiting requests and reads the new head's arrival from v.
func (q *wqueue) advance(n int, v dataplane.View) {
	q.head += int32(n)
	if int(q.head) == len(q.ids) {
		q.reset()
		return
	}
	if q.head > 4096 {
		q.ids = append(q.ids[:0], q.ids[q.head:]...)
		q.head = 0
	}
	q.at = v.Req(q.ids[q.head]).Arrival
}

// take appends the IDs of the first n waiting requests to dst and removes them.
func (q *wqueue) take(n int, dst []dataplane.ReqID, v dataplane.View) []dataplane.ReqID {
	h := int(q.head)
	dst = append(dst, q.ids[h:h+n]...)
	q.advance(n, v)
	return dst
}

// appendIDs appends the IDs of every waiting request to dst.
func (q *wqueue) appendIDs(dst []dataplane.ReqID) []dataplane.ReqID {
	return append(dst, q.ids[q.head:]...)
}

// remove takes request id out of the queue: whether it was there and whether it was the
// head.
func (q *wqueue) remove(id dataplane.ReqID, v dataplane.View) (found, wasHead bool) {
	for i := int(q.head); i < len(q.ids); i++ {
		if q.ids[i] != id {
			continue
		}
		if i == int(q.head) {
			q.advance(1, v)
			return true, true
		}
		q.ids = append(q.ids[:i], q.ids[i+1:]...)
		return true, false
	}
	return false, false
}

// The states pendingOf records for a batch's requests.
const (
	reqFinished  uint8 = iota // finished (dropped, or cancelled) while the batch ran
	reqPending                // pending
	reqWithdrawn              // pending, withdrawn while the batch ran (CancelRequested)
)

// pendingOf sets pend[i] to request ids[i]'s state (reqFinished, reqPending, reqWithdrawn),
// reusing pend's array. A batch's end reads this first, in a loop of independent loads: at
// hundreds of replicas the requests of one batch lie far apart in the engine's table, and
// their misses overlap here where the decision loop, one request at a time, would wait for
// each in turn. CancelRequested lies on Outcome's line, and a decision loop that needs
// nothing else of the record (cocktail+'s) then reads none: for a batch of hundreds, more
// lines than the first-level cache holds, the second read of each missed it again. The
// view does not change while the policy decides (decisions apply after Handle returns).
func pendingOf(v dataplane.View, ids []dataplane.ReqID, pend []uint8) []uint8 {
	pend = pend[:0]
	for _, id := range ids {
		r := v.Req(id)
		s := reqFinished
		if r.Outcome == dataplane.Pending {
			s = reqPending
			if r.CancelRequested {
				s = reqWithdrawn
			}
		}
		pend = append(pend, s)
	}
	return pend
}
