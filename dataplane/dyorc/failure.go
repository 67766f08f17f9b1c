package dyorc

import (
	"slices"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// OnWorkerFailure implements dataplane.FailureAware: DyOrc re-routes. The paper does not treat
// failures [ours]; re-routing is what its scheduler already does at every call: a call is
// placed when it is made by the DP over every GPU (DyOrc §5.3), and any GPU can serve any
// service by loading it (totipotent workers, DyOrc §6.1), so a call a failure releases is just
// placed again, on the live GPUs. Dropping instead would fail whole multi-step workflows for a
// step that any other GPU can redo. Under every policy of this package (greedy, round-robin,
// Ray-like, Triton-like alike) a request is dropped as worker-failed only when nothing live
// can take its next step.
func (p *Policy) OnWorkerFailure() dataplane.FailureMode { return dataplane.FailReroute }

// onDown handles EvWorkerDown(w). A GPU's engine workers (one per stage) stand for its one
// totipotent worker process (DyOrc §6.1), so a GPU counts as failed while any of its workers
// is: the scheduler places nothing on it, loads nothing onto it, and re-places what it held.
// The failed worker's models are gone (and a load onto it: no EvModelLoaded will come); its
// part of the running batch is lost (no EvBatchDone will come), and the requests of that part
// are released: they and the tasks queued on the GPU are placed again as the calls they were.
// Reservations on the GPU go with their chains (their requests' next calls re-plan, §5.3).
// An API-server worker's ingresses move to the app's other API-server worker.
func (p *Policy) onDown(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	d := p.m.DevOf[w]
	if d < 0 {
		for _, r := range p.sortedReqs(func(rs *reqState) bool { return rs.on == w }) {
			rs := p.reqs.get(r)
			rs.on = dataplane.NoWorker
			if p.v.Req(r).Outcome != dataplane.Pending {
				continue
			}
			p.st.Rerouted++
			p.ingress(p.v.Req(r), rs, out)
		}
		return
	}
	p.down[d]++
	dv := &p.devs[d]
	for sv, h := range p.m.Holder[d] {
		if h != w {
			continue
		}
		if dv.resident[sv] {
			dv.setResident(sv, false)
			dv.mem -= p.m.W.Services[sv].Bytes
		}
		if dv.loading == sv {
			dv.loading = -1
			dv.mem -= p.m.W.Services[sv].Bytes
		}
	}
	var moved []*task
	if i := slices.Index(dv.runW, w); i >= 0 {
		dv.runW = slices.Delete(dv.runW, i, i+1)
		dv.outstanding--
		keep := dv.runTasks[:0]
		for _, t := range dv.runTasks {
			if p.m.WorkerOf[d][t.stage] == w {
				moved = append(moved, t)
			} else {
				keep = append(keep, t)
			}
		}
		clear(dv.runTasks[len(keep):])
		dv.runTasks = keep
		if dv.outstanding <= 0 {
			dv.running = false
			clear(dv.runTasks)
			dv.runTasks = dv.runTasks[:0]
		}
	}
	p.touch(d)
	if p.down[d] == 1 {
		p.nDown++
		moved = append(moved, dv.queue...)
		for _, t := range dv.queue {
			p.unqueued(t)
		}
		dv.queue, dv.loadQ = nil, nil
		clear(dv.qn)
		for _, r := range p.sortedReqs(func(rs *reqState) bool {
			return slices.ContainsFunc(rs.chain, func(x *resv) bool { return x.dev == d })
		}) {
			p.cancelChain(p.reqs.get(r))
		}
		dv.resv = nil
		dv.order = dv.order[:0]
		dv.preCut(0)
	}
	for _, t := range moved {
		rs := p.reqs.get(t.req)
		if rs == nil || p.v.Req(t.req).Outcome != dataplane.Pending {
			continue
		}
		// Undo the call's bookkeeping: the task is placed again as the same call.
		if n := len(rs.calls); n > 0 {
			rs.calls = rs.calls[:n-1]
		}
		rs.prevSvc, rs.prevItems = t.fromSvc, t.fromItems
		p.call(now, t.req, t.stage, true, out)
	}
}

// onUp handles EvWorkerUp(w): the worker is back, empty (its models were forgotten at the
// failure); its GPU takes work again once none of its workers is down.
func (p *Policy) onUp(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	d := p.m.DevOf[w]
	if d < 0 || p.down[d] == 0 {
		return
	}
	p.down[d]--
	if p.down[d] > 0 {
		return
	}
	p.nDown--
	p.touch(d)
	p.startLoad(now, d, out)
	p.tryStart(now, d, out)
}

// ingress sends an arriving request to its app's API-server worker (by trace key), or to
// the other one while that is down; with none live the request fails.
func (p *Policy) ingress(r *dataplane.Request, rs *reqState, out *dataplane.Decisions) {
	a := int(r.App)
	ws := p.m.IngressWorkers[a]
	k := int(dataplane.TraceKey(r) % int64(len(ws)))
	w := ws[k]
	for i := 1; i < len(ws) && p.v.WorkerDown(w); i++ {
		w = ws[(k+i)%len(ws)]
	}
	if p.v.WorkerDown(w) {
		p.failDrop(r.ID, rs, p.m.Ingress[a], out)
		return
	}
	rs.on = w
	out.Dispatch(r.App, []dataplane.ReqID{r.ID}, []dataplane.PathHop{{Stage: p.m.Ingress[a], Worker: w, Dur: dataplane.Time(p.m.Net.IngressUs)}})
}

// failDrop drops request r at stage as worker-failed: nothing live can serve its next step.
// Its calls so far do not teach the predictor (the workflow did not end).
func (p *Policy) failDrop(r dataplane.ReqID, rs *reqState, stage dataplane.StageID, out *dataplane.Decisions) {
	out.Drop(r, stage, dataplane.DropWorkerFailed, 0)
	p.st.FailDropped++
	p.cancelChain(rs)
	p.release(r, rs)
}

// nextLive is the round-robin pick: the next GPU in turn that is not down (-1 if none is).
func (p *Policy) nextLive() int {
	for range p.devs {
		g := p.rr % len(p.devs)
		p.rr++
		if p.down[g] == 0 {
			return g
		}
	}
	return -1
}

// liveOf returns the GPUs of gs that are not down (a new slice).
func (p *Policy) liveOf(gs []int) []int {
	var live []int
	for _, g := range gs {
		if p.down[g] == 0 {
			live = append(live, g)
		}
	}
	return live
}

// sortedReqs lists, by ID, the tracked requests whose state satisfies keep.
func (p *Policy) sortedReqs(keep func(*reqState) bool) []dataplane.ReqID {
	var ids []dataplane.ReqID
	for id, rs := range p.reqs.all() {
		if keep(rs) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
