package pard

import (
	"github.com/plan-dev/plan/dataplane"
)

// gone: a drop was decided for the request, it reached its outcome, or the engine retired
// it (Forget: only finished requests are retired).
func (p *Pipeline) gone(id dataplane.ReqID) bool {
	return p.flags.Forgotten(id) || p.flags.At(id)&flagGone != 0
}

// drop decides a drop. A request still inside a batch of a sibling DAG branch cannot be
// dropped by the engine yet: the decision (stage, reason, estimate) is kept and issued when
// the sibling hands the request back.
func (p *Pipeline) drop(out *dataplane.Decisions, id dataplane.ReqID, stage dataplane.StageID, reason dataplane.DropReason, est dataplane.Time) {
	if p.gone(id) {
		return
	}
	if mg := p.mods[stage].merge; mg != dataplane.NoStage && !p.cancel {
		// Without sibling cancellation the other branches keep working on the request
		// (their GPU time then counts as invalid); the drop is issued at the merge once
		// every branch is accounted for, the dropped one counting as arrived.
		if _, ok := p.doomed[id]; !ok {
			p.doomed[id] = pardDrop{stage, reason, est}
		}
		k := joinKey{id, mg}
		c := p.join[k] + 1
		if int(c) < p.mods[mg].preds {
			p.join[k] = c
			return
		}
		delete(p.join, k)
		p.dropDoomed(out, id)
		return
	}
	p.markGone(id)
	if p.v.Req(id).InFlight() {
		p.deferred[id] = pardDrop{stage, reason, est}
		return
	}
	out.Drop(id, stage, reason, est)
}

// dropDoomed issues the first drop decided on any branch of a request whose branches are
// all done.
func (p *Pipeline) dropDoomed(out *dataplane.Decisions, id dataplane.ReqID) {
	dd := p.doomed[id]
	delete(p.doomed, id)
	p.markGone(id)
	if p.v.Req(id).InFlight() {
		p.deferred[id] = dd
		return
	}
	out.Drop(id, dd.stage, dd.reason, dd.est)
}

// flushDeferred issues a kept drop once no batch holds the request any more.
func (p *Pipeline) flushDeferred(out *dataplane.Decisions, id dataplane.ReqID) {
	if dd, ok := p.deferred[id]; ok && !p.v.Req(id).InFlight() && p.v.Req(id).Outcome == dataplane.Pending {
		delete(p.deferred, id)
		out.Drop(id, dd.stage, dd.reason, dd.est)
	}
}

// markGone records that request id reached its outcome (or will, by a decided drop).
func (p *Pipeline) markGone(id dataplane.ReqID) {
	p.flags.Set(id, p.flags.At(id)|flagGone)
}

// touch adds w to the workers to fill after the current event.
func (p *Pipeline) touch(w dataplane.WorkerID) {
	for _, t := range p.touched {
		if t == w {
			return
		}
	}
	p.touched = append(p.touched, w)
}

// arriveAt queues request id at module s (joining DAG branches first).
func (p *Pipeline) arriveAt(now dataplane.Time, s dataplane.StageID, id dataplane.ReqID, out *dataplane.Decisions) {
	m := &p.mods[s]
	if m.preds > 1 {
		k := joinKey{id, s}
		c := p.join[k] + 1
		if int(c) < m.preds {
			p.join[k] = c
			return
		}
		delete(p.join, k)
		if _, ok := p.doomed[id]; ok {
			p.dropDoomed(out, id)
			return
		}
	}
	if sp := p.dep.Stages[s].SkipProb; sp > 0 && dataplane.SkipCoin(skipSeed, id, s) < sp {
		p.skip(now, s, id, out)
		return
	}
	m.inCur++
	if p.variant.rule == ruleClipper && p.variant.check == checkEnqueue {
		// Enqueue reading: the request already spent the objectives of the modules before
		// this one (Σ_{i<k} SLO_i; the entry module's is 0, where nothing has elapsed).
		if l := now - p.v.Req(id).Arrival; l > m.cumBudget-m.budget {
			p.drop(out, id, s, DropBudget, l)
			return
		}
	}
	if p.variant.rule == ruleOC && m.throttle {
		m.credit += 1 - p.ocAlpha
		if m.credit < 1 {
			p.drop(out, id, s, DropOverload, m.q1)
			return
		}
		m.credit--
	}
	w := p.pick(now, m)
	if w == dataplane.NoWorker {
		// Every worker of the module is down (or a spare): nothing would ever serve it.
		p.drop(out, id, s, dataplane.DropWorkerFailed, 0)
		return
	}
	pw := &p.workers[w]
	r := p.v.Req(id)
	key := r.Deadline
	if p.variant.order == orderFIFO {
		key = now
	}
	pw.q.Push(key, id, now)
	p.reload(w)
	p.touch(w)
}

// skip passes a request that does not visit conditional module s on, as if s had run: to
// each successor (joins count it), or, at a sink, to completion unless another branch still
// holds it (that branch then finishes it at its own sink, the engine's first-sink rule).
func (p *Pipeline) skip(now dataplane.Time, s dataplane.StageID, id dataplane.ReqID, out *dataplane.Decisions) {
	st := &p.dep.Stages[s]
	if len(st.Next) > 0 {
		for _, n := range st.Next {
			p.arriveAt(now, n, id, out)
		}
		return
	}
	r := p.v.Req(id)
	if r.InFlight() || r.Outcome != dataplane.Pending || p.gone(id) {
		return
	}
	p.markGone(id)
	out.Complete(id, s)
}

func (p *Pipeline) fillTouched(now dataplane.Time, out *dataplane.Decisions) {
	for i := 0; i < len(p.touched); i++ {
		p.fill(now, p.touched[i], out)
	}
}

// expectedStart is t_e: the end of the running batch, or now when the GPU is idle.
func (pw *pardWorker) expectedStart(now dataplane.Time) dataplane.Time {
	if pw.busy {
		return max(pw.runStart+pw.runNom, now)
	}
	return now
}

// fill is the request broker (PARD §4.2, Eq. 3): take requests in priority order, drop or add
// them to the forming batch, and launch when the GPU is idle.
func (p *Pipeline) fill(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	pw := &p.workers[w]
	if pw.down {
		return // a dispatch to it would only drop the batch (its queue went to live workers)
	}
	m := &p.mods[pw.mod]
	te := pw.expectedStart(now)
	slo := m.slo
	pw.cand = pw.cand[:0]
	for len(pw.forming)+len(pw.cand) < m.batch && pw.q.Len() > 0 {
		if p.purge && p.variant.rule == ruleEq3 && p.variant.order != orderFIFO {
			// Ours: whatever the mode, a request that cannot make it even if served now
			// would be dropped whenever popped; drop it from the min end right away.
			for pw.q.Len() > 0 {
				_, id, _ := pw.q.Min()
				r := p.v.Req(id)
				est := (now - r.Arrival) + m.d + m.lsub
				if est <= slo {
					break
				}
				_, _, tr := pw.q.PopMin()
				p.reload(w)
				if p.qDropped {
					m.sampleQ(now, now-tr)
				}
				p.drop(out, id, m.stage, DropPurge, est)
			}
			if pw.q.Len() == 0 {
				break
			}
		}
		var id dataplane.ReqID
		var tr dataplane.Time
		switch {
		case p.variant.order == orderHBF || p.variant.order == orderAdaptive && m.hbf:
			_, id, tr = pw.q.PopMax()
		default:
			_, id, tr = pw.q.PopMin()
		}
		p.reload(w)
		if p.gone(id) {
			p.flushDeferred(out, id)
			continue
		}
		if p.withdrawn(out, id, m.stage) {
			continue
		}
		r := p.v.Req(id)
		drop, reason, est := p.test(now, te, tr, r, m)
		if p.variant.rule == ruleNexus {
			if drop {
				for _, c := range pw.cand {
					p.drop(out, c.id, m.stage, DropWindow, c.est)
				}
				pw.cand = pw.cand[:0]
				p.drop(out, id, m.stage, reason, est)
				continue
			}
			pw.cand = append(pw.cand, pardCand{id, tr})
			continue
		}
		if drop {
			if p.qDropped {
				m.sampleQ(now, now-tr)
			}
			p.drop(out, id, m.stage, reason, est)
			continue
		}
		p.keep(now, te, tr, pw, m, id)
	}
	for _, c := range pw.cand {
		p.keep(now, te, c.est, pw, m, c.id)
	}
	pw.cand = pw.cand[:0]
	if !pw.busy && len(pw.forming) > 0 {
		p.launch(now, w, out)
	}
}

// keep adds a request to the forming batch and records the planner's samples.
func (p *Pipeline) keep(now, te, tr dataplane.Time, pw *pardWorker, m *pardModule, id dataplane.ReqID) {
	pw.forming = append(pw.forming, id)
	p.reload(m.workers[pw.pos])
	// Q = t_b − t_r from batched requests only (dropped ones would bias q up under HBF).
	m.sampleQ(now, now-tr)
	// Normalized batch wait u = W/d(run size).
	var u float32
	if pw.busy && pw.runNom > 0 {
		u = float32(float64(te-now) / float64(pw.runNom))
	}
	m.u[m.uPos] = u
	m.uPos = (m.uPos + 1) % len(m.u)
	if m.uN < len(m.u) {
		m.uN++
	}
	if p.variant.rule == ruleWCL {
		m.wclCur = append(m.wclCur, te-tr+m.d)
	}
}

// sampleQ adds one queueing delay to the module's windowed mean, in 100 ms buckets.
func (m *pardModule) sampleQ(now, q dataplane.Time) {
	bn := int64(now / (100 * dataplane.Millisecond))
	qb := &m.qb[bn%int64(len(m.qb))]
	if qb.n != bn {
		*qb = qBucket{n: bn}
	}
	qb.sum += float64(q)
	qb.cnt++
}

// test is the drop rule at t_b for request r (arrived at the module at tr).
func (p *Pipeline) test(now, te, tr dataplane.Time, r *dataplane.Request, m *pardModule) (bool, dataplane.DropReason, dataplane.Time) {
	switch p.variant.rule {
	case ruleNexus:
		switch {
		case p.nexusSplit || p.variant.budget == budgetLocal:
			l := te + m.d - tr
			return l > m.budget, DropWindow, l
		case p.variant.budget == budgetCum:
			l := te + m.d - r.Arrival
			return l > m.cumBudget, DropWindow, l
		}
		l := te + m.d - r.Arrival
		return l > m.slo, DropWindow, l
	case ruleClipper:
		return p.clipperTest(now, te, tr, r, m)
	case ruleEq3:
		l := (te - r.Arrival) + m.d + m.lsub
		return l > m.slo, DropEstimate, l
	case ruleSplit, ruleWCL:
		l := te + m.d - tr
		return l > m.budget, DropBudget, l
	case ruleOC:
		l := now - r.Arrival
		return l > m.slo, DropExpired, l
	}
	return false, "", 0
}

// clipperTest is Clipper++'s drop rule in the variant's reading (PARD §5.1: "drops requests
// only if they already exceed the latency objective before inference", SLO_k = SLO·d_k/Σd).
func (p *Pipeline) clipperTest(now, te, tr dataplane.Time, r *dataplane.Request, m *pardModule) (bool, dataplane.DropReason, dataplane.Time) {
	at := now
	if p.variant.check == checkTE {
		at = te
	}
	if p.variant.expire && at-r.Arrival > m.slo {
		return true, DropExpired, at - r.Arrival
	}
	switch {
	case p.variant.check == checkEnqueue:
		return false, "", 0 // tested on arrival (arriveAt)
	case p.variant.budget == budgetCum || p.cumulative:
		l := at - r.Arrival
		return l > m.cumBudget, DropBudget, l
	}
	l := at - tr
	return l > m.budget, DropBudget, l
}

// launch starts the forming batch on the idle worker and begins forming the next one.
func (p *Pipeline) launch(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	pw := &p.workers[w]
	m := &p.mods[pw.mod]
	p.buf = p.buf[:0]
	for _, id := range pw.forming {
		if p.gone(id) {
			p.flushDeferred(out, id)
			continue
		}
		if p.withdrawn(out, id, m.stage) {
			continue
		}
		p.buf = append(p.buf, id)
	}
	pw.forming = pw.forming[:0]
	p.reload(w)
	if len(p.buf) == 0 {
		p.fill(now, w, out)
		return
	}
	p.path[0] = dataplane.PathHop{Stage: m.stage, Worker: w}
	out.Dispatch(m.app, p.buf, p.path[:])
	pw.running = append(pw.running[:0], p.buf...)
	pw.busy = true
	p.reload(w)
	pw.runStart = now
	pw.runNom = p.dep.Stages[m.stage].Lat(len(p.buf))
	p.fill(now, w, out)
}

// skipSeed seeds the coin of conditional modules (dataplane.SkipCoin): a constant, so a
// trace's requests skip the same modules in every run, simulated or served.
const skipSeed = 1
