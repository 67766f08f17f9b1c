package dataplane

import (
	"errors"
	"fmt"
	"slices"
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
	seq  int64
	// running counts the batch's hops and transfers in progress, whose completions the
	// driver still owes (a lost batch is closed once none is).
	running int32
}

// Size returns the number of requests in the batch.
func (b *Batch) Size() int { return len(b.Reqs) }

// arena hands out small slices carved from large chunks, so per-batch and per-request
// slices cost no allocation each. Slices are capped at their length, so appending to one
// never overwrites its neighbour.
type arena[T any] struct {
	chunk []T
}

const arenaChunk = 1 << 14

func (a *arena[T]) take(n int) []T {
	if n > arenaChunk/4 {
		return make([]T, n)
	}
	if len(a.chunk) < n {
		a.chunk = make([]T, arenaChunk)
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
type fifo struct {
	items []entry
	head  int
}

func (q *fifo) len() int { return len(q.items) - q.head }

func (q *fifo) front() (entry, bool) {
	if q.head >= len(q.items) {
		return entry{}, false
	}
	return q.items[q.head], true
}

func (q *fifo) pop() {
	q.head++
	if q.head == len(q.items) {
		q.items = q.items[:0]
		q.head = 0
	} else if q.head > 64 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		q.items = q.items[:n]
		q.head = 0
	}
}

// removeBatch drops every queued entry of batch b.
func (q *fifo) removeBatch(b BatchID) {
	items := q.items[:q.head]
	for _, x := range q.items[q.head:] {
		if x.b != b {
			items = append(items, x)
		}
	}
	q.items = items
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
}

func (q *fifo) insert(e entry) {
	q.items = append(q.items, e)
	i := len(q.items) - 1
	for i > q.head && e.less(q.items[i-1]) {
		q.items[i] = q.items[i-1]
		i--
	}
	q.items[i] = e
}

type workerState struct {
	q    fifo
	busy bool
	// cur is the running entry while busy.
	cur      entry
	curStart Time
	busyTime Time
	// loading: a model load occupies the worker; models and mem are what is resident.
	loading bool
	models  []residentModel
	mem     int64
	// down: the worker failed (EvWorkerDown) and is not back (EvWorkerUp).
	down bool
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

type linkState struct {
	q        fifo
	busy     bool
	busyTime Time
}

// Engine is the runtime's state machine: it owns requests, batches, worker and link queues,
// runs one Policy and drives one Effects implementation. It is not safe for concurrent use:
// a wall-clock driver calls Handle/Arrive from a single goroutine (an event loop reading a
// channel), which is also what keeps decisions deterministic.
type Engine struct {
	dep     *Deployment
	pol     Policy
	fx      Effects
	reqs    []Request
	batches []Batch
	workers []workerState
	up      []linkState
	down    []linkState
	dec     Decisions
	seq     int64
	events  int64

	timerTok   int64
	timerLive  map[int64]int64   // policy key → live token
	timerKeyOf map[int64]int64   // token → policy key
	loads      map[int64]loadJob // token → model load in progress
	one        [1]ReqID          // View.Arrived's scratch for a single-request arrival
	tickEvery  Time

	finished   int64
	reqBase    ReqID
	batchBase  BatchID
	cur        Event
	reqArena   arena[ReqID]
	hopArena   arena[Hop]
	batchArena arena[BatchID]
	observer   func(now Time, ev *Event, ds []Decision)
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

// Requests returns every request so far, indexed by ReqID (read-only). After Compact it
// starts at RequestBase: index with id − RequestBase(), or use Req.
func (e *Engine) Requests() []Request { return e.reqs }

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

func (e *Engine) rq(id ReqID) *Request { return &e.reqs[id-e.reqBase] }
func (e *Engine) bt(id BatchID) *Batch { return &e.batches[id-e.batchBase] }

func (e *Engine) hasReq(id ReqID) bool {
	return id >= e.reqBase && int(id-e.reqBase) < len(e.reqs)
}

// Compact forgets finished requests and closed batches older than every unfinished one,
// so a long-running driver (serve) keeps memory bounded: call it now and then (say every
// few thousand events). IDs of what remains stay valid; forgotten IDs must not be used
// again (policies only see live ones). Decisions and outcomes are unaffected.
func (e *Engine) Compact() {
	k := 0
	for k < len(e.batches) && e.batchClosed(&e.batches[k]) {
		k++
	}
	minReq := ReqID(len(e.reqs)) + e.reqBase
	for i := k; i < len(e.batches); i++ {
		for _, r := range e.batches[i].Reqs {
			minReq = min(minReq, r)
		}
	}
	j := 0
	for j < len(e.reqs) && e.reqs[j].Outcome != Pending && e.reqs[j].ID < minReq {
		j++
	}
	if k > 0 {
		n := copy(e.batches, e.batches[k:])
		clear(e.batches[n:])
		e.batches = e.batches[:n]
		e.batchBase += BatchID(k)
	}
	if j > 0 {
		n := copy(e.reqs, e.reqs[j:])
		clear(e.reqs[n:])
		e.reqs = e.reqs[:n]
		e.reqBase += ReqID(j)
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

// ReserveRequests pre-sizes the request and batch tables (a driver that knows how many arrivals to
// expect avoids re-allocation).
func (e *Engine) ReserveRequests(n int) {
	if cap(e.reqs) < n {
		r := make([]Request, len(e.reqs), n)
		copy(r, e.reqs)
		e.reqs = r
	}
	if cap(e.batches) < n {
		b := make([]Batch, len(e.batches), n)
		copy(b, e.batches)
		e.batches = b
	}
}

// Attrs are a request's attributes, set by the driver at arrival and read by policies: the
// class of a multi-class workload (QLM's request groups, PARD's priorities), token counts of
// an LLM request (QLM), the validation sample a cascade request stands for (CascadeServe's
// stand-in certainties), a priority, and the request's place in its trace.
type Attrs struct {
	Class     int32
	Priority  int32
	InTokens  int32
	OutTokens int32
	Sample    int64
	// Trace is 1 + the request's index among its application's arrivals in the trace it was
	// replayed from (0: not replayed from a trace). The simulator sets it on every arrival;
	// `plan load` sends it to serve (TraceKey says what reads it).
	Trace int64
}

// Arrival describes a request entering the engine.
type Arrival struct {
	App AppID
	Attrs
	// At is when the request reached the door (a wall-clock driver stamps it when the request
	// is read off the socket, before decoding). Zero or a time after now means now. The
	// deadline counts from At, so the policy decides from the request's true age.
	At Time
	// Deadline overrides At + the application's SLO when > 0.
	Deadline Time
}

// Arrive creates a request of app arriving at now (deadline = now + the app's SLO) and lets
// the policy react. It returns the request's ID.
func (e *Engine) Arrive(now Time, app AppID, class int32) (ReqID, error) {
	return e.Admit(now, Arrival{App: app, Attrs: Attrs{Class: class}})
}

// Admit creates the request a describes at now and lets the policy react. It returns the
// request's ID.
func (e *Engine) Admit(now Time, a Arrival) (ReqID, error) {
	if int(a.App) < 0 || int(a.App) >= len(e.dep.Apps) {
		return -1, fmt.Errorf("arrival: app %d: no such application", a.App)
	}
	at := a.At
	if at <= 0 || at > now {
		at = now
	}
	dl := a.Deadline
	if dl <= 0 {
		dl = at + e.dep.Apps[a.App].SLO
	}
	id := ReqID(len(e.reqs)) + e.reqBase
	e.reqs = append(e.reqs, Request{
		ID: id, App: a.App, Class: a.Class, Attrs: a.Attrs, Arrival: at, Deadline: dl,
		Dispatch: Never, Done: Never, DropStage: NoStage,
	})
	return id, e.Handle(now, Event{Kind: EvArrival, Req: id})
}

// Cancel withdraws request id at now (its client disconnected or gave up, or its deadline
// passed at the client). A request that is not pending (or already forgotten) is left as it
// is and Cancel reports false. A request no batch holds is finished at once as Dropped with
// DropCancelled, and the policy gets EvCancel to forget it. A request a batch holds is marked
// (Request.CancelRequested): the engine finishes it as cancelled when that batch ends, its
// result discarded, and delivers EvCancel then. Cancel reports whether the request was
// pending.
func (e *Engine) Cancel(now Time, id ReqID) (bool, error) {
	if !e.hasReq(id) {
		return false, nil
	}
	r := e.rq(id)
	if r.Outcome != Pending {
		return false, nil
	}
	e.events++
	if r.held > 0 {
		r.CancelRequested = true
		return true, nil
	}
	return true, e.cancelNow(now, r)
}

// cancelNow finishes r (pending, held by no batch) as cancelled and tells the policy.
func (e *Engine) cancelNow(now Time, r *Request) error {
	r.CancelRequested = true
	r.Outcome = Dropped
	r.Reason = DropCancelled
	r.Done = now
	e.finished++
	e.fx.Finish(now, r)
	return e.callPolicy(now, Event{Kind: EvCancel, Req: r.ID})
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
		r.Reason = d.Reason
		r.DropStage = d.Stage
		r.Estimate = d.Estimate
		r.Done = now
		e.finished++
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

func (e *Engine) dispatch(now Time, d *Decision) error {
	if len(d.Reqs) == 0 || len(d.Path) == 0 {
		return fmt.Errorf("%w: dispatch with %d requests and %d hops", errBadDecision, len(d.Reqs), len(d.Path))
	}
	id := BatchID(len(e.batches)) + e.batchBase
	e.seq++
	b := Batch{ID: id, App: d.App, Dispatched: now, seq: e.seq}
	b.Reqs = e.reqArena.take(len(d.Reqs))
	copy(b.Reqs, d.Reqs)
	b.Hops = e.hopArena.take(len(d.Path))
	size := len(d.Reqs)
	for i, p := range d.Path {
		if int(p.Stage) < 0 || int(p.Stage) >= len(e.dep.Stages) || int(p.Worker) < 0 || int(p.Worker) >= len(e.workers) {
			return fmt.Errorf("%w: hop %d: stage %d worker %d", errBadDecision, i, p.Stage, p.Worker)
		}
		st := &e.dep.Stages[p.Stage]
		if e.dep.Topo.Workers[p.Worker].Stage != p.Stage {
			return fmt.Errorf("%w: hop %d: worker %d does not serve stage %s", errBadDecision, i, p.Worker, st.Name)
		}
		if i > 0 && !hasNext(&e.dep.Stages[d.Path[i-1].Stage], p.Stage) {
			return fmt.Errorf("%w: hop %d: stage %s does not follow %s", errBadDecision, i, st.Name, e.dep.Stages[d.Path[i-1].Stage].Name)
		}
		nominal := st.Lat(size)
		if p.Dur > 0 {
			nominal = p.Dur
		}
		b.Hops[i] = Hop{
			Stage: p.Stage, Worker: p.Worker, ResStart: p.ResStart, OutRes: p.OutStart,
			Nominal: nominal, OutNominal: st.Xfer(size),
			Start: -1, End: -1, OutStart: -1, OutEnd: -1,
		}
	}
	for _, p := range d.Path {
		if e.workers[p.Worker].down {
			return e.dropOnDown(now, d, p.Stage)
		}
	}
	for _, r := range d.Reqs {
		if !e.hasReq(r) {
			return fmt.Errorf("%w: dispatch of unknown request %d", errBadDecision, r)
		}
		q := e.rq(r)
		// A request may be in two batches at once only on the branches of a DAG fan-out.
		if q.Outcome != Pending || (q.held > 0 && !e.dep.hasFanOut(q.App)) || q.App != d.App {
			return fmt.Errorf("%w: dispatch of request %d (%v, in flight %v, app %d≠%d)", errBadDecision, r, q.Outcome, q.held, q.App, d.App)
		}
		q.held++
		if q.Dispatch == Never {
			q.Dispatch = now
		}
		if q.Batches == nil {
			// Most requests travel in one batch: a 1-element slice from the arena
			// (a later append, for re-batching policies, reallocates as usual).
			q.Batches = e.batchArena.take(1)
			q.Batches[0] = id
		} else {
			q.Batches = append(q.Batches, id)
		}
	}
	b.Hops[0].ready = true
	e.batches = append(e.batches, b)
	bp := e.bt(id)
	for i := range bp.Hops {
		h := &bp.Hops[i]
		e.workers[h.Worker].q.insert(entry{b: id, hop: int32(i), res: h.ResStart, seq: bp.seq})
		if i+1 < len(bp.Hops) {
			src := e.dep.Topo.Workers[h.Worker].Server
			dst := e.dep.Topo.Workers[bp.Hops[i+1].Worker].Server
			x := entry{b: id, hop: int32(i), res: h.OutRes, seq: bp.seq}
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
	if !ok {
		return
	}
	b := e.bt(x.b)
	h := &b.Hops[x.hop]
	if !h.ready {
		return
	}
	ws.q.pop()
	ws.busy = true
	ws.cur = x
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
	if !ws.busy || ws.cur.b != ev.Batch || ws.cur.hop != ev.Hop {
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
	share := float64(ev.End-ev.Start) / float64(len(b.Reqs)*e.dep.Topo.Workers[ev.Worker].VGPU)
	for _, r := range b.Reqs {
		e.rq(r).WorkGPU += share
	}
	st := &e.dep.Stages[h.Stage]
	last := int(ev.Hop) == len(b.Hops)-1
	switch {
	case !last:
		h.outReady = true
		e.tryLink(now, e.dep.Topo.Workers[ev.Worker].Server, true)
	case st.Manual:
		// The policy decides what becomes of the requests (EvBatchDone below).
		for _, r := range b.Reqs {
			e.rq(r).held--
		}
	case len(st.Next) == 0:
		for _, r := range b.Reqs {
			q := e.rq(r)
			q.held--
			if q.Outcome != Pending {
				continue // already finished at another sink of a DAG: one Finish per request
			}
			e.finish(now, q, ev.End)
		}
	case st.Routed && e.exitAll(now, b, ev.End):
		// Every request answered here: nothing travels on.
	default:
		// The path ends before the application does: send the output toward the next
		// stage's pool through the sender's uplink only (the receiver is not known yet).
		h.outReady = true
		src := e.dep.Topo.Workers[ev.Worker].Server
		e.seq++
		e.up[src].q.insert(entry{b: ev.Batch, hop: ev.Hop, res: 0, seq: e.seq})
		e.tryLink(now, src, true)
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
		if q.Result.Exit {
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
	src = e.dep.Topo.Workers[b.Hops[hop].Worker].Server
	dst = NoServer
	if hop+1 < len(b.Hops) {
		dst = e.dep.Topo.Workers[b.Hops[hop+1].Worker].Server
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
	if !ok {
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
	e.up[src].busyTime += ev.End - ev.Start
	if dst != NoServer {
		e.down[dst].busy = false
		e.down[dst].busyTime += ev.End - ev.Start
		nh := &b.Hops[ev.Hop+1]
		nh.ready = true
		e.tryWorker(now, nh.Worker)
	}
	st := &e.dep.Stages[h.Stage]
	if dst == NoServer {
		for _, r := range b.Reqs {
			if q := e.rq(r); !st.Routed || q.Outcome == Pending {
				q.held--
			}
		}
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
		// A DAG fan-out delivers the batch's requests to every successor.
		for _, next := range st.Next {
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

// View is the read-only window policies get on engine state. Its methods return pointers
// into engine tables for speed; policies must not write through them.
type View struct{ e *Engine }

// Deployment returns the served deployment.
func (v View) Deployment() *Deployment { return v.e.dep }

// Req returns request id.
func (v View) Req(id ReqID) *Request { return v.e.rq(id) }

// Batch returns batch id.
func (v View) Batch(id BatchID) *Batch { return v.e.bt(id) }

// WorkerIdle reports whether worker w runs nothing, loads nothing and has nothing queued.
func (v View) WorkerIdle(w WorkerID) bool {
	ws := &v.e.workers[w]
	return !ws.busy && !ws.loading && ws.q.len() == 0
}

// Arrived lists the requests an EvStageArrival delivers: the whole batch, or the one
// request a routed stage sent (borrowed until the next call).
func (v View) Arrived(ev *Event) []ReqID {
	if ev.Req != NoReq {
		v.e.one[0] = ev.Req
		return v.e.one[:]
	}
	return v.e.bt(ev.Batch).Reqs
}

// WorkerLoading reports whether a model load occupies worker w.
func (v View) WorkerLoading(w WorkerID) bool { return v.e.workers[w].loading }

// Resident reports whether model is loaded on worker w.
func (v View) Resident(w WorkerID, model string) bool {
	return slices.ContainsFunc(v.e.workers[w].models, func(m residentModel) bool { return m.name == model })
}

// Models lists the models resident on worker w, least recently loaded first.
func (v View) Models(w WorkerID) []string {
	ms := v.e.workers[w].models
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.name
	}
	return out
}

// MemUsed is the memory models occupy (or are being loaded into) on worker w.
func (v View) MemUsed(w WorkerID) int64 { return v.e.workers[w].mem }

// WorkerQueued returns the number of hops queued (not running) on worker w.
func (v View) WorkerQueued(w WorkerID) int { return v.e.workers[w].q.len() }

// WorkerRunning returns the batch worker w is running, when it started, and whether it runs.
func (v View) WorkerRunning(w WorkerID) (BatchID, Time, bool) {
	ws := &v.e.workers[w]
	return ws.cur.b, ws.curStart, ws.busy
}

// StageRecord is what happened to a request at one stage: the worker, the execution and the
// outgoing transfer (OutStart/OutEnd = -1 when there was none).
type StageRecord struct {
	Stage            StageID
	Worker           WorkerID
	Batch            BatchID
	BatchSize        int
	Start, End       Time
	OutStart, OutEnd Time
}

// Trace returns request id's per-stage record in visiting order (stages not reached yet are
// absent). Together with the request's Arrival, Dispatch and Done it gives the latency
// breakdown serve reports: queueing (Dispatch − Arrival), per-stage waiting and execution,
// and transfers.
func (e *Engine) Trace(id ReqID) []StageRecord {
	r := e.rq(id)
	var out []StageRecord
	for _, bid := range r.Batches {
		if bid < e.batchBase {
			continue // forgotten by Compact
		}
		b := e.bt(bid)
		for _, h := range b.Hops {
			if h.Start < 0 {
				break
			}
			out = append(out, StageRecord{Stage: h.Stage, Worker: h.Worker, Batch: bid, BatchSize: len(b.Reqs),
				Start: h.Start, End: h.End, OutStart: h.OutStart, OutEnd: h.OutEnd})
		}
	}
	return out
}

// WorkerDown reports whether worker w failed and is not back (EvWorkerDown, EvWorkerUp).
func (v View) WorkerDown(w WorkerID) bool { return v.e.workers[w].down }

// BatchLost reports whether batch id was lost to a worker failure (or forgotten by Compact,
// which keeps no lost batch whose completions are still owed).
func (e *Engine) BatchLost(id BatchID) bool {
	return id < e.batchBase || int(id-e.batchBase) >= len(e.batches) || e.bt(id).Lost
}

// workerDown fails worker w: the batch it runs and those queued on it are lost (their other
// hops and transfers cancelled), its models are gone, and their requests are released —
// dropped (DropWorkerFailed) unless the policy re-routes them (FailReroute).
func (e *Engine) workerDown(now Time, w WorkerID) error {
	fa, ok := e.pol.(FailureAware)
	if !ok || fa.OnWorkerFailure() == 0 {
		return fmt.Errorf("worker %s failed: %w (%s)", e.dep.Topo.Workers[w].Name, ErrNoFailover, e.pol.Name())
	}
	ws := &e.workers[w]
	if ws.down {
		return nil
	}
	ws.down = true
	var lost []BatchID
	if ws.busy {
		ws.busy = false
		ws.busyTime += now - ws.curStart
		lost = append(lost, ws.cur.b)
	}
	for _, x := range ws.q.items[ws.q.head:] {
		if !slices.Contains(lost, x.b) {
			lost = append(lost, x.b)
		}
	}
	ws.q = fifo{}
	ws.loading, ws.models, ws.mem = false, nil, 0
	for tok, job := range e.loads {
		if job.w == w {
			delete(e.loads, tok) // its timer is then stale
		}
	}
	var released []ReqID
	var stages []StageID
	for _, id := range lost {
		b := e.bt(id)
		b.Lost = true
		stage := b.Hops[0].Stage
		for i := range b.Hops {
			h := &b.Hops[i]
			if h.Worker == w {
				stage = h.Stage
			}
			srv := e.dep.Topo.Workers[h.Worker].Server
			e.workers[h.Worker].q.removeBatch(id)
			e.up[srv].q.removeBatch(id)
			e.down[srv].q.removeBatch(id)
		}
		for _, r := range b.Reqs {
			q := e.rq(r)
			if q.held > 0 {
				q.held--
			}
			if q.Outcome == Pending && q.held == 0 {
				released = append(released, r)
				stages = append(stages, stage)
			}
		}
	}
	if fa.OnWorkerFailure() != FailReroute {
		for i, r := range released {
			e.dropFailed(now, e.rq(r), stages[i])
		}
	}
	// Removing the lost batches' entries may have unblocked the queues they headed.
	for _, id := range lost {
		for _, h := range e.bt(id).Hops {
			srv := e.dep.Topo.Workers[h.Worker].Server
			e.tryWorker(now, h.Worker)
			e.tryLink(now, srv, true)
			e.tryLink(now, srv, false)
		}
	}
	return e.callPolicy(now, Event{Kind: EvWorkerDown, Worker: w, Req: NoReq})
}

// workerUp brings worker w back, empty.
func (e *Engine) workerUp(now Time, w WorkerID) error {
	ws := &e.workers[w]
	if !ws.down {
		return nil
	}
	ws.down = false
	if err := e.callPolicy(now, Event{Kind: EvWorkerUp, Worker: w, Req: NoReq}); err != nil {
		return err
	}
	e.tryWorker(now, w)
	return nil
}

// lostDone takes a lost batch's owed completion: it frees the worker or links the hop or
// transfer held, and nothing else happens (the batch's requests were released already).
func (e *Engine) lostDone(now Time, ev Event) error {
	b := e.bt(ev.Batch)
	if int(ev.Hop) < 0 || int(ev.Hop) >= len(b.Hops) {
		return fmt.Errorf("%v for batch %d hop %d: no such hop", ev.Kind, ev.Batch, ev.Hop)
	}
	if b.running > 0 {
		b.running--
	}
	if ev.Kind == EvBatchDone {
		ws := &e.workers[ev.Worker]
		// The failed worker itself was freed when it failed (and may run other work now).
		if ws.busy && ws.cur.b == ev.Batch && ws.cur.hop == ev.Hop {
			ws.busy = false
			ws.busyTime += ev.End - ev.Start
			e.tryWorker(now, ev.Worker)
		}
		return nil
	}
	src, dst := e.linkEnds(b, int(ev.Hop))
	e.up[src].busy = false
	e.up[src].busyTime += ev.End - ev.Start
	e.tryLink(now, src, true)
	if dst != NoServer {
		e.down[dst].busy = false
		e.down[dst].busyTime += ev.End - ev.Start
		e.tryLink(now, dst, false)
	}
	return nil
}

// dropFailed drops request q, released by a failure or dispatched to a failed worker.
func (e *Engine) dropFailed(now Time, q *Request, stage StageID) {
	q.Outcome = Dropped
	q.Reason = DropWorkerFailed
	q.DropStage = stage
	q.Done = now
	e.finished++
	e.fx.Finish(now, q)
}

// dropOnDown answers a dispatch whose path crosses a failed worker: its requests that are
// pending and in no other batch are dropped (DropWorkerFailed) and no batch is made.
func (e *Engine) dropOnDown(now Time, d *Decision, stage StageID) error {
	for _, r := range d.Reqs {
		if !e.hasReq(r) {
			return fmt.Errorf("%w: dispatch of unknown request %d", errBadDecision, r)
		}
		q := e.rq(r)
		if q.Outcome != Pending || q.App != d.App {
			return fmt.Errorf("%w: dispatch of request %d (%v, app %d≠%d)", errBadDecision, r, q.Outcome, q.App, d.App)
		}
		if q.held == 0 {
			e.dropFailed(now, q, stage)
		}
	}
	return nil
}
