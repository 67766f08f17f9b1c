package dataplane

import "slices"

// View is the read-only window policies get on engine state. Its methods return pointers
// into engine tables for speed; policies must not write through them.
type View struct{ e *Engine }

// Deployment returns the served deployment.
func (v View) Deployment() *Deployment { return v.e.dep }

// Req returns request id.
func (v View) Req(id ReqID) *Request { return v.e.rq(id) }

// Prefix returns request id's prompt prefix (Engine.Prefix).
func (v View) Prefix(id ReqID) *Prefix { return v.e.prefix.at(id) }

// RequestBatches returns the batches request id travelled in (Engine.RequestBatches).
func (v View) RequestBatches(id ReqID) []BatchID { return v.e.RequestBatches(id) }

// Batch returns batch id.
func (v View) Batch(id BatchID) *Batch { return v.e.bt(id) }

// WorkerIdle reports whether worker w runs nothing, loads nothing and has nothing queued.
func (v View) WorkerIdle(w WorkerID) bool {
	ws := &v.e.workers[w]
	return !ws.busy && !ws.loading && ws.q.len() == 0
}

// Arrived lists the requests an EvStageArrival delivers: the whole batch, or the one
// request a routed stage sent (borrowed until the next call). Requests withdrawn by
// Engine.Cancel are left out: they never reach a stage arrival.
func (v View) Arrived(ev *Event) []ReqID {
	if ev.Req != NoReq {
		v.e.one[0] = ev.Req
		return v.e.one[:]
	}
	reqs := v.e.bt(ev.Batch).Reqs
	if v.e.marked == 0 {
		return reqs
	}
	// A withdrawn request never reaches a stage arrival (finished as cancelled, or waiting
	// for another branch of its DAG to end).
	out := v.e.arrived[:0]
	for _, r := range reqs {
		if !v.e.rq(r).CancelRequested {
			out = append(out, r)
		}
	}
	v.e.arrived = out
	return out
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
	return ws.curB, ws.curStart, ws.busy
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
	var out []StageRecord
	for _, bid := range e.RequestBatches(id) {
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
