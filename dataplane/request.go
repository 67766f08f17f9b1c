package dataplane

import (
	"fmt"
	"unsafe"
)

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

// Prefix is a request's prompt identity from its trace, for automatic prefix caching
// (llm-engine-2.md §2; the KV pool, dataplane/llm/prefixcache, names blocks by it). At most
// one of Group and HashIDs is set.
type Prefix struct {
	// ID is the trace's request id ("" when it has none).
	ID string
	// Group's requests share their first GroupTokens prompt tokens (two of them share the
	// smaller count).
	Group       string
	GroupTokens int32
	// HashIDs name the prompt's blocks of HashBlockTokens tokens (Mooncake: 512), the last
	// one partial; equal id prefixes are equal token prefixes.
	HashIDs         []int64
	HashBlockTokens int32
}

// Arrival describes a request entering the engine.
type Arrival struct {
	App AppID
	Attrs
	// Prefix is what the request's prompt shares with other requests' prompts, and its id in
	// the trace it came from; nil: nothing known (all its tokens its own). The engine keeps it
	// beside the request record (Engine.Prefix).
	Prefix *Prefix
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
	id := e.NextRequestID()
	e.done.add(id)
	e.reqs.push(Request{
		ID: id, App: a.App, Attrs: a.Attrs, Arrival: at, Deadline: dl,
		Dispatch: Never, FirstToken: Never, Done: Never, DropStage: NoStage,
	})
	// The record eight arrivals on lies in a chunk the table recycled or made a while ago
	// (chunked): at 256 GPUs its lines are no longer in the core's cache, and the push that
	// writes them stalled the core on the misses (the arrival's Handle, 6% of the 256-GPU
	// profile). Asked for now, they are in cache by then; at 16 GPUs they already were.
	if q := e.reqs.ahead(8); q != nil {
		prefetch2(unsafe.Pointer(q))
	}
	if a.Prefix != nil {
		*e.prefix.ref(id) = a.Prefix
	}
	return id, e.Handle(now, Event{Kind: EvArrival, Req: id})
}

// Cancel withdraws request id at now (its client disconnected or gave up, or its deadline
// passed at the client). A request that is not pending (finished, unknown or already
// forgotten) is left as it is and Cancel reports false. A request no batch holds is finished
// at once as Dropped with DropCancelled, and the policy gets EvCancel to forget it. A request
// a batch holds is marked (Request.CancelRequested): the engine finishes it as cancelled when
// the last batch holding it ends (every branch of a DAG fan-out), its result discarded, and
// delivers EvCancel then (release). Cancel reports whether it withdrew the request: false
// for a request already marked by an earlier Cancel.
func (e *Engine) Cancel(now Time, id ReqID) (bool, error) {
	if !e.hasReq(id) {
		return false, nil
	}
	r := e.rq(id)
	if r.Outcome != Pending || r.CancelRequested {
		return false, nil
	}
	e.events++
	if r.held > 0 {
		r.CancelRequested = true
		e.marked++
		return true, nil
	}
	e.finishCancelled(now, r)
	return true, e.callPolicy(now, Event{Kind: EvCancel, Req: r.ID})
}

// finishCancelled finishes r (pending, held by no batch) as cancelled.
func (e *Engine) finishCancelled(now Time, r *Request) {
	r.CancelRequested = true
	r.Outcome = Dropped
	r.reason = codeOf(DropCancelled)
	r.Done = now
	e.finished++
	e.done.set(r.ID)
	e.fx.Finish(now, r)
}

// release drops one hold on q: a batch holding it ended, sent it into a pool queue, or was
// lost. A request cancelled while held is finished as cancelled once no batch holds it any
// more; its EvCancel waits in e.cancels for flushCancels, which the engine calls before the
// event that ended the batch reaches the policy. release reports whether it finished q so.
// Without cancels it is exactly q.held--.
func (e *Engine) release(now Time, q *Request) bool {
	q.held--
	if !q.CancelRequested || q.held > 0 || q.Outcome != Pending {
		return false
	}
	e.finishCancelled(now, q)
	e.cancels = append(e.cancels, q.ID)
	return true
}

// flushCancels delivers the EvCancel of every request release finished, in release order.
func (e *Engine) flushCancels(now Time) error {
	for i := 0; i < len(e.cancels); i++ {
		if err := e.callPolicy(now, Event{Kind: EvCancel, Req: e.cancels[i]}); err != nil {
			e.cancels = e.cancels[:0]
			return err
		}
	}
	e.cancels = e.cancels[:0]
	return nil
}

// Prefix returns request id's prompt prefix (Arrival.Prefix; nil when none was given).
func (e *Engine) Prefix(id ReqID) *Prefix { return e.prefix.at(id) }

// RequestBatches returns the batches request id travelled in, in order (read-only, and only
// until Compact forgets the request). Per-stage start/end and transfer times are in the
// batches' hops (Engine.Batch).
func (e *Engine) RequestBatches(id ReqID) []BatchID {
	q := e.rq(id)
	switch q.nBatch {
	case 0:
		return nil
	case 1:
		return q.batch0[:]
	}
	return e.multi.at(id)
}

// addBatch appends batch id to q's batch list. Most requests travel in one batch, kept in the
// record; a re-batching policy's request (a cascade's next model) gets a list in the multi
// table, which doubles within the arena instead of an allocation per request and batch.
func (e *Engine) addBatch(q *Request, id BatchID) {
	n := int(q.nBatch)
	switch {
	case n == 0:
		q.batch0[0] = id
	case n == 1:
		l := e.batchArena.take(2)
		l[0], l[1] = q.batch0[0], id
		*e.multi.ref(q.ID) = l
	default:
		l := e.multi.ref(q.ID)
		if n < cap(*l) {
			*l = append(*l, id)
		} else {
			nb := e.batchArena.take(2 * n)
			copy(nb, *l)
			nb[n] = id
			*l = nb[: n+1 : 2*n]
		}
	}
	q.nBatch++
}
