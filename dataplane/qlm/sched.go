package qlm

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
)

// engineSched is QLM's queueing layer as the engine's scheduler policy (llm.Scheduler and
// its optional hooks): the engine asks it which waiting request an instance admits next
// (QLM's virtual queues, QLM §4, or a baseline's per-instance queue), where a preempted one
// goes back, whether a head that does not fit may evict (QLM §5 eviction, EDF's preemption)
// and whether the deadline guard lets a request in (admitKeepsDeadlines).
type engineSched struct{ p *Policy }

var (
	_ llm.Scheduler      = engineSched{}
	_ llm.VictimPicker   = engineSched{}
	_ llm.Preemptor      = engineSched{}
	_ llm.Gate           = engineSched{}
	_ llm.WaitingCounter = engineSched{}
	_ llm.AdmitEnder     = engineSched{}
	_ llm.Finisher       = engineSched{}
)

func (a engineSched) in(e *llm.Engine) *instance { return a.p.inst[e.ID] }

// Head implements llm.Scheduler.
func (a engineSched) Head(e *llm.Engine) *seq { return a.p.q.head(a.p, a.in(e)) }

// Admit implements llm.Scheduler.
func (a engineSched) Admit(e *llm.Engine, s *seq) { a.p.q.pop(a.p, a.in(e), s) }

// Requeue implements llm.Scheduler.
func (a engineSched) Requeue(e *llm.Engine, s *seq) { a.p.q.requeue(a.p, a.in(e), s) }

// Victim implements llm.VictimPicker: a baseline's per-instance queue may name it (vLLM's
// priority policy); nil keeps the engine's default.
func (a engineSched) Victim(e *llm.Engine) *seq {
	if pq, ok := a.p.q.(*plainQueue); ok && pq.wait != nil {
		if vp := pq.hooks[e.ID].Victim; vp != nil {
			return vp.Victim(e)
		}
	}
	return nil
}

// PreemptFor implements llm.Preemptor.
func (a engineSched) PreemptFor(now dataplane.Time, e *llm.Engine, _ *llm.Model, h *seq) bool {
	return a.p.q.preemptFor(a.p, now, a.in(e), h, 0)
}

// Pick implements llm.Gate: QLM's deadline guard on request pulling. When admitting h would
// make a running sequence with an earlier deadline late, QLM's queue may offer a request of
// another group (qlmQueue.past) that keeps them; otherwise admission stops.
func (a engineSched) Pick(now dataplane.Time, e *llm.Engine, _ *llm.Model, h *seq) *seq {
	p, in := a.p, a.in(e)
	if !p.opt.guard {
		return h
	}
	m := p.llmFor(in, in.model)
	if p.admitKeepsDeadlines(now, in, m, h) {
		return h
	}
	qq, ok := p.q.(*qlmQueue)
	if !ok {
		return nil
	}
	h = qq.past(p, in, h)
	if h == nil || !p.admitKeepsDeadlines(now, in, m, h) {
		return nil
	}
	return h
}

// MaySwapIn implements llm.Gate: the deadline guard judges a swapped-out sequence's return
// like an admission.
func (a engineSched) MaySwapIn(now dataplane.Time, e *llm.Engine, _ *llm.Model, s *seq) bool {
	p, in := a.p, a.in(e)
	return !p.opt.guard || p.admitKeepsDeadlines(now, in, p.llmFor(in, in.model), s)
}

// Waiting implements llm.WaitingCounter.
func (a engineSched) Waiting(e *llm.Engine, _ string, limit int) int {
	if c, ok := a.p.q.(waitingCounter); ok {
		return c.waitingFor(a.p, a.in(e), limit)
	}
	return 0
}

// AdmitEnd implements llm.AdmitEnder.
func (a engineSched) AdmitEnd(e *llm.Engine) { a.p.q.admitted(a.p, a.in(e)) }

// Finished implements llm.Finisher.
func (a engineSched) Finished(_ *llm.Engine, s *seq) { a.p.q.finished(a.p, s) }

// waitingCounter is a queue that can count the sequences waiting for an instance (up to
// limit) whose model it holds: the prefills the next step may admit.
type waitingCounter interface {
	waitingFor(p *Policy, in *instance, limit int) int
}

func (q *qlmQueue) waitingFor(_ *Policy, in *instance, limit int) int {
	if q.vq == nil {
		return 0
	}
	n := 0
	for _, g := range q.vq[in.ID] {
		if g.model != in.model {
			break // a model switch comes first
		}
		n += len(g.members)
		if n >= limit {
			return limit
		}
	}
	return n
}
