package dataplane

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Hop is one stage of a batch's route with its reservation and what actually happened.
type Hop struct {
	Stage  StageID
	Worker WorkerID
	// ResStart and OutRes are the reserved starts of execution and of the outgoing transfer.
	ResStart, OutRes Time
	// Nominal is the profiled latency at the batch's size; OutNominal the outgoing transfer.
	Nominal, OutNominal Time
	// Start/End: actual execution (-1 until reported). OutStart/OutEnd: actual outgoing
	// transfer (-1 if none or not yet).
	Start, End       Time
	OutStart, OutEnd Time
	// ready: the input is at the worker; outReady: the output waits for the transfer.
	ready, outReady bool
}

// hopBit is the bit of hop hop's ready flag (out: its outReady flag) in the batch's byte of
// Engine.hopBits. Four hops share the byte's bits (hop mod 4), so a bit set means a flag of
// that hop may be set (read the hop), a bit clear that it is not. tryWorker and tryLink find
// the front of a queue not ready a third and two thirds of the time (1,600 GPUs: 2.1M of
// 6.2M and 3.9M of 6.0M; a transfer's links free before the next batch's hop ran): the byte
// answers from a few kilobytes that stay in cache, where the batch record and its hops are
// two dependent misses once thousands of batches are in flight. Bits are never cleared (a
// hop's ready flag stays set; a transfer leaves its queues when its outReady is cleared).
func hopBit(hop int32, out bool) uint8 {
	b := uint8(1) << (hop & 3)
	if out {
		b <<= 4
	}
	return b
}

// markHop sets hop hop's bit in batch id's filter byte (hopBit).
func (e *Engine) markHop(id BatchID, hop int32, out bool) {
	e.hopBits[id-e.batchBase] |= hopBit(hop, out)
}

// mayBeReady reports whether hop hop of batch id may have its ready (out: outReady) flag set.
func (e *Engine) mayBeReady(id BatchID, hop int32, out bool) bool {
	return e.hopBits[id-e.batchBase]&hopBit(hop, out) != 0
}

// Batch is a group of requests dispatched together along a path; it keeps its identity and
// reserved path through all its hops (PPipe never re-batches downstream).
type Batch struct {
	ID         BatchID
	App        AppID
	Reqs       []ReqID
	Hops       []Hop
	Dispatched Time
	// Lost: a worker on the batch's path failed before the batch got past it (EvWorkerDown);
	// its requests were released and its remaining hops and transfers cancelled.
	Lost bool
	// lazyWork: a batch of two hops whose requests are in no other batch while it holds
	// them (an application without fan-out) keeps its first hop's GPU share in share0, and
	// its requests' WorkGPU gets both shares, in hop order, when its second hop ends. At
	// 1,600 GPUs a request's record is out of cache by the time either hop ends (15.5 and
	// 5 ms apart on the fixture's pipelines), so the first hop's pass over the requests was
	// a miss per request; each request gets the same additions in the same order, and
	// nothing reads WorkGPU while a batch holds the request. share0 lies on the line of Lost,
	// which batchDone reads first.
	lazyWork bool
	// running counts the batch's hops and transfers in progress, whose completions the
	// driver still owes (a lost batch is closed once none is). It sits beside Lost, in the
	// padding after the flags: the record is 80 bytes, and the 16 from Lost on, which every
	// hop's and transfer's start and end read, never straddle two lines (88 bytes with
	// running last put them on two lines for a quarter of the batches).
	running int32
	share0  float64
}

// Size returns the number of requests in the batch.
func (b *Batch) Size() int { return len(b.Reqs) }

// arena hands out small slices carved from large chunks, so per-batch and per-request
// slices cost no allocation each. Slices are capped at their length, so appending to one
// never overwrites its neighbour. A chunk is arenaBytes whatever T is: a new chunk is
// zeroed when made, and the slices carved from it are written soon after only if it is
// small enough to stay in cache meanwhile. Chunks of 16,384 hops (1.3 MB) were evicted
// between the zeroing and the use at 1,600 GPUs, whose larger working set leaves less of
// the core's cache, so writing a batch's hops missed where at 100 GPUs it hit.
type arena[T any] struct {
	chunk []T
}

const arenaBytes = 64 << 10

func (a *arena[T]) take(n int) []T {
	var x T
	per := max(arenaBytes/int(unsafe.Sizeof(x)), 64)
	if n > per/4 {
		return make([]T, n)
	}
	if len(a.chunk) < n {
		a.chunk = make([]T, per)
	}
	s := a.chunk[:n:n]
	a.chunk = a.chunk[n:]
	return s
}

// entry is a queued unit of work on a worker or link, ordered by (res, seq).
type entry struct {
	b   BatchID
	hop int32
	res Time
	seq int64
}

func (a entry) less(b entry) bool {
	if a.res != b.res {
		return a.res < b.res
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.hop < b.hop
}

// fifo is an ordered queue with cheap pops at the front and sorted inserts near the back.
// The front entry lives in the queue's header, inside the worker's or link's own record, and
// only the entries behind it in a ring buffer: tryWorker and tryLink, which look at the
// front of queues whose owners they read anyway, then read one line instead of following the
// buffer pointer to a second one, and a queue of one entry never touches its buffer (half
// the inserts at 1,600 GPUs find the queue empty). The ring keeps a queue that never empties
// (a busy worker's, 2-3 entries behind the front) on the same few lines: a buffer whose
// live part walks forward until a compaction touched a fresh line every few inserts, and at
// 1,600 GPUs those walks over 4,800 queues do not stay in cache. The ring's header comes
// last: the front, n and head then lie on the owner's first line (workerState, linkState).
type fifo struct {
	first entry // the front, when n > 0
	n     int32
	head  int32
	ring  []entry // the n-1 entries behind first, in order, from ring[head] on (wrapping)
}

func (q *fifo) len() int { return int(q.n) }

func (q *fifo) front() (entry, bool) { return q.first, q.n > 0 }

func (q *fifo) at(i int32) *entry { return &q.ring[(q.head+i)&int32(len(q.ring)-1)] }

func (q *fifo) pop() {
	if q.n <= 1 {
		q.first, q.n = entry{}, 0
		return
	}
	q.first = *q.at(0)
	q.head = (q.head + 1) & int32(len(q.ring)-1)
	q.n--
}

// all returns the queued entries in order (a new slice).
func (q *fifo) all() []entry {
	if q.n == 0 {
		return nil
	}
	xs := []entry{q.first}
	for i := range q.n - 1 {
		xs = append(xs, *q.at(i))
	}
	return xs
}

// removeBatch drops every queued entry of batch b.
func (q *fifo) removeBatch(b BatchID) {
	if q.n == 0 {
		return
	}
	k := int32(0)
	for i := range q.n - 1 {
		if x := *q.at(i); x.b != b {
			*q.at(k) = x
			k++
		}
	}
	q.n = k + 1
	if q.first.b == b {
		q.pop()
	}
}

// insert places e after every entry not greater than it. The queue is sorted, so e goes in
// front only if it is less than the front; else it goes into the ring where the sorted
// insert from the back puts it.
func (q *fifo) insert(e entry) {
	if q.n == 0 {
		q.first, q.n = e, 1
		return
	}
	m := q.n - 1
	if int(m) == len(q.ring) {
		ring := make([]entry, max(4, 2*len(q.ring)))
		for i := range m {
			ring[i] = *q.at(i)
		}
		q.ring, q.head = ring, 0
	}
	q.n++
	if e.less(q.first) {
		q.head = (q.head - 1) & int32(len(q.ring)-1)
		q.ring[q.head] = q.first
		q.first = e
		return
	}
	i := m
	for i > 0 && e.less(*q.at(i - 1)) {
		*q.at(i) = *q.at(i - 1)
		i--
	}
	*q.at(i) = e
}

func (e *Engine) dispatch(now Time, d *Decision) error {
	if len(d.Reqs) == 0 || len(d.Path) == 0 {
		return fmt.Errorf("%w: dispatch with %d requests and %d hops", errBadDecision, len(d.Reqs), len(d.Path))
	}
	id := BatchID(len(e.batches)) + e.batchBase
	e.seq++
	seq := e.seq
	b := Batch{ID: id, App: d.App, Dispatched: now}
	b.lazyWork = len(d.Path) == 2 && int(d.App) >= 0 && int(d.App) < len(e.fanOut) && !e.fanOut[d.App]
	b.Reqs = e.reqArena.take(len(d.Reqs))
	copy(b.Reqs, d.Reqs)
	b.Hops = e.hopArena.take(len(d.Path))
	size := len(d.Reqs)
	for i, p := range d.Path {
		if int(p.Stage) < 0 || int(p.Stage) >= len(e.dep.Stages) || int(p.Worker) < 0 || int(p.Worker) >= len(e.workers) {
			return fmt.Errorf("%w: hop %d: stage %d worker %d", errBadDecision, i, p.Stage, p.Worker)
		}
		st := &e.dep.Stages[p.Stage]
		if e.wk[p.Worker].stage != p.Stage {
			return fmt.Errorf("%w: hop %d: worker %d does not serve stage %s", errBadDecision, i, p.Worker, st.Name)
		}
		if i > 0 && !hasNext(&e.dep.Stages[d.Path[i-1].Stage], p.Stage) {
			return fmt.Errorf("%w: hop %d: stage %s does not follow %s", errBadDecision, i, st.Name, e.dep.Stages[d.Path[i-1].Stage].Name)
		}
		nominal := st.Lat(size)
		if p.Dur > 0 {
			nominal = p.Dur
		}
		out := st.Xfer(size)
		if err := checkDurations(st, size, nominal, out); err != nil {
			return err
		}
		b.Hops[i] = Hop{
			Stage: p.Stage, Worker: p.Worker, ResStart: p.ResStart, OutRes: p.OutStart,
			Nominal: nominal, OutNominal: out,
			Start: -1, End: -1, OutStart: -1, OutEnd: -1,
		}
	}
	for _, p := range d.Path {
		if e.workers[p.Worker].down {
			return e.dropOnDown(now, d, p.Stage)
		}
	}
	// Read every request first, both lines of its record that dispatching uses (Request's
	// layout): these loads do not depend on each other, so at scale, where routing spreads a
	// batch's requests over the table and each record is a cache miss, the misses overlap
	// instead of coming one per request, and the pass below, which checks them, finds the
	// records in cache.
	var touched Time
	for _, r := range d.Reqs {
		if !e.hasReq(r) {
			break // reported below
		}
		q := e.rq(r)
		touched ^= q.Dispatch + Time(q.held) + Time(q.nBatch)
	}
	e.touched = touched
	for _, r := range d.Reqs {
		if !e.hasReq(r) {
			return fmt.Errorf("%w: dispatch of unknown request %d", errBadDecision, r)
		}
		q := e.rq(r)
		// A request may be in two batches at once only on the branches of a DAG fan-out.
		// held is a byte (Request's layout): a fan-out wider than 255 branches is refused.
		if q.Outcome != Pending || (q.held > 0 && (!e.dep.hasFanOut(q.App) || q.held == math.MaxUint8)) || q.App != d.App {
			return fmt.Errorf("%w: dispatch of request %d (%v, in flight %v, app %d≠%d)", errBadDecision, r, q.Outcome, q.held, q.App, d.App)
		}
		q.held++
		if q.Dispatch == Never {
			q.Dispatch = now
		}
		e.addBatch(q, id)
	}
	b.Hops[0].ready = true
	e.batches = append(e.batches, b)
	e.hopBits = append(e.hopBits, hopBit(0, false))
	e.closedSeen = append(e.closedSeen, false)
	bp := e.bt(id)
	for i := range bp.Hops {
		h := &bp.Hops[i]
		e.workers[h.Worker].q.insert(entry{b: id, hop: int32(i), res: h.ResStart, seq: seq})
		if i+1 < len(bp.Hops) {
			src := e.wk[h.Worker].server
			dst := e.wk[bp.Hops[i+1].Worker].server
			x := entry{b: id, hop: int32(i), res: h.OutRes, seq: seq}
			e.up[src].q.insert(x)
			e.down[dst].q.insert(x)
		}
	}
	e.tryWorker(now, bp.Hops[0].Worker)
	return nil
}

func hasNext(s *Stage, n StageID) bool {
	for _, x := range s.Next {
		if x == n {
			return true
		}
	}
	return false
}

// tryWorker starts the worker's next queued hop if the worker is idle and the hop's input
// has arrived. Work runs in reservation order: an early arrival does not overtake.
func (e *Engine) tryWorker(now Time, w WorkerID) {
	ws := &e.workers[w]
	if ws.busy || ws.loading || ws.down {
		return
	}
	x, ok := ws.q.front()
	if !ok || !e.mayBeReady(x.b, x.hop, false) {
		return
	}
	b := e.bt(x.b)
	h := &b.Hops[x.hop]
	if !h.ready {
		return
	}
	ws.q.pop()
	ws.busy = true
	ws.curB, ws.curHop = x.b, x.hop
	ws.curStart = now
	b.running++
	e.fx.RunBatch(now, w, x.b, int(x.hop), h.Stage, len(b.Reqs), h.Nominal)
}

func (e *Engine) batchDone(now Time, ev Event) error {
	if int(ev.Worker) < 0 || int(ev.Worker) >= len(e.workers) {
		return fmt.Errorf("batch-done on unknown worker %d", ev.Worker)
	}
	ws := &e.workers[ev.Worker]
	if ev.Batch >= e.batchBase && int(ev.Batch-e.batchBase) < len(e.batches) && e.bt(ev.Batch).Lost {
		return e.lostDone(now, ev)
	}
	if !ws.busy || ws.curB != ev.Batch || ws.curHop != ev.Hop {
		return fmt.Errorf("batch-done for batch %d hop %d on worker %d, which is not running it", ev.Batch, ev.Hop, ev.Worker)
	}
	if ev.End < ev.Start {
		return fmt.Errorf("batch-done with end %d before start %d", ev.End, ev.Start)
	}
	ws.busy = false
	ws.busyTime += ev.End - ev.Start
	b := e.bt(ev.Batch)
	b.running--
	h := &b.Hops[ev.Hop]
	h.Start, h.End = ev.Start, ev.End
	share := float64(ev.End-ev.Start) / float64(len(b.Reqs)*e.wk[ev.Worker].vgpu)
	switch {
	case !b.lazyWork:
		for _, r := range b.Reqs {
			e.rq(r).WorkGPU += share
		}
	case ev.Hop == 0:
		b.share0 = share
	default:
		for _, r := range b.Reqs {
			q := e.rq(r)
			q.WorkGPU += b.share0
			q.WorkGPU += share
		}
		b.lazyWork = false
	}
	st := &e.dep.Stages[h.Stage]
	last := int(ev.Hop) == len(b.Hops)-1
	switch {
	case !last:
		h.outReady = true
		e.markHop(ev.Batch, ev.Hop, true)
		e.tryLink(now, e.wk[ev.Worker].server, true)
	case st.Manual:
		// The policy decides what becomes of the requests (EvBatchDone below); a cancelled
		// one is finished here and its EvCancel comes first.
		e.closedSeen[ev.Batch-e.batchBase] = true
		for _, r := range b.Reqs {
			e.release(now, e.rq(r))
		}
	case len(st.Next) == 0:
		e.closedSeen[ev.Batch-e.batchBase] = true
		for _, r := range b.Reqs {
			q := e.rq(r)
			if e.release(now, q) || q.Outcome != Pending || q.CancelRequested {
				// Already finished at another sink of a DAG (one Finish per request), or
				// cancelled: finished when its last branch ends, its result discarded.
				continue
			}
			e.finish(now, q, ev.End)
		}
	case st.Routed && e.exitAll(now, b, ev.End):
		// Every request answered here: nothing travels on.
	default:
		// The path ends before the application does: send the output toward the next
		// stage's pool through the sender's uplink only (the receiver is not known yet).
		h.outReady = true
		e.markHop(ev.Batch, ev.Hop, true)
		src := e.wk[ev.Worker].server
		e.seq++
		e.up[src].q.insert(entry{b: ev.Batch, hop: ev.Hop, res: 0, seq: e.seq})
		e.tryLink(now, src, true)
	}
	if err := e.flushCancels(now); err != nil {
		return err
	}
	if err := e.callPolicy(now, ev); err != nil {
		return err
	}
	e.tryWorker(now, ev.Worker)
	return nil
}

// exitAll finishes the requests of b whose result says Exit at a routed stage and reports
// whether none is left to send on.
func (e *Engine) exitAll(now Time, b *Batch, end Time) bool {
	left := false
	for _, r := range b.Reqs {
		q := e.rq(r)
		if q.Outcome != Pending {
			continue
		}
		if q.CancelRequested && q.held == 1 {
			// Withdrawn: its result is discarded, whatever it says.
			e.release(now, q)
			continue
		}
		if q.Result.Exit && !q.CancelRequested {
			q.held--
			e.finish(now, q, end)
			continue
		}
		left = true
	}
	return !left
}

// linkEnds returns the servers a transfer after hop hop of batch b uses (dst = NoServer for a
// transfer into a pool queue).
func (e *Engine) linkEnds(b *Batch, hop int) (src, dst ServerID) {
	src = e.wk[b.Hops[hop].Worker].server
	dst = NoServer
	if hop+1 < len(b.Hops) {
		dst = e.wk[b.Hops[hop+1].Worker].server
	}
	return src, dst
}

// tryLink starts the head transfer of server s's uplink (up=true) or downlink if it is ready
// and heads every queue it needs.
func (e *Engine) tryLink(now Time, s ServerID, up bool) {
	l := &e.down[s]
	if up {
		l = &e.up[s]
	}
	if l.busy {
		return
	}
	x, ok := l.q.front()
	if !ok || !e.mayBeReady(x.b, x.hop, true) {
		return
	}
	b := e.bt(x.b)
	h := &b.Hops[x.hop]
	if !h.outReady {
		return
	}
	src, dst := e.linkEnds(b, int(x.hop))
	u := &e.up[src]
	if u.busy {
		return
	}
	if y, _ := u.q.front(); y != x {
		return
	}
	if dst != NoServer {
		d := &e.down[dst]
		if d.busy {
			return
		}
		if y, _ := d.q.front(); y != x {
			return
		}
		d.q.pop()
		d.busy = true
	}
	u.q.pop()
	u.busy = true
	h.outReady = false
	b.running++
	var bytes int64
	if st := &e.dep.Stages[h.Stage]; st.OutBytes > 0 {
		bytes = st.OutBytes * int64(len(b.Reqs))
	}
	e.fx.Transfer(now, x.b, int(x.hop), src, dst, bytes, h.OutNominal)
}

func (e *Engine) transferDone(now Time, ev Event) error {
	if ev.Batch < e.batchBase || int(ev.Batch-e.batchBase) >= len(e.batches) {
		return fmt.Errorf("transfer-done for unknown batch %d", ev.Batch)
	}
	b := e.bt(ev.Batch)
	if int(ev.Hop) < 0 || int(ev.Hop) >= len(b.Hops) {
		return fmt.Errorf("transfer-done for batch %d hop %d: no such hop", ev.Batch, ev.Hop)
	}
	if b.Lost {
		return e.lostDone(now, ev)
	}
	b.running--
	h := &b.Hops[ev.Hop]
	if h.OutStart >= 0 || h.End < 0 {
		return fmt.Errorf("transfer-done for batch %d hop %d twice or before its execution", ev.Batch, ev.Hop)
	}
	h.OutStart, h.OutEnd = ev.Start, ev.End
	src, dst := e.linkEnds(b, int(ev.Hop))
	e.up[src].busy = false
	if dst != NoServer {
		e.down[dst].busy = false
		nh := &b.Hops[ev.Hop+1]
		nh.ready = true
		e.markHop(ev.Batch, ev.Hop+1, false)
		e.tryWorker(now, nh.Worker)
	}
	st := &e.dep.Stages[h.Stage]
	if dst == NoServer {
		// The tail transfer into a pool queue ended: the batch is closed.
		e.closedSeen[ev.Batch-e.batchBase] = true
		for _, r := range b.Reqs {
			if q := e.rq(r); !st.Routed || q.Outcome == Pending {
				e.release(now, q)
			}
		}
	}
	if err := e.flushCancels(now); err != nil {
		return err
	}
	if err := e.callPolicy(now, ev); err != nil {
		return err
	}
	if dst == NoServer && st.Routed {
		// Each request goes its own way: one arrival per request at the successor its
		// result names.
		for _, r := range b.Reqs {
			q := e.rq(r)
			if q.Outcome != Pending || q.held > 0 {
				continue
			}
			br := int(q.Result.Branch)
			if br < 0 || br >= len(st.Next) {
				return fmt.Errorf("request %d left routed stage %s for branch %d of %d", r, st.Name, br, len(st.Next))
			}
			if err := e.callPolicy(now, Event{Kind: EvStageArrival, Batch: ev.Batch, Hop: ev.Hop, Stage: st.Next[br], Req: r}); err != nil {
				return err
			}
		}
	} else if dst == NoServer {
		// A DAG fan-out delivers the batch's requests to every successor (those not
		// withdrawn: View.Arrived leaves out cancelled requests).
		for _, next := range st.Next {
			if e.marked > 0 && !e.anyLive(b.Reqs) {
				break
			}
			if err := e.callPolicy(now, Event{Kind: EvStageArrival, Batch: ev.Batch, Hop: ev.Hop, Stage: next, Req: NoReq}); err != nil {
				return err
			}
		}
	}
	e.tryLink(now, src, true)
	if dst != NoServer {
		e.tryLink(now, dst, false)
	}
	return nil
}

// anyLive reports whether some request of reqs was not withdrawn (Cancel).
func (e *Engine) anyLive(reqs []ReqID) bool {
	for _, r := range reqs {
		if !e.rq(r).CancelRequested {
			return true
		}
	}
	return false
}

// ErrBadDuration is a batch or transfer duration the engine cannot run: negative, or past
// any clock (a latency table extrapolated below zero, a NaN transfer rate).
// The engine refuses it naming the stage instead of running its clock backwards.
var ErrBadDuration = errors.New("invalid duration")

// maxDuration bounds one batch's or transfer's duration (about 11.6 days of simulated time):
// longer is an overflowed or non-finite value, not a measurement.
const maxDuration Time = 1e12

func checkDurations(st *Stage, size int, run, xfer Time) error {
	if run < 0 || run > maxDuration {
		return fmt.Errorf("%w: stage %s: a batch of %d takes %d µs: must be in [0, %d] (the stage's latency table or the policy's duration)", ErrBadDuration, st.Name, size, run, maxDuration)
	}
	if x := st.XferPerSampleUs; xfer < 0 || xfer > maxDuration || math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("%w: stage %s: the transfer of a batch of %d takes %d µs (%g µs per sample): must be finite and in [0, %d]", ErrBadDuration, st.Name, size, xfer, x, maxDuration)
	}
	return nil
}
