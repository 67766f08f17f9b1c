package dataplane

import (
	"errors"
	"fmt"
	"slices"
)

// workerState is a worker's record: 128 bytes, two cache lines of the workers table. The
// first line holds all that tryWorker reads and writes and all that batchDone does, so a
// batch's end and the start of the worker's next hop touch one line of the record: the
// fields were in declaration order over 152 bytes, and at 1,600 workers (240 KB, out of the
// first-level cache) the flags, the running entry and the queue's front fell on two to
// four lines. The second line holds the queue's ring, read only when two or more hops wait.
// TestWorkerLayout checks this, and that a table past 32 KB starts on a line (Go places a
// smaller table 8 bytes in, behind a header; that one fits the first-level cache).
type workerState struct {
	busy bool
	// loading: a model load occupies the worker; models and mem are what is resident.
	loading bool
	// down: the worker failed (EvWorkerDown) and is not back (EvWorkerUp).
	down bool
	// curB and curHop are the running hop while busy (an entry's batch and hop: its
	// reservation and sequence are not needed once it runs), curStart when it started.
	curHop   int32
	curB     BatchID
	curStart Time
	busyTime Time
	q        fifo
	models   []residentModel
	mem      int64
	_        [8]byte
}

type residentModel struct {
	name  string
	bytes int64
}

type loadJob struct {
	w     WorkerID
	model string
	bytes int64
}

// workerInfo is what the engine's per-event paths read of a worker's Topology record: its
// server (the transfer's links), stage (dispatch's check) and slice level (the GPU share of
// a batch). Topology's Worker is 88 bytes with its names, so at 1,600 workers those records
// span 140 KB and each lookup was a line of its own, missed at scale (linkEnds reads two
// per transfer); these 16-byte copies span 25 KB, four to a line. The deployment is not
// changed while an engine serves it (NewEngine validated it), so the copies stay true.
type workerInfo struct {
	server ServerID
	stage  StageID
	vgpu   int
}

// linkState is a server's uplink or downlink: 64 bytes, one cache line (TestWorkerLayout)
// that holds the flag and queue front tryLink reads. How long a link was busy is not kept:
// nothing read it, and it made the record 72 bytes, which put them on two lines at times.
type linkState struct {
	q    fifo
	busy bool
}

// Engine is the runtime's state machine: it owns requests, batches, worker and link queues,
// runs one Policy and drives one Effects implementation. It is not safe for concurrent use:
// a wall-clock driver calls Handle/Arrive from a single goroutine (an event loop reading a
// channel), which is also what keeps decisions deterministic.
type Engine struct {
	dep     *Deployment
	pol     Policy
	fx      Effects
	reqs    chunked[Request]
	batches []Batch
	// hopBits has a byte per batch of batches (same index), a filter of its hops' ready and
	// outReady flags (hopBit): tryWorker and tryLink read it before the batch record.
	hopBits []uint8

	// closedSeen has a flag per batch of batches (same index): the batch closed (batchClosed)
	// when its last hop or its tail transfer ended, which batchDone and transferDone know
	// with the record in hand. Closing is final, so Compact retires a flagged batch without
	// reading its record; one closed otherwise (lost, or a routed stage's whose requests all
	// answered) it still reads. At 128 QLM instances Compact read ~60,000 records, cold
	// since their iteration ended, every 65,536 events: 1.9 last-level misses an event, none
	// at 8, whose runs end before their first compaction.
	closedSeen []bool

	workers []workerState
	wk      []workerInfo
	// fanOut says per application whether a stage of it has several successors
	// (Deployment.hasFanOut): dispatch reads it for every batch (Batch.lazyWork).
	fanOut []bool
	up     []linkState
	down   []linkState
	dec    Decisions
	seq    int64
	events int64

	timerTok   int64
	timerLive  map[int64]int64   // policy key → live token
	timerKeyOf map[int64]int64   // token → policy key
	loads      map[int64]loadJob // token → model load in progress
	one        [1]ReqID          // View.Arrived's scratch for a single-request arrival
	tickEvery  Time

	finished  int64
	reqBase   ReqID
	batchBase BatchID
	cur       Event
	// done has a bit per held request that reached its outcome (Compact reads it).
	done doneSet
	// multi holds the batch lists of the requests that travelled in more than one batch, and
	// prefix the prompt prefixes given at arrival: what the request record does not hold,
	// so that it holds no pointers (Request).
	multi      sideTable[[]BatchID]
	prefix     sideTable[*Prefix]
	reqArena   arena[ReqID]
	hopArena   arena[Hop]
	batchArena arena[BatchID]
	observer   func(now Time, ev *Event, ds []Decision)
	// forget is the policy's Forgetter (nil if it keeps no per-request state).
	forget Forgetter
	// marked counts the requests Cancel marked while a batch held them (0: View.Arrived
	// never filters); cancels are those release finished, whose EvCancel is owed.
	marked  int64
	cancels []ReqID
	arrived []ReqID
	// touched keeps what the read-first passes of dispatch and callPolicy read from being
	// optimized away (the compiler drops a load nothing uses; those passes are there for
	// their loads).
	touched Time
}

// TickToken is the driver-level timer key of the engine's periodic tick.
const TickToken int64 = -1

// NewEngine builds an engine serving dep with policy pol on driver fx. It validates the
// deployment, attaches the policy and, for a Ticker policy, asks fx for the first tick.
func NewEngine(dep *Deployment, pol Policy, fx Effects) (*Engine, error) {
	if err := dep.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		dep:        dep,
		pol:        pol,
		fx:         fx,
		workers:    make([]workerState, len(dep.Topo.Workers)),
		up:         make([]linkState, len(dep.Topo.Servers)),
		down:       make([]linkState, len(dep.Topo.Servers)),
		timerLive:  map[int64]int64{},
		timerKeyOf: map[int64]int64{},
		loads:      map[int64]loadJob{},
	}
	e.wk = make([]workerInfo, len(dep.Topo.Workers))
	for i := range dep.Topo.Workers {
		w := &dep.Topo.Workers[i]
		e.wk[i] = workerInfo{server: w.Server, stage: w.Stage, vgpu: w.VGPU}
	}
	e.fanOut = make([]bool, len(dep.Apps))
	for a := range dep.Apps {
		e.fanOut[a] = dep.hasFanOut(AppID(a))
	}
	e.forget, _ = pol.(Forgetter)
	if err := pol.Attach(View{e}); err != nil {
		return nil, fmt.Errorf("policy %s: %w", pol.Name(), err)
	}
	if t, ok := pol.(Ticker); ok && t.TickEvery() > 0 {
		e.tickEvery = t.TickEvery()
		fx.SetTimer(0, TickToken)
	}
	return e, nil
}

// Observe installs a hook that sees every event the policy handles and the decisions it
// made, before the engine applies them (tests record scenarios with it). nil removes it.
func (e *Engine) Observe(f func(now Time, ev *Event, ds []Decision)) { e.observer = f }

// Deployment returns what the engine serves.
func (e *Engine) Deployment() *Deployment { return e.dep }

// Policy returns the engine's policy.
func (e *Engine) Policy() Policy { return e.pol }

// View returns the read-only view policies get.
func (e *Engine) View() View { return View{e} }

// Requests returns a copy of every request held, indexed by ReqID − RequestBase() (every
// request so far until Compact forgets some). It costs a copy of the table: drivers use
// NextRequestID, HeldRequests and Req instead.
func (e *Engine) Requests() []Request { return e.reqs.snapshot() }

// NextRequestID is the ID the next admitted request gets: every request so far is below it.
func (e *Engine) NextRequestID() ReqID { return e.reqBase + ReqID(e.reqs.len()) }

// HeldRequests is the number of requests the engine holds (from RequestBase on).
func (e *Engine) HeldRequests() int { return e.reqs.len() }

// Batches returns every batch so far, indexed by BatchID (read-only); after Compact it
// starts at BatchBase.
func (e *Engine) Batches() []Batch { return e.batches }

// Req returns request id (read-only), which must not have been forgotten by Compact.
func (e *Engine) Req(id ReqID) *Request { return e.rq(id) }

// Batch returns batch id (read-only), which must not have been forgotten by Compact.
func (e *Engine) Batch(id BatchID) *Batch { return e.bt(id) }

// RequestBase and BatchBase are the oldest IDs still held (0 until Compact forgets some).
func (e *Engine) RequestBase() ReqID { return e.reqBase }

// BatchBase: see RequestBase.
func (e *Engine) BatchBase() BatchID { return e.batchBase }

func (e *Engine) rq(id ReqID) *Request { return e.reqs.at(int(id - e.reqBase)) }
func (e *Engine) bt(id BatchID) *Batch { return &e.batches[id-e.batchBase] }

func (e *Engine) hasReq(id ReqID) bool {
	return id >= e.reqBase && int(id-e.reqBase) < e.reqs.len()
}

// Compact forgets finished requests and closed batches older than every unfinished one,
// so a long-running driver (serve) keeps memory bounded: call it now and then (say every
// few thousand events). IDs of what remains stay valid; forgotten IDs must not be used
// again (policies only see live ones). Decisions and outcomes are unaffected. A policy that
// is a Forgetter gets Forget(id) for every request retired here, in increasing ID order,
// before the request leaves the table, so its own per-request state stays bounded too.
func (e *Engine) Compact() {
	k := 0
	for k < len(e.batches) && (e.closedSeen[k] || e.batchClosed(&e.batches[k])) {
		k++
	}
	minReq := e.NextRequestID()
	for i := k; i < len(e.batches); i++ {
		for _, r := range e.batches[i].Reqs {
			minReq = min(minReq, r)
		}
	}
	if k > 0 {
		n := copy(e.batches, e.batches[k:])
		clear(e.batches[n:])
		e.batches = e.batches[:n]
		e.hopBits = e.hopBits[:copy(e.hopBits, e.hopBits[k:])]
		e.closedSeen = e.closedSeen[:copy(e.closedSeen, e.closedSeen[k:])]
		e.batchBase += BatchID(k)
	}
	// The retired prefix comes from the finished bits (doneSet), without touching a record:
	// at scale the prefix is megabytes, last read when its requests finished. Forget gets
	// their IDs in order, after the batches above went, as it always did.
	j := e.done.run(e.reqBase, int(minReq-e.reqBase))
	if e.forget != nil {
		for id := e.reqBase; id < e.reqBase+ReqID(j); id++ {
			e.forget.Forget(id)
		}
	}
	if j > 0 {
		e.reqs.dropFront(j)
		e.reqBase += ReqID(j)
		e.multi.forget(e.reqBase)
		e.prefix.forget(e.reqBase)
		e.done.forget(e.reqBase)
	}
}

// batchClosed: every hop ran and the tail transfer (into a pool queue) is done.
func (e *Engine) batchClosed(b *Batch) bool {
	if b.Lost {
		return b.running == 0
	}
	h := &b.Hops[len(b.Hops)-1]
	if h.End < 0 {
		return false
	}
	st := &e.dep.Stages[h.Stage]
	if len(st.Next) == 0 || st.Manual || h.OutEnd >= 0 {
		return true
	}
	// A routed stage whose requests all answered early sends nothing on.
	if st.Routed {
		for _, r := range b.Reqs {
			if e.hasReq(r) && e.rq(r).Outcome == Pending {
				return false
			}
		}
		return true
	}
	return false
}

// SetResult records what the stage that just ran request r said about it. A driver calls it
// for each request of a batch before delivering the batch's EvBatchDone; Routed stages
// route by it and policies read it (Request.Result).
func (e *Engine) SetResult(r ReqID, res Result) {
	if e.hasReq(r) {
		e.rq(r).Result = res
	}
}

// Events returns the number of events handled.
func (e *Engine) Events() int64 { return e.events }

// Finished returns the number of requests that reached an outcome.
func (e *Engine) Finished() int64 { return e.finished }

// WorkerBusy returns the total time worker w spent executing batches.
func (e *Engine) WorkerBusy(w WorkerID) Time { return e.workers[w].busyTime }

// ReserveRequests pre-sizes the batch table (a driver that knows how many arrivals to expect
// avoids re-allocation; the request table grows by chunks and never copies).
func (e *Engine) ReserveRequests(n int) {
	if cap(e.batches) < n {
		b := make([]Batch, len(e.batches), n)
		copy(b, e.batches)
		e.batches = b
	}
	if cap(e.hopBits) < n {
		e.hopBits = append(make([]uint8, 0, n), e.hopBits...)
	}
	if cap(e.closedSeen) < n {
		e.closedSeen = append(make([]bool, 0, n), e.closedSeen...)
	}
}

// Handle processes one driver event at time now. An error means a policy made an invalid
// decision or the driver reported something impossible; the engine's state is then
// unspecified (tests fail, serve logs and stops).
func (e *Engine) Handle(now Time, ev Event) error {
	e.events++
	switch ev.Kind {
	case EvArrival:
		if !e.hasReq(ev.Req) {
			return fmt.Errorf("arrival of unknown request %d", ev.Req)
		}
		return e.callPolicy(now, ev)
	case EvTimer:
		if job, ok := e.loads[ev.Key]; ok {
			delete(e.loads, ev.Key)
			return e.loadDone(now, job)
		}
		if ev.Key == TickToken {
			e.fx.SetTimer(now+e.tickEvery, TickToken)
			return e.callPolicy(now, Event{Kind: EvTick})
		}
		key, ok := e.timerKeyOf[ev.Key]
		if !ok {
			return nil // stale or cancelled
		}
		delete(e.timerKeyOf, ev.Key)
		delete(e.timerLive, key)
		return e.callPolicy(now, Event{Kind: EvTimer, Key: key})
	case EvBatchDone:
		return e.batchDone(now, ev)
	case EvTransferDone:
		return e.transferDone(now, ev)
	case EvWorkerDown, EvWorkerUp:
		if int(ev.Worker) < 0 || int(ev.Worker) >= len(e.workers) {
			return fmt.Errorf("%v of unknown worker %d", ev.Kind, ev.Worker)
		}
		if ev.Kind == EvWorkerDown {
			return e.workerDown(now, ev.Worker)
		}
		return e.workerUp(now, ev.Worker)
	}
	return fmt.Errorf("driver delivered event kind %v", ev.Kind)
}

// callPolicy hands ev to the policy. The event lives in the engine (not on the caller's
// stack) so passing its address through the Policy interface does not allocate.
func (e *Engine) callPolicy(now Time, event Event) error {
	e.cur = event
	ev := &e.cur
	e.dec.reset()
	e.pol.Handle(now, ev, &e.dec)
	if e.observer != nil {
		e.observer(now, ev, e.dec.list)
	}
	// Read the request of every decision that names one first (completions, drops): these
	// loads do not depend on each other, so at scale, where each record is a cache miss, the
	// misses overlap instead of coming one per decision, each behind the previous one's
	// Finish. Only the first line: what finishing reads (Request's layout).
	var touched Time
	for i := range e.dec.list {
		if d := &e.dec.list[i]; (d.Kind == DComplete || d.Kind == DDrop) && e.hasReq(d.Req) {
			touched ^= e.rq(d.Req).Deadline
		}
	}
	e.touched ^= touched
	// Applying may run more policy calls (none today), so iterate over a stable copy length.
	for i := 0; i < len(e.dec.list); i++ {
		if err := e.apply(now, &e.dec.list[i]); err != nil {
			return fmt.Errorf("policy %s at t=%dµs on %v: %w", e.pol.Name(), now, ev.Kind, err)
		}
	}
	return nil
}

var errBadDecision = errors.New("invalid decision")

func (e *Engine) apply(now Time, d *Decision) error {
	switch d.Kind {
	case DDispatch:
		return e.dispatch(now, d)
	case DDrop:
		if !e.hasReq(d.Req) {
			return fmt.Errorf("%w: drop of unknown request %d", errBadDecision, d.Req)
		}
		r := e.rq(d.Req)
		if r.Outcome != Pending || r.held > 0 {
			return fmt.Errorf("%w: drop of request %d which is %v (in flight: %v)", errBadDecision, d.Req, r.Outcome, r.held)
		}
		r.Outcome = Dropped
		r.reason = codeOf(d.Reason)
		r.DropStage = d.Stage
		r.Estimate = d.Estimate
		r.Done = now
		e.finished++
		e.done.set(r.ID)
		e.fx.Finish(now, r)
	case DSetTimer:
		if d.At < now {
			return fmt.Errorf("%w: timer at %d before now %d", errBadDecision, d.At, now)
		}
		if old, ok := e.timerLive[d.Key]; ok {
			delete(e.timerKeyOf, old)
		}
		e.timerTok++
		e.timerLive[d.Key] = e.timerTok
		e.timerKeyOf[e.timerTok] = d.Key
		e.fx.SetTimer(d.At, e.timerTok)
	case DComplete:
		if !e.hasReq(d.Req) {
			return fmt.Errorf("%w: completion of unknown request %d", errBadDecision, d.Req)
		}
		r := e.rq(d.Req)
		if r.Outcome != Pending || r.held > 0 {
			return fmt.Errorf("%w: completion of request %d which is %v (in flight: %v)", errBadDecision, d.Req, r.Outcome, r.held)
		}
		e.finish(now, r, now)
	case DLoad:
		return e.load(now, d)
	case DFirstToken:
		if !e.hasReq(d.Req) {
			return fmt.Errorf("%w: first token of unknown request %d", errBadDecision, d.Req)
		}
		r := e.rq(d.Req)
		if d.At < r.Arrival || d.At > now {
			return fmt.Errorf("%w: first token of request %d at %d outside [arrival %d, now %d]", errBadDecision, d.Req, d.At, r.Arrival, now)
		}
		if r.FirstToken == Never {
			r.FirstToken = d.At
		}
	case DEvict:
		if int(d.Worker) < 0 || int(d.Worker) >= len(e.workers) {
			return fmt.Errorf("%w: evict on worker %d", errBadDecision, d.Worker)
		}
		ws := &e.workers[d.Worker]
		i := slices.IndexFunc(ws.models, func(m residentModel) bool { return m.name == d.Model })
		if i < 0 {
			return fmt.Errorf("%w: evict of model %q not resident on worker %d", errBadDecision, d.Model, d.Worker)
		}
		ws.mem -= ws.models[i].bytes
		ws.models = slices.Delete(ws.models, i, i+1)
		if me, ok := e.fx.(ModelEffects); ok {
			me.EvictModel(now, d.Worker, d.Model)
		}
	case DCancelTimer:
		if old, ok := e.timerLive[d.Key]; ok {
			delete(e.timerKeyOf, old)
			delete(e.timerLive, d.Key)
		}
	default:
		return fmt.Errorf("%w: kind %d", errBadDecision, d.Kind)
	}
	return nil
}

// finish records a request's completion at end (completed or late by its deadline).
func (e *Engine) finish(now Time, q *Request, end Time) {
	q.Done = end
	if end <= q.Deadline {
		q.Outcome = Completed
	} else {
		q.Outcome = Late
	}
	e.finished++
	e.done.set(q.ID)
	e.fx.Finish(now, q)
}

// load starts a model load on an idle worker: the worker is busy for the load's duration,
// which the engine times itself (a timer token of its own), so every driver supports it.
func (e *Engine) load(now Time, d *Decision) error {
	if int(d.Worker) < 0 || int(d.Worker) >= len(e.workers) {
		return fmt.Errorf("%w: load on worker %d", errBadDecision, d.Worker)
	}
	ws := &e.workers[d.Worker]
	if ws.busy || ws.loading {
		return fmt.Errorf("%w: load of %q on worker %d while it is busy", errBadDecision, d.Model, d.Worker)
	}
	if d.At < 0 || d.Bytes < 0 {
		return fmt.Errorf("%w: load of %q with duration %d and %d bytes", errBadDecision, d.Model, d.At, d.Bytes)
	}
	if slices.ContainsFunc(ws.models, func(m residentModel) bool { return m.name == d.Model }) {
		return fmt.Errorf("%w: model %q already resident on worker %d", errBadDecision, d.Model, d.Worker)
	}
	if capb := e.dep.Topo.Workers[d.Worker].MemBytes; capb > 0 && ws.mem+d.Bytes > capb {
		return fmt.Errorf("%w: model %q (%d bytes) does not fit on worker %d (%d of %d used)", errBadDecision, d.Model, d.Bytes, d.Worker, ws.mem, capb)
	}
	ws.loading = true
	ws.mem += d.Bytes
	e.timerTok++
	e.loads[e.timerTok] = loadJob{w: d.Worker, model: d.Model, bytes: d.Bytes}
	if me, ok := e.fx.(ModelEffects); ok {
		me.LoadModel(now, d.Worker, d.Model, d.Bytes, d.At)
	}
	e.fx.SetTimer(now+d.At, e.timerTok)
	return nil
}

func (e *Engine) loadDone(now Time, job loadJob) error {
	ws := &e.workers[job.w]
	ws.loading = false
	ws.models = append(ws.models, residentModel{name: job.model, bytes: job.bytes})
	if err := e.callPolicy(now, Event{Kind: EvModelLoaded, Worker: job.w, Req: NoReq}); err != nil {
		return err
	}
	e.tryWorker(now, job.w)
	return nil
}
