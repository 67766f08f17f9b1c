package qlm

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// The engine model of an LLM instance: one step (iteration) of a continuous-batching engine
// as the LLM engine digest §2 describes vLLM's V1 scheduler, shared by `plan simulate` and
// serve's emulated instances. A step hands out tokens under a token budget B
// (max_num_batched_tokens) and a sequence budget S (max_num_seqs):
//
//  1. running sequences first, in admission order: a decode takes 1 token, an unfinished
//     prompt a chunk of min(P − c, budget left); a sequence whose KV blocks cannot grow
//     preempts the most recently admitted running one (recompute, or a swap to CPU memory
//     where configured), itself last;
//  2. then, when nothing was preempted, waiting sequences in queue order while budget, a
//     sequence slot and KV blocks remain: a prompt that does not fit whole takes the budget
//     left as its first chunk (at most max_num_partial_prefills mid-prompt at once; with
//     chunked prefill off it waits); admission stops at the first that cannot be admitted
//     (head-of-line: a later, shorter prompt does not jump it).
//
// The step's time is the prefill-containing curve over its scheduled tokens when any is a
// prompt token, else the decode-only curve, plus the per-context-token term (llm.stepUs).
// A token computed in step k reaches its client at the end of step k + outDelay (default 1,
// as measured vLLM, digest §2.5), or when the instance goes idle before then.

// output is a token computed but not yet at its client: a first token, a last one, or both.
type output struct {
	s           *seq
	first, last bool
	// left is the steps still to end before it is stamped.
	left int
}

// holdKey is the timer key of the arrival hold (Handle): an idle instance starts its step
// once every arrival of the instant is queued.
const holdKey = -1

// step starts the instance's next iteration, model switch or nothing, when it is idle.
func (p *Policy) step(now dataplane.Time, in *instance, out *dataplane.Decisions) {
	if in.busy || in.loading || in.down {
		return
	}
	if now < p.hold && len(in.running) == 0 && len(in.swapped) == 0 {
		// Requests arriving at the same instant are considered together (digest §1): an
		// idle instance starts at the hold timer, after every arrival of this instant.
		p.held = append(p.held, in.idx)
		return
	}
	h := p.q.head(p, in)
	if h != nil && h.model != in.model {
		if len(in.running) == 0 {
			p.switchModel(now, in, h.model, out)
			return
		}
		in.drain = true
	} else {
		in.drain = false
	}
	m := p.llmFor(in, in.model)
	if m == nil {
		return
	}
	if p.opt.guard && p.opt.evict {
		p.protectDeadlines(now, in, m)
	}
	p.swapIn(now, in, m)
	for _, s := range in.running {
		s.sched = 0
	}
	in.slot = p.prefillSlot(in, m)
	preempted := p.scheduleRunning(now, in, m)
	if !preempted && !in.drain && len(in.swapped) == 0 {
		p.admitWaiting(now, in, m)
		p.q.admitted(p, in)
	}
	iter := in.iter[:0]
	tokens, pre, ctx := 0, 0, 0
	next := dataplane.Never
	for _, s := range in.running {
		if s.sched == 0 {
			if s.readyAt > now {
				next = min(next, s.readyAt)
			}
			continue
		}
		iter = append(iter, s)
		tokens += s.sched
		if s.prefilling() {
			pre += s.sched
		}
		ctx += s.comp + s.sched
	}
	in.iter = iter
	if len(iter) == 0 {
		if next != dataplane.Never {
			out.SetTimer(next, int64(in.idx))
		}
		return
	}
	dur := m.stepUs(tokens, pre, ctx)
	in.iterPrefill = pre > 0
	if in.iterPrefill {
		p.stats.Prefills++
	}
	p.stats.Iterations++
	in.iterSat = h != nil
	in.iterStart = now
	in.busy = true
	p.dispatchIteration(in, dur, out)
}

// swapIn brings swapped-out sequences back first (QLM §5 request pulling), while KV and the
// sequence cap allow; each is ready once its KV crossed the host link.
func (p *Policy) swapIn(now dataplane.Time, in *instance, m *llm) {
	for len(in.swapped) > 0 && len(in.running) < m.maxSeqs {
		s := in.swapped[0]
		need := m.blocks(s.ctx() + 1)
		if in.kvUsed+need > m.kvCap || (p.opt.guard && !p.admitKeepsDeadlines(now, in, m, s)) {
			break
		}
		in.swapped = in.swapped[1:]
		in.cpuUsed -= int64(s.kv) * m.kvBytes
		s.kv = need
		in.kvUsed += need
		s.swapped = false
		s.readyAt = now + dataplane.Time(math.Ceil(float64(int64(s.ctx())*m.kvBytes)/m.hostBytesPerUs))
		in.running = append(in.running, s)
	}
}

// prefillSlot is the most prompt tokens one sequence computes in this step. With
// max_num_partial_prefills N > 1, vLLM splits the token budget evenly among the prefills it
// can schedule: the running sequences still mid-prompt plus the waiting ones, k of them at
// most N, each chunk at most max_num_batched_tokens / k (vLLM's scheduler,
// partial_prefill_budget_lookup_list; LLM engine digest §2). N = 1: the whole budget.
// [ours] vLLM's long_prefill_token_threshold (at most one long prompt mid-prefill) is not
// modelled.
func (p *Policy) prefillSlot(in *instance, m *llm) int {
	if m.maxPartial <= 1 || !m.chunked {
		return m.maxBatched
	}
	k := 0
	for _, s := range in.running {
		if s.need() > 1 && s.readyAt <= p.now {
			k++
		}
	}
	if c, ok := p.q.(waitingCounter); ok && k < m.maxPartial {
		k += c.waitingFor(p, in, m.maxPartial-k)
	}
	return m.maxBatched / max(1, min(k, m.maxPartial))
}

// waitingCounter is a queue that can count the sequences waiting for an instance (up to
// limit) whose model it holds: the prefills the next step may admit.
type waitingCounter interface {
	waitingFor(p *Policy, in *instance, limit int) int
}

func (q *plainQueue) waitingFor(_ *Policy, in *instance, limit int) int {
	if q.wait == nil {
		return 0
	}
	n := 0
	for _, s := range q.wait[in.idx] {
		if n >= limit {
			break
		}
		if s.model == in.model {
			n++
		}
	}
	return n
}

func (q *qlmQueue) waitingFor(_ *Policy, in *instance, limit int) int {
	if q.vq == nil {
		return 0
	}
	n := 0
	for _, g := range q.vq[in.idx] {
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

// budgetLeft is the token budget the running sequences leave in this step.
func budgetLeft(in *instance, m *llm) int {
	b := m.maxBatched
	for _, s := range in.running {
		b -= s.sched
	}
	return b
}

// scheduleRunning is rule 1 of the step: the running sequences in admission order, each
// with KV blocks for its computed tokens plus those it computes now; it reports whether it
// preempted one (then no waiting sequence is admitted in this step, as vLLM).
func (p *Policy) scheduleRunning(now dataplane.Time, in *instance, m *llm) bool {
	budget := m.maxBatched
	preempted := false
	for i := 0; i < len(in.running) && budget > 0; i++ {
		s := in.running[i]
		if s.readyAt > now {
			continue
		}
		n := min(s.need(), budget)
		if s.need() > 1 {
			n = min(n, in.slot)
		}
		if n < s.need() && !m.chunked {
			continue
		}
		want := m.blocks(s.comp + n)
		for in.kvUsed-s.kv+want > m.kvCap {
			// vLLM preempts the most recently admitted running request (digest §2.3).
			v := in.running[len(in.running)-1]
			p.preempt(in, v, m)
			preempted = true
			if v == s {
				break
			}
		}
		if i >= len(in.running) || in.running[i] != s {
			break
		}
		in.kvUsed += want - s.kv
		s.kv = want
		s.sched = n
		budget -= n
	}
	return preempted
}

// admitWaiting is rule 2 of the step: waiting sequences in queue order while the budgets and
// KV allow (QLM's deadline guard and KV eviction, §5, act here on its policies).
func (p *Policy) admitWaiting(now dataplane.Time, in *instance, m *llm) {
	partial := 0
	for _, s := range in.running {
		if s.comp+s.sched < s.prompt+s.gen {
			partial++
		}
	}
	for len(in.running) < m.maxSeqs {
		budget := budgetLeft(in, m)
		if budget <= 0 {
			return
		}
		h := p.q.head(p, in)
		if h == nil || h.model != in.model {
			return
		}
		n := min(h.need(), budget, in.slot)
		if n < h.need() && (!m.chunked || partial >= m.maxPartial) {
			return
		}
		want := m.blocks(h.comp + n)
		if in.kvUsed+want > m.kvCap {
			if !p.q.preemptFor(p, now, in, h, want) {
				return
			}
			continue
		}
		if p.opt.guard && !p.admitKeepsDeadlines(now, in, m, h) {
			qq, ok := p.q.(*qlmQueue)
			if !ok {
				return
			}
			h = qq.past(p, in, h)
			if h == nil || !p.admitKeepsDeadlines(now, in, m, h) {
				return
			}
			n = min(h.need(), budget, in.slot)
			if n < h.need() && (!m.chunked || partial >= m.maxPartial) {
				return
			}
			want = m.blocks(h.comp + n)
			if in.kvUsed+want > m.kvCap {
				return
			}
		}
		p.q.pop(p, in, h)
		h.kv = want
		in.kvUsed += want
		h.inst = in.idx
		h.started = true
		h.admitted = now
		h.sched = n
		if n < h.need() {
			partial++
		}
		in.running = append(in.running, h)
	}
}

// iterationDone applies the finished step at its end time: every sequence's computed tokens
// grow by what the step computed; one that computed all it needed produces a token (its
// first, or its last: the output delay stamps them later); finished ones free their KV.
func (p *Policy) iterationDone(now dataplane.Time, in *instance, out *dataplane.Decisions) {
	in.allTime = in.allTime*satDecay + float64(now-in.iterStart)/1e6
	in.allDecodes *= satDecay
	if !in.iterPrefill {
		in.allDecodes++
	}
	tok := 0
	for _, s := range in.iter {
		if s.sched == s.need() {
			tok++
		}
	}
	if in.iterSat {
		in.satTok = in.satTok*satDecay + float64(tok)
		in.satTime = in.satTime*satDecay + float64(now-in.iterStart)/1e6
		in.satDecodes *= satDecay
		if !in.iterPrefill {
			in.satDecodes++
		}
	}
	p.dropCancelled(in, out)
	p.releaseOutputs(now, in, out, false)
	m := p.llmFor(in, in.model)
	for _, s := range in.iter {
		s.comp += s.sched
		s.sched = 0
		if s.comp < s.prompt+s.gen {
			continue // mid-prompt: a chunk
		}
		s.gen++
		first, last := s.gen == 1, s.gen >= s.out
		if last {
			s.fin = true
		}
		if first || last {
			o := output{s: s, first: first, last: last}
			if m == nil || m.outDelay == 0 {
				p.stamp(now, o, out)
			} else {
				o.left = m.outDelay
				in.outq = append(in.outq, o)
			}
		}
	}
	keep := in.running[:0]
	for _, s := range in.running {
		if s.fin {
			in.kvUsed -= s.kv
			s.kv = 0
			p.q.finished(p, s)
			continue
		}
		keep = append(keep, s)
	}
	clear(in.running[len(keep):])
	in.running = keep
	in.iter = in.iter[:0]
	in.busy = false
}

// releaseOutputs counts one more step ended for the instance's outputs in flight and stamps
// those due (all of them when all: the instance went idle, nothing delays its output).
func (p *Policy) releaseOutputs(now dataplane.Time, in *instance, out *dataplane.Decisions, all bool) {
	keep := in.outq[:0]
	for _, o := range in.outq {
		o.left--
		if all || o.left <= 0 {
			p.stamp(now, o, out)
			continue
		}
		keep = append(keep, o)
	}
	clear(in.outq[len(keep):])
	in.outq = keep
}

// stamp delivers an output at now: the first token (TTFT, Decisions.FirstToken) and the
// completion (TPOT = (done − first token)/(out − 1), LLM engine digest §3).
func (p *Policy) stamp(now dataplane.Time, o output, out *dataplane.Decisions) {
	s := o.s
	if o.first && s.ttft == 0 {
		s.ttft = now - s.arrival
		p.stats.TTFT[s.id] = s.ttft
		out.FirstToken(s.id, now)
	}
	if o.last {
		if s.inst >= 0 && s.inst < len(p.inst) {
			p.stats.Served[s.id] = p.inst[s.inst].gpu
		}
		if s.out > 1 {
			p.stats.TPOT[s.id] = (now - s.arrival - s.ttft) / dataplane.Time(s.out-1)
		}
		delete(p.seqs, s.id) // the table holds the sequences in flight (dropExpired reads it)
		out.Complete(s.id, 0)
	}
}

// dropOutputs forgets s's outputs in flight (its request was cancelled).
func (p *Policy) dropOutputs(in *instance, s *seq) {
	keep := in.outq[:0]
	for _, o := range in.outq {
		if o.s != s {
			keep = append(keep, o)
		}
	}
	clear(in.outq[len(keep):])
	in.outq = keep
}
