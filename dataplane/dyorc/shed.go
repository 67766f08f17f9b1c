package dyorc

import (
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// Load shedding. DyOrc's scheduler (§5.3) places every call and never drops:
// past what the GPUs serve, the per-GPU queues grow without bound, every workflow ends later
// than its SLO and goodput collapses (12.9/s at 3× the plan's rates against 31.2/s at 1.5×).
// The paper leaves overload open. [ours] Like PPipe's and PARD's dispatchers, a scheduler that
// estimates finishes sheds, in overload, what it cannot serve on time:
//   - the DP that places a call estimates its finish (Eq. 1 over the GPU's queued tasks and
//     reservations); in overload a call whose estimate is past its request's deadline is
//     dropped before it costs GPU time: at the request's first call as "admission", at a
//     later one as "deadline" (its earlier steps are lost, its later ones saved). The
//     current call's estimate, not the predicted workflow's: the sampled rollout's is too
//     pessimistic (it shed at 1.5× what would have been served);
//   - overload is a sustained stream of late estimates: an exponential average (weight
//     shedWeight per call) of "this call's estimate is late" above shedEnter. A burst at the
//     plan's rates stays below it (0.71 at most in BenchmarkSimScale's runs that serve
//     their load, 0.57 in `plan simulate` at 1×), so there the decisions are the paper's;
//   - entering overload, the queued tasks whose estimated finish (their GPU's plan) is past
//     their deadline are dropped at once: the backlog built before the average crossed the
//     bar would otherwise keep every GPU busy with work that is already late;
//   - overload ends shedHold after the last late estimate.
//
// Greedy (no prediction) and dyorc-literal's first calls shed the same way. The baselines keep
// their published behaviour and collapse: round robin, the Ray-like router and the
// Triton-like fixed placement estimate nothing (DyOrc §8 compares against them as they are).
//
// Measured on testdata/export/dyorc/plan.json (`plan simulate --load 1,1.5,3`, goodput/s):
// dyorc 19.8, 31.2, 29.4 (was 19.8, 31.2, 12.9); dyorc-literal 17.1, 24.1, 24.2 (was 24.0 at
// 3×). Not enough for dyorc-argmax (18.9, 16.8, 11.6; was 9.1 at 3×) and dyorc-greedy (18.1,
// 22.0, 11.9; was 10.3): there the image app's later steps are shed behind GILL's long
// workflows, whose 60 s SLO admits them at any queue; shedding by deadline alone does not
// choose between apps.
const (
	shedWeight = 0.05
	shedEnter  = 0.9
	shedHold   = 10 * dataplane.Second
)

// shed runs the overload test for a call of request r at stage whose DP estimate is est (µs)
// and drops the request when it must; it reports whether it did.
func (p *Policy) shed(now dataplane.Time, r dataplane.ReqID, rs *reqState, stage dataplane.StageID, est float64, out *dataplane.Decisions) bool {
	q := p.v.Req(r)
	late := est > float64(q.Deadline)
	x := 0.0
	if late {
		x = 1
	}
	p.lateAvg += shedWeight * (x - p.lateAvg)
	switch {
	case !p.overload && p.lateAvg > shedEnter:
		p.overload = true
		p.st.Overloads++
		p.shedUntil = now + shedHold
		p.purge(now, out)
	case p.overload && now >= p.shedUntil:
		p.overload = false
	}
	if !late || !p.overload {
		return false
	}
	p.shedUntil = now + shedHold
	why := dataplane.DropDeadline
	if len(rs.calls) == 0 {
		why = dataplane.DropAdmission
	}
	out.Drop(r, stage, why, dataplane.Time(est)-q.Arrival)
	p.st.Shed++
	p.cancelChain(rs)
	p.release(r, rs)
	return true
}

// purge drops the requests of the queued tasks whose estimated finish is past their deadline:
// the end of the batch each joins in its GPU's plan (the walk of plan, recording where each
// task goes).
func (p *Policy) purge(now dataplane.Time, out *dataplane.Decisions) {
	type member struct {
		t *task
		b int
	}
	var ms []member
	for d := range p.devs {
		dv := &p.devs[d]
		if p.down[d] > 0 || !dv.keep || len(dv.queue) == 0 {
			continue
		}
		bySeq := make(map[int64]*task, len(dv.queue))
		for _, t := range dv.queue {
			bySeq[t.seq] = t
		}
		t := now
		if dv.running {
			t = max(t, dv.runEnd)
		}
		var pl []pbatch
		ms = ms[:0]
		for i := range dv.order {
			x := &dv.order[i]
			if x.resv && !p.opt.Literal && (x.ready < now || x.follows) {
				continue // as plan leaves it out
			}
			sv, items, ready := int(x.svc), int(x.items), max(x.ready, now)
			sr := dataplane.Time(p.svcReady(now, d, sv))
			bi := -1
			if n := len(pl); n > 0 {
				last := &pl[n-1]
				if last.svc == sv && last.items+items <= p.svcMax[sv] && ready <= last.start && sr <= last.start {
					last.items += items
					last.end = last.start + dataplane.Time(p.expLat(sv, last.items))
					bi = n - 1
				} else {
					t = max(t, last.end)
				}
			}
			if bi < 0 {
				st := max(t, ready, sr)
				pl = append(pl, pbatch{svc: sv, items: items, start: st, end: st + dataplane.Time(p.expLat(sv, items))})
				bi = len(pl) - 1
			}
			if tk := bySeq[x.seq]; !x.resv && tk != nil {
				ms = append(ms, member{tk, bi})
			}
		}
		for _, m := range ms {
			q := p.v.Req(m.t.req)
			if pl[m.b].end <= q.Deadline || p.reqs.get(m.t.req) == nil || q.Outcome != dataplane.Pending {
				continue
			}
			out.Drop(m.t.req, m.t.stage, dataplane.DropDeadline, pl[m.b].end-q.Arrival)
			p.st.Shed++
			p.cancel(m.t.req)
		}
	}
}

// cancel forgets request id (EvCancel: already finished as cancelled): its queued tasks leave
// their GPUs' queues and plans, its reservations go, and loads queued only for them are
// dropped at the GPU's next load (startLoad keeps only needed loads). A task in a running
// batch stays with the batch until it ends.
func (p *Policy) cancel(id dataplane.ReqID) {
	rs := p.reqs.get(id)
	if rs == nil {
		return
	}
	// The GPUs holding its queued tasks, each once, in index order (the order of the touches).
	// The request's tasks on a GPU are those of its entries with that GPU (every enqueue adds
	// one, and every task that leaves a queue removes its own), so the queue is scanned for
	// their pointers alone.
	if len(rs.qdevs) > 1 {
		slices.SortFunc(rs.qdevs, func(a, b qtask) int { return a.dev - b.dev })
	}
	for j := 0; j < len(rs.qdevs); {
		d := rs.qdevs[j].dev
		k := j + 1
		for k < len(rs.qdevs) && rs.qdevs[k].dev == d {
			k++
		}
		mine := rs.qdevs[j:k]
		j = k
		dv := &p.devs[d]
		if len(mine) == 1 {
			// One task (the common case): found by its pointer, and removed.
			t := mine[0].t
			if i := slices.Index(dv.queue, t); i >= 0 {
				dv.orderDel(t.ready, t.seq)
				dv.qn[t.svc]--
				dv.queue = slices.Delete(dv.queue, i, i+1)
				p.freeTasks.put(t)
			}
			p.touch(d)
			continue
		}
		// The tasks before its first are kept where they are: found by reads alone, not
		// rewritten one by one (under overload at 128 GPUs the queues hold ~25 tasks).
		i0 := 0
		for i0 < len(dv.queue) && !queuedOf(mine, dv.queue[i0]) {
			i0++
		}
		keep := dv.queue[:i0]
		for _, t := range dv.queue[i0:] {
			if queuedOf(mine, t) {
				dv.orderDel(t.ready, t.seq)
				dv.qn[t.svc]--
				p.freeTasks.put(t)
				continue
			}
			keep = append(keep, t)
		}
		clear(dv.queue[len(keep):])
		dv.queue = keep
		p.touch(d)
	}
	rs.qdevs = rs.qdevs[:0]
	p.cancelChain(rs)
	p.release(id, rs)
}

// Forget implements dataplane.Forgetter: the engine retired request id. A finished request's
// state normally went when it finished (finish, shed, failDrop, cancel); this drops whatever
// is left, so the scheduler's state follows what is in flight.
func (p *Policy) Forget(id dataplane.ReqID) {
	if rs := p.reqs.get(id); rs != nil {
		p.cancelChain(rs)
		p.release(id, rs)
	}
}

// Tracked is the number of requests whose state the scheduler keeps.
func (p *Policy) Tracked() int { return p.reqs.len() }

// queuedOf is whether t is one of the tasks of qs.
func queuedOf(qs []qtask, t *task) bool {
	for _, q := range qs {
		if q.t == t {
			return true
		}
	}
	return false
}
