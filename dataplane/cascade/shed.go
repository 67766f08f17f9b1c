package cascade

import (
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// Load shedding. CascadeServe (§4.5, §5) batches a replica's whole queue at
// its trigger and never drops: past the highest gear's QPS (the plan's qps_max) the queues
// grow without bound, every request waits longer than its SLO and goodput collapses (4.3/s
// at 3× the planned rate against 13,763/s at 1×). The paper plans gears up to the highest
// QPS it expects and leaves overload open. [ours] Like PPipe's and PARD's dispatchers, the
// policy admits only what it can still serve on time and drops the rest early, before it
// costs GPU time:
//   - at the door (an arrival, or a sample forwarded to a later model) a request joins a
//     replica's queue only if the batch it would join — everything queued there, up to
//     max_batch — could finish by the deadline of that batch's oldest request and its own,
//     started no earlier than the replica's GPUs are free (the running batches' nominal
//     ends): a lower bound, since the batch only grows and can only start later. Otherwise
//     it is dropped, as "admission" at the first model and "deadline" at a later one;
//   - at a batch's start the heads that cannot finish by their deadline even alone are
//     dropped ("deadline"), and the batch is cut to the largest size that still finishes by
//     its head's deadline (the rest stay queued for the next batch).
// Both fire only for requests that would otherwise finish late (or make an older request
// late), so a run in which every request meets its SLO makes the same decisions as without
// shedding. Admitting to the last request that fits keeps batches as large as the SLO
// allows, near the gear's throughput, instead of serving ever older requests.

// shedding reports whether the policy sheds now: in the plan's highest-QPS gear, past which
// no gear adds throughput. Below it the paper's answer to load is the gear switch at the next
// poll (§5: the α rule may keep a lower gear while its backlog drains), and a transient
// backlog there (the first poll of a run starts in gear 0) is left to it as the paper does.
func (p *Policy) shedding() bool { return p.cur == len(p.tab.Gears)-1 }

// freeAt is the earliest time replica w's GPUs are all free: the nominal end of the batches
// running on them (now when none runs; a batch running past its nominal end ends now at
// the earliest).
func (p *Policy) freeAt(now dataplane.Time, w dataplane.WorkerID) dataplane.Time {
	t := now
	for _, d := range p.gpusOf(w) {
		if p.gpuBusy[d] {
			t = max(t, p.gpuEnd[d])
		}
	}
	return t
}

// lat is the nominal latency of a batch of n on replica w's model.
func (p *Policy) lat(w dataplane.WorkerID, n int) dataplane.Time {
	return p.dep.Stages[p.queues[w].stage].Lat(n)
}

// admits reports whether a request with deadline dl can join w's queue now: the batch it
// would join finishes by its deadline and by the deadline of that batch's head. est is the
// estimated finish (the lower bound).
func (p *Policy) admits(now dataplane.Time, w dataplane.WorkerID, dl dataplane.Time) (bool, dataplane.Time) {
	if !p.shedding() {
		return true, 0
	}
	q := p.qlen(w)
	n := min(q+1, p.tab.MaxBatch)
	est := p.freeAt(now, w) + p.lat(w, n)
	if q > 0 && q < p.tab.MaxBatch {
		dl = min(dl, p.v.Req(p.queues[w].front()).Deadline)
	}
	return est <= dl, est
}

// dropLate drops the heads of w's queue that cannot finish by their deadline even in a
// batch of their own started now.
func (p *Policy) dropLate(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	if p.qlen(w) == 0 || !p.shedding() {
		return
	}
	q := &p.queues[w]
	st := dataplane.StageID(q.stage)
	l1 := p.lat(w, 1)
	n := 0
	for _, id := range q.ids[q.head:] {
		if now+l1 <= p.v.Req(id).Deadline {
			break
		}
		out.Drop(id, st, dataplane.DropDeadline, l1)
		p.Shed++
		n++
	}
	if n == 0 {
		return
	}
	if q.advance(n, p.v); q.len() > 0 {
		p.newHead(w)
	}
}

// batchSize is the size of the batch w starts now: everything queued up to max_batch, cut
// to the largest size that finishes by the head's deadline (at least 1: dropLate left a head
// that fits alone).
func (p *Policy) batchSize(now dataplane.Time, w dataplane.WorkerID) int {
	n := min(p.qlen(w), p.tab.MaxBatch)
	if !p.shedding() {
		return n
	}
	dl := p.v.Req(p.queues[w].front()).Deadline
	if now+p.lat(w, n) <= dl {
		return n
	}
	return max(1, sort.Search(n, func(k int) bool { return now+p.lat(w, k+1) > dl }))
}

// cancel removes request id (EvCancel: already finished as cancelled) from the queue that
// holds it. A request in a running batch is in no queue: the batch's end skips it.
func (p *Policy) cancel(id dataplane.ReqID) {
	for w := range p.queues {
		if found, wasHead := p.queues[w].remove(id, p.v); found {
			if wasHead && p.qlen(dataplane.WorkerID(w)) > 0 {
				p.newHead(dataplane.WorkerID(w))
			}
			return
		}
	}
}

// Forget implements dataplane.Forgetter: the engine retired request id and every older one,
// so the gear record of each goes (gearOf holds the nGear requests from reqBase on).
func (p *Policy) Forget(id dataplane.ReqID) {
	k := int(id-p.reqBase) + 1
	if k <= 0 || p.nGear == 0 {
		return
	}
	k = min(k, p.nGear)
	p.nGear -= k
	p.reqBase += dataplane.ReqID(k)
}

var _ dataplane.Door = (*Policy)(nil)

// Door implements dataplane.Door with the door test above, as an arrival at `at` would take
// it on each replica of the current gear's first model that has a share: admitted when one
// of them admits it (deficit routing may pick another; the policy's own test then decides).
// retryAfter is when the emptiest such replica's running batches end.
func (p *Policy) Door(_ dataplane.View, app dataplane.AppID, at, now dataplane.Time) (bool, dataplane.DropReason, dataplane.Time) {
	if p.dep == nil || app != 0 {
		return true, "", 0
	}
	g := &p.tab.Gears[p.cur]
	s := g.Stages[0]
	retry := dataplane.Never
	for k, w := range p.stageReps[s] {
		if g.Share[0][k] <= 0 || p.isDown(w) {
			continue
		}
		if ok, _ := p.admits(now, w, at+p.dep.Apps[0].SLO); ok {
			return true, "", 0
		}
		retry = min(retry, p.freeAt(now, w))
	}
	if retry == dataplane.Never {
		return true, "", 0 // no live replica: the policy drops it as worker-failed
	}
	return false, dataplane.DropAdmission, max(retry, now+1)
}
