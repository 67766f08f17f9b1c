package sim

import (
	"math/bits"

	"github.com/plan-dev/plan/dataplane"
)

// evqueue is the simulator's event queue: events in (time, creation order) order, as a
// dataplane.TimeHeap on (At, Seq) orders them (any exact priority queue on that total order
// pops the same sequence, so results do not depend on its shape).
//
// It is a radix heap (Ahuja, Mehlhorn, Orlin, Tarjan 1990), which a discrete-event loop can
// use because virtual time never goes back: every event is pushed at or after the time of
// the last one popped. A binary heap holding one event per busy worker and link (thousands
// at 1,600 GPUs, issue 15 item 4) spends a dozen unpredictable comparisons per pop; here
// an event at time t sits in bucket bits.Len(t XOR last), where last is the time of the
// latest bucket refill, and moves only to lower buckets, a few times in its life, by
// sequential appends. Bucket 0 holds the events at exactly last and is popped in order.
// Buckets hold 16-byte (time, slot) keys; the events stay in a slab whose freed slots are
// reused first, so moving costs a third of moving events and a pop reads a warm slot.
//
// Ties: events due at the same time always share a bucket (the bucket depends only on the
// time and last), appends keep push order, and a refill re-appends a bucket's events in
// its order, so equal times pop in push order, which is dataplane.TimeHeap's sequence
// tie-break. An event pushed before last (the simulator never does) goes to a small binary
// heap that is popped first: everything in it is earlier than everything in the buckets.
type evqueue struct {
	b [65][]evitem
	// head is how much of b[0] has been popped.
	head int
	// full has bit i-1 set when bucket i ≥ 1 is not empty.
	full uint64
	last dataplane.Time
	n    int
	past dataplane.TimeHeap[dataplane.Event]
	seq  uint64
	evs  []dataplane.Event
	free []int32
}

type evitem struct {
	at   dataplane.Time
	slot int32
}

// Len returns the number of queued events.
func (q *evqueue) Len() int { return q.n }

// Push queues ev at time t, after every event already queued for t.
func (q *evqueue) Push(t dataplane.Time, ev dataplane.Event) {
	q.n++
	if t < q.last {
		q.seq++
		q.past.Push(dataplane.Timed[dataplane.Event]{At: t, Seq: q.seq, Val: ev})
		return
	}
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.evs[slot] = ev
	} else {
		slot = int32(len(q.evs))
		q.evs = append(q.evs, ev)
	}
	i := bits.Len64(uint64(t ^ q.last))
	q.b[i] = append(q.b[i], evitem{t, slot})
	if i > 0 {
		q.full |= 1 << (i - 1)
	}
}

// Pop removes and returns the earliest event; the queue must not be empty.
func (q *evqueue) Pop() (dataplane.Time, dataplane.Event) {
	q.n--
	if len(q.past) > 0 {
		x := q.past.Pop()
		return x.At, x.Val
	}
	if q.head == len(q.b[0]) {
		q.refill()
	}
	x := q.b[0][q.head]
	q.head++
	q.free = append(q.free, x.slot)
	return x.at, q.evs[x.slot]
}

// refill moves the events of the lowest non-empty bucket, whose earliest time becomes last,
// down to the buckets they belong in now (those at last into bucket 0).
func (q *evqueue) refill() {
	q.b[0], q.head = q.b[0][:0], 0
	i := bits.TrailingZeros64(q.full) + 1
	src := q.b[i]
	m := src[0].at
	for k := 1; k < len(src); k++ {
		m = min(m, src[k].at)
	}
	q.last = m
	for k := range src {
		j := bits.Len64(uint64(src[k].at ^ m))
		q.b[j] = append(q.b[j], src[k])
		if j > 0 {
			q.full |= 1 << (j - 1)
		}
	}
	q.b[i] = src[:0]
	q.full &^= 1 << (i - 1)
}
