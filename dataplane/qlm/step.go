package qlm

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
)

// An instance's iterations are the LLM engine's (dataplane/llm: token budget, chunked
// prefill, KV blocks, preemption, step time); this file is QLM's side of each step: the
// serving operations that come before it (model swap and drain, deadline eviction, QLM §5),
// the dispatch of the iteration the engine formed as batches on the instance's worker, and
// what QLM learns when it ends (profiled throughput, stamped tokens). The waiting requests the
// engine admits come from QLM's queueing layer through engineSched (sched.go).

// output is a token computed but not yet at its client (llm.Output).
type output = llm.Output

// holdKey is the timer key of the arrival hold (Handle): an idle instance starts its step
// once every arrival of the instant is queued.
const holdKey = -1

// step starts the instance's next iteration, model switch or nothing, when it is idle.
func (p *Policy) step(now dataplane.Time, in *instance, out *dataplane.Decisions) {
	if in.Busy() || in.loading || in.down {
		return
	}
	if now < p.hold && len(in.Running()) == 0 && len(in.Swapped()) == 0 {
		// Requests arriving at the same instant are considered together (digest §1): an
		// idle instance starts at the hold timer, after every arrival of this instant.
		p.held = append(p.held, in.ID)
		return
	}
	h := p.q.head(p, in)
	if h != nil && h.Model != in.model {
		if len(in.Running()) == 0 {
			p.switchModel(now, in, h.Model, out)
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
	it, ok, wake := in.Step(now, m.Model, !in.drain)
	if !ok {
		if wake != dataplane.Never {
			out.SetTimer(wake, int64(in.ID))
		}
		return
	}
	if in.IterPrefill() {
		p.stats.Prefills++
	}
	p.stats.Iterations++
	in.iterSat = h != nil
	in.iterStart, in.iterEnd = now, now+max(it.Dur, 1)
	p.dispatchIteration(in, it.Dur, out)
}

// iterationDone applies the finished step at its end time: QLM profiles the throughput of
// the step (QLM §2.4 Insight #1), drops the sequences whose requests were withdrawn while it
// ran, and the engine applies it (llm.Engine.Done), stamping the tokens due.
func (p *Policy) iterationDone(now dataplane.Time, in *instance, out *dataplane.Decisions) {
	in.allTime = in.allTime*satDecay + float64(now-in.iterStart)/1e6
	in.allDecodes *= satDecay
	if !in.IterPrefill() {
		in.allDecodes++
	}
	tok := 0
	for _, s := range in.Iter() {
		if s.Sched >= s.Need() { // a speculative decode schedules k + 1 for its 1
			tok++
		}
	}
	if in.iterSat {
		in.satTok = in.satTok*satDecay + float64(tok)
		in.satTime = in.satTime*satDecay + float64(now-in.iterStart)/1e6
		in.satDecodes *= satDecay
		if !in.IterPrefill() {
			in.satDecodes++
		}
	}
	p.dropCancelled(in, out)
	var em *llm.Model
	if m := p.llmFor(in, in.model); m != nil {
		em = m.Model
	}
	in.Done(now, em, func(o output) { p.stamp(now, o, out) })
}

// releaseOutputs stamps the instance's outputs due after one more step (all of them when
// all: the instance went idle, nothing delays its output).
func (p *Policy) releaseOutputs(now dataplane.Time, in *instance, out *dataplane.Decisions, all bool) {
	in.ReleaseOutputs(now, all, func(o output) { p.stamp(now, o, out) })
}

// outputStepKey is the timer key of instance idx's output-only step (llm.Engine.OutputStep);
// timer keys ≥ 0 are the instances' swap-in waits and holdKey (−1) the arrival hold.
func outputStepKey(idx int) int64 { return -2 - int64(idx) }

// outputStepIdx is the instance of an output-only step's timer key.
func outputStepIdx(key int64) (int, bool) {
	if key > -2 {
		return 0, false
	}
	return int(-2 - key), true
}

// outputStep starts an output-only step on in when it is idle with outputs in flight: an
// instance with nothing left to compute still ends the steps that deliver them (LLM engine
// digest §2.5, dataplane/llm's outputstep.go), timed as a decode of their sequences' model.
func (p *Policy) outputStep(now dataplane.Time, in *instance, out *dataplane.Decisions) {
	if in.Busy() || len(in.Outputs()) == 0 {
		return
	}
	var em *llm.Model
	if m := p.llmFor(in, in.Outputs()[0].S.Model); m != nil {
		em = m.Model
	}
	if end := in.OutputStep(now, em, func(o output) { p.stamp(now, o, out) }); end != dataplane.Never {
		out.SetTimer(end, outputStepKey(in.ID))
	}
}

// outputStepDone ends in's output-only step at now, unless a real step took over, and starts
// the next while outputs remain.
func (p *Policy) outputStepDone(now dataplane.Time, in *instance, out *dataplane.Decisions) {
	if in.EndOutputStep(now, func(o output) { p.stamp(now, o, out) }) {
		p.noteShown(in)
		p.outputStep(now, in, out)
	}
}

// stamp delivers an output at now: the first token (TTFT, Decisions.FirstToken) and the
// completion (TPOT = (done − first token)/(out − 1), LLM engine digest §3).
func (p *Policy) stamp(now dataplane.Time, o output, out *dataplane.Decisions) {
	s := o.S
	if o.First && p.disagg {
		if x := ext(s); x.out > 0 && !x.decode {
			p.prefilled(now, s, out) // its prefill instance computed its first token
			return
		}
	}
	if o.First && s.TTFT == 0 {
		s.TTFT = now - s.Arrival
		p.stats.TTFT[s.ID] = s.TTFT
		out.FirstToken(s.ID, now)
	}
	if o.Last {
		if s.Inst >= 0 && s.Inst < len(p.inst) {
			p.stats.Served[s.ID] = p.inst[s.Inst].gpu
		}
		if s.Out > 1 {
			p.stats.TPOT[s.ID] = (now - s.Arrival - s.TTFT) / dataplane.Time(s.Out-1)
		}
		if s.Cached > 0 {
			p.stats.Cached[s.ID] = s.Cached
		}
		if s.Preemptions > 0 {
			p.stats.Preempted[s.ID] = s.Preemptions
		}
		p.delSeq(s.ID) // the table holds the sequences in flight (dropExpired reads it)
		out.Complete(s.ID, 0)
	}
}
