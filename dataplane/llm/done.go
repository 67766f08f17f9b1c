package llm

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// Output is a token computed but not yet at its client: a first token, a last one, or both.
type Output struct {
	S           *Seq
	First, Last bool
	// left is the steps still to end before it is stamped.
	left int
}

// Done applies the iteration in flight at its end time now: outputs whose delay ended are
// emitted first; every sequence's computed tokens grow by what the step computed; one that
// computed all it needed produces a token (its first, or its last), emitted now when m has no
// output delay, else queued for the delay (digest §2.5). Finished sequences leave the
// running batch and free their blocks now (release same_step) or after one more step
// (next_step: V0's async output processing and V1's async scheduling free them one step
// later, llm-engine-2 §1). m may be nil (the model was switched away): outputs are then
// emitted at once. Sequences of the iteration the owner withdrew (Abort) are gone already.
func (e *Engine) Done(now dataplane.Time, m *Model, emit func(Output)) {
	e.ver++
	e.ReleaseOutputs(now, false, emit)
	for _, s := range e.iter {
		if s.Fin {
			// Finished in the step before (release next_step): this was its extra step.
			s.Sched, s.freeNow = 0, true
			continue
		}
		if s.spec && m != nil {
			s.specDone(m)
		} else {
			s.Comp += s.Sched
		}
		s.Sched = 0
		if s.Comp < s.Prompt+s.Gen {
			continue // mid-prompt: a chunk
		}
		s.Gen++
		first, last := s.Gen == 1, s.Gen >= s.Out
		if last {
			s.Fin = true
		}
		if first || last {
			o := Output{S: s, First: first, Last: last}
			delay := 0
			if m != nil {
				delay = m.OutDelay
				if last && m.Release == formats.ReleaseNextStep {
					// The finished request runs one more step before its stop is processed
					// (V0's async output processing: "an extra decode run is done to process
					// the final tokens", llm-engine-2 §1): it completes no earlier than then.
					delay = max(delay, 1)
				}
			}
			if delay == 0 {
				emit(o)
			} else {
				o.left = delay
				e.outq = append(e.outq, o)
			}
		}
	}
	lag := m != nil && m.Release == formats.ReleaseNextStep
	fin := e.sch.Finish
	// The batch keeps its order; a sequence moves down only once one before it has left, so
	// a step that finishes none writes no pointer (each write pays the collector's barrier
	// while it marks: 2% of an LLM deployment search's CPU).
	n := 0
	for i, s := range e.running {
		if s.Fin && (!lag || s.freeNow) {
			e.unhold(s)
			s.KV = 0
			if fin != nil {
				fin.Finished(e, s)
			}
			continue
		}
		if n != i {
			e.running[n] = s
		}
		n++
	}
	clear(e.running[n:])
	e.running = e.running[:n]
	e.iter = e.iter[:0]
	e.busy = false
}

// ReleaseOutputs counts one more step ended for the outputs in flight and emits those due
// (all of them when all: the instance went idle or down, nothing delays its output).
func (e *Engine) ReleaseOutputs(now dataplane.Time, all bool, emit func(Output)) {
	keep := e.outq[:0]
	for _, o := range e.outq {
		o.left--
		if all || o.left <= 0 {
			emit(o)
			continue
		}
		keep = append(keep, o)
	}
	clear(e.outq[len(keep):])
	e.outq = keep
}

// DropOutputs forgets s's outputs in flight (its request was cancelled).
func (e *Engine) DropOutputs(s *Seq) {
	keep := e.outq[:0]
	for _, o := range e.outq {
		if o.S != s {
			keep = append(keep, o)
		}
	}
	clear(e.outq[len(keep):])
	e.outq = keep
}

// Preempt takes victim v out of the running batch (digest §2.3, llm-engine-2 §1): a KV swap
// to CPU memory when allowed (allowSwap, or the engine's swap settings) and it pays under
// m's mode, else recompute: its blocks are freed, its generated tokens kept, and the
// scheduler requeues it to compute prompt + generated again. Each is one preemption event.
// A sequence that finished and only waits for its blocks to free (release next_step) just
// frees them.
//
// sch requeues v: the engine's own (Scheduler(), its hooks resolved already) or, for a queue
// that preempts for its own head (Preemptor), that queue, whose Finisher is then looked up
// here, once per preemption rather than per step.
func (e *Engine) Preempt(v *Seq, m *Model, sch Scheduler, allowSwap bool) {
	if h, ok := sch.(*Hooks); ok {
		e.preempt(v, m, h.Scheduler, h.Finish, allowSwap)
		return
	}
	fin, _ := sch.(Finisher)
	e.preempt(v, m, sch, fin, allowSwap)
}

// preempt is Preempt with sch's Finisher resolved (nil: none).
func (e *Engine) preempt(v *Seq, m *Model, sch Scheduler, fin Finisher, allowSwap bool) {
	e.ver++
	for i, s := range e.running {
		if s == v {
			e.running = append(e.running[:i], e.running[i+1:]...)
			break
		}
	}
	e.unhold(v)
	v.Sched, v.spec = 0, false
	if v.Fin {
		v.KV = 0
		if fin != nil {
			fin.Finished(e, v)
		}
		return
	}
	c := e.counters()
	c.Preemptions.Add(1)
	v.Preemptions++
	if v.Preemptions == 1 {
		c.PreemptedReqs++
	}
	bytes := m.KVBytesHeld(v.KV)
	swap := false
	if (allowSwap || m.SwapAlways) && !v.Prefilling() {
		switch m.Preempt {
		case "swap":
			swap = e.cpuUsed+bytes <= m.CPUSwap
		case "auto":
			swap = e.cpuUsed+bytes <= m.CPUSwap && 2*float64(bytes)/m.HostBytesPerUs < float64(m.PrefillUs(v.Ctx()))
		}
	}
	if swap {
		e.cpuUsed += bytes
		v.swapBytes = bytes
		v.Swapped = true
		e.swapped = append(e.swapped, v)
		c.KVSwaps++
		return
	}
	v.KV, v.Comp = 0, 0
	c.Evictions++
	sch.Requeue(e, v)
}

// Abort takes s out of the running batch, the iteration in flight or the swapped set and
// frees its KV, on the GPU or in CPU memory (the bytes it was swapped out with, so also
// when the engine no longer runs s's model); false when the engine holds none of it. vLLM
// aborts a request whose client disconnected (digest §4): what it held is free at once.
func (e *Engine) Abort(s *Seq) bool {
	e.ver++
	found := false
	for i, x := range e.running {
		if x == s {
			e.running = append(e.running[:i], e.running[i+1:]...)
			e.unhold(s)
			found = true
			break
		}
	}
	for i, x := range e.iter {
		if x == s {
			e.iter = append(e.iter[:i], e.iter[i+1:]...)
			break
		}
	}
	if !found {
		for i, x := range e.swapped {
			if x == s {
				e.swapped = append(e.swapped[:i], e.swapped[i+1:]...)
				e.cpuUsed -= s.swapBytes
				found = true
				break
			}
		}
	}
	if !found {
		return false
	}
	s.KV, s.Swapped, s.swapBytes, s.Comp, s.Sched, s.spec = 0, false, 0, 0, 0, false
	return true
}

// Reset empties the engine (its instance failed): running and swapped sequences lose their
// KV and computed tokens, keep what they generated, and are returned in that order for the
// owner to queue again (QLM §5's eviction).
func (e *Engine) Reset() []*Seq {
	e.ver++
	orphans := append(append([]*Seq(nil), e.running...), e.swapped...)
	e.running, e.swapped, e.iter = nil, nil, nil
	e.kvUsed, e.cpuUsed = 0, 0
	e.apc = nil // the instance's GPU memory, its cached blocks with it, is gone
	e.busy = false
	for _, s := range orphans {
		s.KV, s.Comp, s.Sched, s.Swapped, s.swapBytes, s.ReadyAt, s.Inst, s.spec = 0, 0, 0, false, 0, 0, -1, false
	}
	return orphans
}
