package qlm

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
)

// pull keeps an instance whose virtual queue ran empty work-conserving: it takes over the
// waiting group, not started yet, that it would start sooner than the instance it is queued
// on (earliest deadline first, then group ID). QLM §5 makes load balancing implicit in the
// plan and re-plans only on a predicted violation, so without this an instance that drains
// its queue ahead of the RCT estimate idles while groups with loose deadlines wait elsewhere
// (a mistral request was seen to wait 23 s behind a busy instance, the other one idle).
// Paper §5 "request pulling": an instance pulls whenever it has spare capacity; started
// groups stay where they are (no migration, QLM §5). A group of another model is taken only
// by an instance with nothing running, paying the model swap (QLM §5), when that still starts
// it before its place where it waits.
func (q *qlmQueue) pull(p *Policy, in *instance) *group {
	// The round-robin and random ablations have no load balancing (QLM §8): groups stay on
	// their first virtual queue.
	if in.loading || p.opt.placement != "plan" {
		return nil
	}
	m := p.llmFor(in, in.model)
	empty := len(in.Running()) == 0 && len(in.Swapped()) == 0
	if m != nil && len(in.Running()) >= m.MaxSeqs && !empty {
		return nil
	}
	// Inside Handle (not under fullStep), with no external load: an instance of a kind that
	// found nothing since the last change finds nothing (pullMemo). checkMemo (tests) scans
	// anyway and panics on a find.
	memo := p.memoOn && in.observed <= 0
	known := memo && q.none.has(p.ss.ver, in, empty)
	if known && !p.checkMemo {
		return nil
	}
	var best *group
	for oi := q.nextQueued(p, 0); oi >= 0; oi = q.nextQueued(p, oi+1) {
		o := p.inst[oi]
		if o == in {
			continue
		}
		// there is q.drain(p, o, k) for each candidate, accumulated along o's queue with the
		// same additions in the same order (one residual and one pass per queue instead of
		// one per candidate).
		var acc float64
		accPrev, accK := "", -1
		for k, g := range q.vq[o.ID] {
			if g.started || len(g.members) == 0 || p.llmFor(in, g.model) == nil || !p.allowed(in, g.model, g.gpu) {
				continue
			}
			here := 0.0
			if g.model != in.model {
				if !empty {
					continue
				}
				here = p.swapSeconds(in, g.model)
			}
			// An engine that reports external load starts the group only after it.
			if ext := p.externalSeconds(in); ext > 0 {
				here += ext
			}
			if accK < 0 {
				acc, accPrev, accK = q.residual(p, o), o.upcoming(), 0
			}
			for ; accK < k; accK++ {
				x := q.vq[o.ID][accK]
				if x.model != accPrev {
					acc += p.swapSeconds(o, x.model)
					accPrev = x.model
				}
				mw, _ := q.rct.Drain(len(x.members), x.mu, x.sd, p.theta(o, x.model))
				acc += mw
			}
			there := acc
			if p.fullStep {
				there = q.drain(p, o, k)
			}
			prev := o.model
			if k > 0 {
				prev = q.vq[o.ID][k-1].model
			}
			if g.model != prev {
				there += p.swapSeconds(o, g.model)
			}
			if here >= there {
				continue
			}
			if best == nil || g.prio < best.prio || (g.prio == best.prio && (g.deadline < best.deadline || (g.deadline == best.deadline && g.id < best.id))) {
				best = g
			}
		}
	}
	if best == nil {
		g := q.split(p, in)
		switch {
		case g == nil && memo:
			q.none.add(p.ss.ver, in, empty)
		case g != nil && known:
			panic(fmt.Sprintf("qlm: instance %d split group %d, kept as finding nothing", in.ID, g.id))
		}
		return g
	}
	if known {
		panic(fmt.Sprintf("qlm: instance %d pulled group %d, kept as finding nothing", in.ID, best.id))
	}
	p.forgetDrain(best.vq)
	p.forgetDrain(in.ID)
	from := q.vq[best.vq]
	for i, g := range from {
		if g == best {
			q.vq[best.vq] = append(from[:i:i], from[i+1:]...)
			break
		}
	}
	best.vq = in.ID
	for _, s := range best.members {
		s.Inst = in.ID
	}
	q.vq[in.ID] = append(q.vq[in.ID], best)
	q.mark(in.ID)
	p.changed()
	p.stats.Pulls++
	return best
}

// split is load balancing for an instance that found nothing to pull: the waiting members
// of a started group queued elsewhere. QLM §5 pins a group that started executing to its
// instance ("cannot be migrated"), which is about its running requests; its waiting members
// are still in the global queue. Left there, a large group (up to δ·avg_batch requests,
// QLM §4) drains on one instance while another idles, which under sustained overload is lost
// capacity every later request pays for (full W_B: one instance finished 230 s after the
// other). The later half of the waiting members (FCFS within a group, QLM §4: the ones that
// would wait longest) become a new group at the end of this instance's virtual queue; the
// earlier half and the running members stay. Of the candidates, the group of highest
// priority, then earliest deadline, then lowest ID (deterministic); of the loaded model,
// or any model on an instance with nothing running or swapped (paying the model swap).
func (q *qlmQueue) split(p *Policy, in *instance) *group {
	empty := len(in.Running()) == 0 && len(in.Swapped()) == 0
	extSec := p.externalSeconds(in)
	var best *group
	for oi := q.nextQueued(p, 0); oi >= 0; oi = q.nextQueued(p, oi+1) {
		o := p.inst[oi]
		// An instance whose engine reports external load takes no waiting members from an
		// instance that would start them no later (its residual work R_g).
		if o == in || (extSec > 0 && extSec >= q.residual(p, o)) {
			continue
		}
		for _, g := range q.vq[o.ID] {
			if !g.started || len(g.members) == 0 || p.llmFor(in, g.model) == nil || (g.model != in.model && !empty) || !p.allowed(in, g.model, g.gpu) {
				continue
			}
			if best == nil || g.prio < best.prio || (g.prio == best.prio && (g.deadline < best.deadline || (g.deadline == best.deadline && g.id < best.id))) {
				best = g
			}
		}
	}
	if best == nil {
		return nil
	}
	p.forgetDrain(best.vq)
	p.forgetDrain(in.ID)
	k := len(best.members) / 2
	g := &group{id: q.next, app: best.app, model: best.model, bucket: best.bucket, deadline: dataplane.Never, vq: in.ID,
		mu: best.mu, sd: best.sd, maxOut: best.maxOut, prio: best.prio, gpu: best.gpu}
	q.next++
	g.members = append([]*seq(nil), best.members[k:]...)
	best.members = best.members[:k:k]
	g.size = len(g.members)
	for _, s := range g.members {
		ext(s).group = g
		s.Inst = in.ID
		g.deadline = min(g.deadline, s.Deadline)
	}
	best.retime()
	q.vq[in.ID] = append(q.vq[in.ID], g)
	q.mark(in.ID)
	p.changed()
	p.stats.Pulls++
	return g
}

// behind reports whether the deadline guard costs the waiting requests their deadlines: a
// waiting group of in's virtual queue with a looser SLO than the tightest running sequence
// (one the guard may hold back) is predicted late by the RCT estimator at its mean (QLM §6,
// Eq. 2: the residual work and the drain of the groups ahead at the profiled throughput Θ,
// then its own drain; its first member at one request's share of it). Then admission is
// throughput the queue needs, and the guard yields below the decode knee (flatBatch):
// there a wider batch costs the running sequences little time per token (continuous
// batching is memory-bound, QLM §2.1). While the queue keeps up, the guard protects the
// tight requests in full (a permanent floor cost W_B quick interactive 90% → 49%;
// no floor starved the batch class on the full run). It is evaluated with the periodic
// violation check (every tick, QLM §6), not per step: a floor that flips per step admits
// sequences only to evict them at the next one (full W_B: 8,690 evictions, 89.1% overall
// against 90.3% on the tick).
func (q *qlmQueue) behind(p *Policy, now dataplane.Time, in *instance) bool {
	if len(in.Running()) == 0 {
		return false
	}
	tight := slo(in.Running()[0])
	for _, s := range in.Running() {
		tight = min(tight, slo(s))
	}
	t := float64(now)/1e6 + q.residual(p, in)
	prev := in.upcoming()
	for _, g := range q.vq[in.ID] {
		if len(g.members) == 0 {
			continue
		}
		if g.model != prev {
			t += p.swapSeconds(in, g.model)
			prev = g.model
		}
		th := p.theta(in, g.model)
		wq, _ := q.rct.Drain(len(g.members), g.mu, g.sd, th)
		first, last := g.members[0], g.members[len(g.members)-1]
		if slo(first) > tight && (t+wq/float64(len(g.members)) > float64(first.Deadline)/1e6 || t+wq > float64(last.Deadline)/1e6) {
			return true
		}
		t += wq
	}
	return false
}

// past is the pull past a head that admitKeepsDeadlines refused: the first request of the
// earliest-deadline group further down the instance's virtual queue, of the loaded model, with
// a deadline earlier than the head group's (ties by group ID). A batch group the plan left at
// the head can wait (its admission would make a running tighter request late) without
// blocking the interactive groups queued behind it: the head-of-line blocking QLM exists to
// remove (paper §1), here caused by the running batch's time per token rather than its KV.
func (q *qlmQueue) past(_ *Policy, in *instance, h *seq) *seq {
	var best *group
	for _, g := range q.vq[in.ID] {
		if g == ext(h).group || len(g.members) == 0 || g.model != in.model || g.deadline >= ext(h).group.deadline || g.prio > ext(h).group.prio {
			continue
		}
		if best == nil || g.deadline < best.deadline || (g.deadline == best.deadline && g.id < best.id) {
			best = g
		}
	}
	if best == nil {
		return nil
	}
	return best.members[0]
}
