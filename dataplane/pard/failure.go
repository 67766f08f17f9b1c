package pard

import (
	"github.com/plan-dev/plan/dataplane"
)

// OnWorkerFailure implements dataplane.FailureAware with FailDrop: the engine drops the
// requests of the batch the failed worker ran, and the pipeline keeps serving with the
// module's other workers. PARD names machine failures among the unforeseen events that make
// requests late (§1, §2) but describes no failover; it adjusts capacity by resource scaling
// (§5.1), so here the autoscaler, when on, provisions a replacement as for any capacity
// shortfall, and the lost batch's requests are not re-run (our choice).
func (p *Pipeline) OnWorkerFailure() dataplane.FailureMode { return dataplane.FailDrop }

// owns reports whether w is a worker of one of the pipeline's modules.
func (p *Pipeline) owns(w dataplane.WorkerID) bool {
	if int(w) < 0 || int(w) >= len(p.workers) {
		return false
	}
	m := &p.mods[p.workers[w].mod]
	return m.used && p.workers[w].pos < len(m.workers) && m.workers[p.workers[w].pos] == w
}

// workerDown forgets the batch the failed worker ran (the engine lost it and dropped its
// requests, so no completion will free the worker) and hands the requests it queued or was
// batching to the module's live workers; with none left they are dropped as worker-failed,
// as every later arrival at the module is until a worker is back (waiting could last for
// ever if the failure is permanent).
func (p *Pipeline) workerDown(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	if !p.owns(w) {
		return
	}
	pw := &p.workers[w]
	if pw.down {
		return
	}
	pw.down = true
	m := &p.mods[pw.mod]
	if pw.busy {
		pw.busy = false
		for _, id := range pw.running {
			if p.gone(id) {
				continue
			}
			if p.v.Req(id).Outcome == dataplane.Pending {
				// A DAG branch of the request is still held elsewhere, so the engine kept
				// it: this branch is lost, which counts as a drop on it (the merge then
				// drops the request once the siblings are accounted for).
				p.drop(out, id, m.stage, dataplane.DropWorkerFailed, 0)
				continue
			}
			// The engine dropped it; copies queued on sibling branches must not run.
			p.markGone(id)
		}
	}
	pw.running = pw.running[:0]
	p.reload(w)
	p.touched = p.touched[:0]
	for _, id := range pw.forming {
		// The forming batch's module arrival times are not kept: they count from now.
		key := p.v.Req(id).Deadline
		if p.variant.order == orderFIFO {
			key = now
		}
		p.rehome(now, m, id, key, now, out)
	}
	pw.forming = pw.forming[:0]
	for pw.q.Len() > 0 {
		key, id, tr := pw.q.PopMin()
		p.rehome(now, m, id, key, tr, out)
	}
	p.reload(w)
	p.fillTouched(now, out)
}

// rehome queues request id (key, module arrival tr) of module m at the worker pick chooses,
// or drops it as worker-failed when the module has no live worker.
func (p *Pipeline) rehome(now dataplane.Time, m *pardModule, id dataplane.ReqID, key, tr dataplane.Time, out *dataplane.Decisions) {
	if p.gone(id) {
		p.flushDeferred(out, id)
		return
	}
	t := p.pick(now, m)
	if t == dataplane.NoWorker {
		p.drop(out, id, m.stage, dataplane.DropWorkerFailed, 0)
		return
	}
	p.workers[t].q.Push(key, id, tr)
	p.reload(t)
	p.touch(t)
}

// workerUp takes worker w back: it is empty and serves again as it did before it failed.
func (p *Pipeline) workerUp(w dataplane.WorkerID) {
	if !p.owns(w) || !p.workers[w].down {
		return
	}
	p.workers[w].down = false
	p.reload(w)
}
