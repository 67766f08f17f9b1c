package dyorc

import (
	"iter"

	"github.com/plan-dev/plan/dataplane"
)

// The scheduler recycles its per-request state, tasks and reservations through free lists
// rather than leaving them to the collector: at 128 GPUs under the 16× load they were a third
// of the bytes a run allocated, and the mark work over a heap that grows with the run was
// ~25% of an event's instructions (cachegrind), against ~12% at 8 GPUs, where the heap stays
// under the collector's 4 MB minimum. Recycling changes no decision: every field is written
// when an object is taken, and an object is freed only once nothing the scheduler keeps
// (reqs, a GPU's queue, runTasks, resv or order, a chain, qdevs) points to it. A freed object
// is not cleared, so one that a caller still reads in the same step (purge's list of tasks)
// reads as it was until the next take.

// newReqState returns the state of a request of app a that has just arrived.
func (p *Policy) newReqState(a int) *reqState {
	rs := p.freeReqs.take()
	clear(rs.chain)
	clear(rs.qdevs)
	*rs = reqState{app: a, prevDev: -1, prevSvc: -1, on: dataplane.NoWorker,
		calls: rs.calls[:0], chain: rs.chain[:0], flowPred: rs.flowPred[:0], qdevs: rs.qdevs[:0]}
	return rs
}

// release forgets request r, whose state is rs, and frees rs. A request may be released
// twice (purge can cancel the request whose call is shedding), and its caller may still
// write rs in the same step: the free flag keeps rs once on the list, and newReqState
// resets every field.
func (p *Policy) release(r dataplane.ReqID, rs *reqState) {
	p.reqs.del(r)
	if !rs.free {
		rs.free = true
		p.freeReqs.put(rs)
	}
}

// freeList is a stack of objects to reuse (request states, tasks, reservations).
type freeList[T any] []*T

// take pops an object to reuse, else makes one; the caller writes every field.
func (f *freeList[T]) take() *T {
	n := len(*f)
	if n == 0 {
		return new(T)
	}
	x := (*f)[n-1]
	(*f)[n-1] = nil
	*f = (*f)[:n-1]
	return x
}

// put hands xs back for reuse; nothing the scheduler keeps may still point to them.
func (f *freeList[T]) put(xs ...*T) { *f = append(*f, xs...) }

// reqTable maps the tracked requests' IDs to their states: the engine numbers requests in
// arrival order, so the IDs in flight span a window that moves forward, and the table holds
// it in chunks of reqChunk slots indexed by ID, dropping a chunk once it holds no request and
// a later chunk exists (its IDs have all arrived). It replaced a map: at 128 GPUs under the
// 16× load ~6k requests are in flight, and the map's growth and hashing (a lookup at every
// call, queued task and finished batch) cost more than two loads.
type reqTable struct {
	// base is the chunk index (ID >> reqChunkBits) of chunks[0]; chunks[i] is nil when it holds
	// no request, live[i] the number it holds.
	base   int
	chunks [][]*reqState
	live   []int32
	n      int
	spare  [][]*reqState
}

const (
	reqChunkBits = 10
	reqChunk     = 1 << reqChunkBits
)

// get is request id's state (nil when it is not tracked).
func (t *reqTable) get(id dataplane.ReqID) *reqState {
	k := int(id>>reqChunkBits) - t.base
	if id < 0 || k < 0 || k >= len(t.chunks) || t.chunks[k] == nil {
		return nil
	}
	return t.chunks[k][id&(reqChunk-1)]
}

// set tracks request id (not tracked yet) with state rs.
func (t *reqTable) set(id dataplane.ReqID, rs *reqState) {
	c := int(id >> reqChunkBits)
	if len(t.chunks) == 0 {
		t.base = c
	}
	for c < t.base { // an ID below the window (not seen from the engine, which numbers in order)
		t.chunks = append([][]*reqState{nil}, t.chunks...)
		t.live = append([]int32{0}, t.live...)
		t.base--
	}
	k := c - t.base
	for k >= len(t.chunks) {
		t.chunks = append(t.chunks, nil)
		t.live = append(t.live, 0)
	}
	if t.chunks[k] == nil {
		if n := len(t.spare); n > 0 {
			t.chunks[k], t.spare = t.spare[n-1], t.spare[:n-1]
		} else {
			t.chunks[k] = make([]*reqState, reqChunk)
		}
	}
	t.chunks[k][id&(reqChunk-1)] = rs
	t.live[k]++
	t.n++
}

// del stops tracking request id (tracked).
func (t *reqTable) del(id dataplane.ReqID) {
	k := int(id>>reqChunkBits) - t.base
	if id < 0 || k < 0 || k >= len(t.chunks) || t.chunks[k] == nil || t.chunks[k][id&(reqChunk-1)] == nil {
		return
	}
	t.chunks[k][id&(reqChunk-1)] = nil
	t.live[k]--
	t.n--
	if t.live[k] == 0 && k < len(t.chunks)-1 {
		// Empty, and later IDs have arrived: none of its IDs comes back.
		t.spare = append(t.spare, t.chunks[k])
		t.chunks[k] = nil
		for len(t.chunks) > 1 && t.chunks[0] == nil {
			t.chunks, t.live = t.chunks[1:], t.live[1:]
			t.base++
		}
	}
}

// len is the number of requests tracked.
func (t *reqTable) len() int { return t.n }

// all yields the tracked requests in ID order.
func (t *reqTable) all() iter.Seq2[dataplane.ReqID, *reqState] {
	return func(yield func(dataplane.ReqID, *reqState) bool) {
		for k, ch := range t.chunks {
			for i, rs := range ch {
				if rs != nil && !yield(dataplane.ReqID((t.base+k)<<reqChunkBits+i), rs) {
					return
				}
			}
		}
	}
}
