package pard

import (
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// cancelReq forgets withdrawn request id (EvCancel): the engine already
// finished it as cancelled. It leaves every worker's priority queue and forming batch of
// its application (DAG branches may queue it at two modules at once), its join counts and
// its decided drops go, and the workers it left refill their forming batch from their
// queues. A batch that held it ran to its end (the engine discarded the result), so the
// GPU time is spent and nothing else is released. Finding it scans the application's
// queues: O(queued), which a cancel can afford while the hot path keeps no index.
func (p *Pipeline) cancelReq(now dataplane.Time, id dataplane.ReqID, out *dataplane.Decisions) {
	p.markGone(id)
	delete(p.doomed, id)
	delete(p.deferred, id)
	for _, s := range p.merges {
		delete(p.join, joinKey{id, s})
	}
	p.touched = p.touched[:0]
	for _, s := range p.apps[p.v.Req(id).App].mods {
		for _, w := range p.mods[s].workers {
			pw := &p.workers[w]
			removed := pw.q.Remove(id)
			if k := slices.Index(pw.forming, id); k >= 0 {
				pw.forming = slices.Delete(pw.forming, k, k+1)
				removed = true
			}
			if k := slices.Index(pw.running, id); k >= 0 {
				pw.running = slices.Delete(pw.running, k, k+1)
			}
			if removed {
				p.reload(w)
				p.touch(w)
			}
		}
	}
	p.fillTouched(now, out)
}

// withdrawn reports whether request id, showing up at module s, was withdrawn while a batch
// held it (Request.CancelRequested): it then goes no further (a DAG copy queued on another
// branch is not run either). The engine finishes such a request itself when the holding
// batch ends and sends EvCancel; should one reach a module unheld and pending all the same,
// it is finished here as cancelled, never run.
func (p *Pipeline) withdrawn(out *dataplane.Decisions, id dataplane.ReqID, s dataplane.StageID) bool {
	r := p.v.Req(id)
	if !r.CancelRequested {
		return false
	}
	delete(p.deferred, id) // the cancel supersedes a drop decided for it
	p.markGone(id)
	if !r.InFlight() && r.Outcome == dataplane.Pending {
		out.Drop(id, s, dataplane.DropCancelled, 0)
	}
	return true
}

// Forget implements dataplane.Forgetter: everything kept for a retired request goes (its
// gone flag, decided drops and join counts), so the policy's memory follows what is in
// flight, not how many requests have passed.
func (p *Pipeline) Forget(id dataplane.ReqID) {
	p.flags.Forget(id)
	if len(p.doomed) > 0 {
		delete(p.doomed, id)
	}
	if len(p.deferred) > 0 {
		delete(p.deferred, id)
	}
	if len(p.join) > 0 {
		for _, s := range p.merges {
			delete(p.join, joinKey{id, s})
		}
	}
}
