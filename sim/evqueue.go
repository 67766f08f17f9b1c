package sim

import (
	"math/bits"
	"unsafe"

	"github.com/plan-dev/plan/dataplane"
)

// evqueue is the simulator's event queue: events in (time, creation order) order, as a
// dataplane.TimeHeap on (At, Seq) orders them (any exact priority queue on that total order
// pops the same sequence, so results do not depend on its shape).
//
// It is a radix heap (Ahuja, Mehlhorn, Orlin, Tarjan 1990) with base-256 digits, which a
// discrete-event loop can use because virtual time never goes back: every event is pushed
// at or after last, the time of the latest event popped. An event at time t sits at level
// L, the highest base-256 digit in which t and last differ (0 when they differ in none), in
// the bucket of t's digit L. At level 0 a bucket therefore holds exactly one instant, and
// the lowest non-empty one is the next to pop; when level 0 is empty the lowest bucket of
// the lowest non-empty level is spread over the levels below it, with last set to its
// earliest time. Popping never changes which bucket any other event belongs in, so an
// event moves only to lower levels, at most once per level and in practice once or twice
// (a batch lasts thousands of µs: level 1 or 2). A binary heap holding one event per busy
// worker and link (thousands at 1,600 GPUs) spends a dozen unpredictable
// comparisons per pop; a base-2 radix heap moves each event three to four times. Buckets
// hold 16-byte (time, slot) keys; the events stay in a slab of line-sized slots whose freed
// slots are reused first, so a move copies a third of an event and a push writes a warm slot.
//
// Ties: events due at the same time always share a bucket (the bucket depends only on the
// time and last), appends keep push order, and spreading a bucket re-appends its events in
// its order, so equal times pop in push order, which is dataplane.TimeHeap's sequence
// tie-break. An event pushed before last (the simulator never does) goes to a small binary
// heap that is popped first: everything in it is earlier than everything in the buckets.
type evqueue struct {
	b    [radixLevels][radixSlots][]evitem
	full [radixLevels][radixSlots / 64]uint64
	// head is how much of the level-0 bucket of last has been popped.
	head int
	last dataplane.Time
	n    int
	past dataplane.TimeHeap[dataplane.Event]
	seq  uint64
	evs  []evslot
	free []int32
}

// evslot is a slab slot: an event padded to a 64-byte cache line. A 48-byte event at 48-byte
// strides straddled two lines in every other slot, and at 1,600 GPUs the slot a pop reads
// (pushed thousands of events earlier) is mostly out of the first-level cache, so each
// straddling pop missed twice.
type evslot struct {
	ev dataplane.Event
	_  [(64 - unsafe.Sizeof(dataplane.Event{})%64) % 64]byte
}

const (
	radixBits   = 8
	radixSlots  = 1 << radixBits
	radixLevels = (64 + radixBits - 1) / radixBits
)

type evitem struct {
	at   dataplane.Time
	slot int32
}

// Len returns the number of queued events.
func (q *evqueue) Len() int { return q.n }

// bucket returns the level and bucket of time t ≥ q.last.
func (q *evqueue) bucket(t dataplane.Time) (level, digit int) {
	x := uint64(t ^ q.last)
	if x >= radixSlots {
		level = (bits.Len64(x) - 1) / radixBits
	}
	return level, int(uint64(t)>>(level*radixBits)) & (radixSlots - 1)
}

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
		q.evs[slot].ev = ev
	} else {
		slot = int32(len(q.evs))
		q.evs = append(q.evs, evslot{ev: ev})
	}
	l, d := q.bucket(t)
	q.b[l][d] = append(q.b[l][d], evitem{t, slot})
	q.full[l][d/64] |= 1 << (d % 64)
}

// Pop removes and returns the earliest event; the queue must not be empty.
func (q *evqueue) Pop() (dataplane.Time, dataplane.Event) {
	q.n--
	if len(q.past) > 0 {
		x := q.past.Pop()
		return x.At, x.Val
	}
	d := int(q.last) & (radixSlots - 1)
	cur := q.b[0][d]
	if q.head == len(cur) {
		q.b[0][d] = cur[:0]
		q.full[0][d/64] &^= 1 << (d % 64)
		d = q.advance()
		cur = q.b[0][d]
	}
	x := cur[q.head]
	q.head++
	q.free = append(q.free, x.slot)
	return x.at, q.evs[x.slot].ev
}

// advance moves last to the earliest queued time (the queue holds one), spreading the
// lowest bucket of the lowest non-empty level when level 0 is empty, and returns that
// time's level-0 bucket.
func (q *evqueue) advance() int {
	q.head = 0
	if d, ok := lowest(&q.full[0]); ok {
		q.last = q.last&^(radixSlots-1) | dataplane.Time(d)
		return d
	}
	for l := 1; l < radixLevels; l++ {
		d, ok := lowest(&q.full[l])
		if !ok {
			continue
		}
		src := q.b[l][d]
		m := src[0].at
		for k := 1; k < len(src); k++ {
			m = min(m, src[k].at)
		}
		q.last = m
		for _, it := range src {
			ll, dd := q.bucket(it.at)
			q.b[ll][dd] = append(q.b[ll][dd], it)
			q.full[ll][dd/64] |= 1 << (dd % 64)
		}
		q.b[l][d] = src[:0]
		q.full[l][d/64] &^= 1 << (d % 64)
		return int(m) & (radixSlots - 1)
	}
	panic("sim: pop from an empty event queue")
}

// lowest returns the lowest set bit of a bucket bitmap.
func lowest(m *[radixSlots / 64]uint64) (int, bool) {
	for w, x := range m {
		if x != 0 {
			return w*64 + bits.TrailingZeros64(x), true
		}
	}
	return 0, false
}
