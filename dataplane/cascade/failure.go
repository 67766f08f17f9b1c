package cascade

import (
	"github.com/plan-dev/plan/dataplane"
)

// OnWorkerFailure implements dataplane.FailureAware. CascadeServe (§4.4) places several
// replicas of a model, which jointly serve the model's QPS through the load balancer's
// shares, and routes by deficit over those shares (§5); the paper does not treat failures.
// [ours] A failed replica's samples are re-queued (FailReroute) on the live replicas of the
// same model, whose shares absorb the failed one's: re-queueing is one push per sample, and
// a sample that already passed the cascade's earlier models keeps that work. A sample that
// no live replica of its model can take is dropped as worker-failed.
func (p *Policy) OnWorkerFailure() dataplane.FailureMode { return dataplane.FailReroute }

// isDown reports whether worker w failed and is not back (no view lookup while none is).
func (p *Policy) isDown(w dataplane.WorkerID) bool { return p.nDown > 0 && p.v.WorkerDown(w) }

// anyLive is stage s's live replica with the shortest queue (NoWorker if none): the
// fallback when every replica the gear gives a share is down.
func (p *Policy) anyLive(s int) dataplane.WorkerID {
	best := dataplane.NoWorker
	for _, w := range p.stageReps[s] {
		if !p.isDown(w) && (best == dataplane.NoWorker || p.qlen(w) < p.qlen(best)) {
			best = w
		}
	}
	return best
}

// resetDeficit restarts deficit routing at every gear position of stage s: the set of live
// replicas changed, and counts from before would send a returning replica a burst.
func (p *Policy) resetDeficit(s int) {
	for gi, g := range p.tab.Gears {
		for pos, x := range g.Stages {
			if x != s {
				continue
			}
			p.total[gi][pos] = 0
			clear(p.sent[gi][pos])
			p.dfx[gi][pos].reset(p.sent[gi][pos])
		}
	}
}

// workerDown forgets what was in flight on failed replica w (its batch, its load: the engine
// reports neither) and re-queues its lost batch and its queue on live replicas of its model.
func (p *Policy) workerDown(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	p.nDown++
	st := p.tab.Replicas[w].Stage
	p.scratch = p.scratch[:0]
	if p.running[w] {
		p.running[w] = false
		for _, d := range p.tab.Replicas[w].GPUs {
			p.gpuBusy[d] = false
		}
		p.scratch = append(p.scratch, p.inflight[w]...)
	}
	p.inflight[w] = p.inflight[w][:0]
	p.loading[w], p.loaded[w] = false, false
	p.scratch = p.queues[w].appendIDs(p.scratch)
	p.queues[w].reset()
	p.resetDeficit(st)
	for _, id := range p.scratch {
		r := p.v.Req(id)
		if r.Outcome != dataplane.Pending {
			continue
		}
		g, pos := p.gearPos(id, st)
		target := dataplane.NoWorker
		if pos >= 0 {
			target = p.route(g, pos, st)
		} else {
			target = p.anyLive(st)
		}
		if target == dataplane.NoWorker {
			out.Drop(id, dataplane.StageID(st), dataplane.DropWorkerFailed, 0)
			continue
		}
		p.push(target, id, r.Arrival)
	}
	p.tryAll(now, out)
}

// workerUp takes replica w back. It returns empty: with preload the placement counts as
// resident (as at the start), otherwise it loads again when the current gear needs it.
func (p *Policy) workerUp(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	p.nDown--
	p.resetDeficit(p.tab.Replicas[w].Stage)
	p.loaded[w] = p.preload
	p.ensureLoaded(now, out)
	p.kick(now, w, out)
}
