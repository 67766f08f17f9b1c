package dataplane

import (
	"fmt"
	"slices"
)

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
		lost = append(lost, ws.curB)
	}
	for _, x := range ws.q.all() {
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
		if b.lazyWork && b.Hops[0].End >= 0 {
			// The first hop ran: its share, which batchDone kept for the second (Batch).
			for _, r := range b.Reqs {
				e.rq(r).WorkGPU += b.share0
			}
		}
		b.lazyWork = false
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
				e.release(now, q)
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
	if err := e.flushCancels(now); err != nil {
		return err
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
		if ws.busy && ws.curB == ev.Batch && ws.curHop == ev.Hop {
			ws.busy = false
			ws.busyTime += ev.End - ev.Start
			e.tryWorker(now, ev.Worker)
		}
		return nil
	}
	src, dst := e.linkEnds(b, int(ev.Hop))
	e.up[src].busy = false
	e.tryLink(now, src, true)
	if dst != NoServer {
		e.down[dst].busy = false
		e.tryLink(now, dst, false)
	}
	return nil
}

// dropFailed drops request q, released by a failure or dispatched to a failed worker.
func (e *Engine) dropFailed(now Time, q *Request, stage StageID) {
	q.Outcome = Dropped
	q.reason = codeOf(DropWorkerFailed)
	q.DropStage = stage
	q.Done = now
	e.finished++
	e.done.set(q.ID)
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
