package llm

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// The reference judge: the full replay as first written (every arrival replays the whole
// queue, twice when a sequence ahead finishes late), kept to check the fast path against
// (admit_fast_test.go). Its code is the original's, renamed.

// refJudge is the verdict on request a arriving at engine e of model m, queued behind waiting
// (the swapped-out sequences of e come first by the engine's rule).
func refJudge(m *Model, e *Engine, waiting []*Seq, a Arrival) Verdict {
	r := refNewReplay(m, e, waiting, a)
	p, with := r.run(m, true)
	v := Verdict{Prediction: p}
	slo := a.SLO
	if slo > 0 && a.Headroom > 0 {
		slo -= dataplane.Time(math.Round(a.Headroom * float64(slo)))
	}
	if slo > 0 && p.E2E > slo {
		v.Wait = p.E2E - slo
	}
	if a.TTFTSLO > 0 && p.TTFT > a.TTFTSLO {
		v.Wait = max(v.Wait, p.TTFT-a.TTFTSLO)
	}
	late := false
	for i, d := range with {
		late = late || (r.due[i] != dataplane.Never && d > r.due[i])
	}
	if late {
		// Someone ahead finishes late with the newcomer: was it on time without it?
		_, without := r.run(m, false)
		for i, d := range with {
			due := r.due[i]
			if a.Guarded && r.slo[i] < a.SLO && due+p.E2E <= slo {
				continue // the guard holds the arrival back until i is done, and it is still on time
			}
			if due != dataplane.Never && d > due && without[i] <= due {
				// It fits once the sequence it would make late is done.
				v.Harms++
				v.Wait = max(v.Wait, without[i])
			}
		}
	}
	v.Late = v.Wait > 0
	return v
}

// refPseq is a sequence in the abstract replay.
type refPseq struct {
	need    int // prompt (or recomputed) tokens still to compute before its next token
	left    int // output tokens still to generate
	ctx     int // tokens its KV holds
	reserve int // KV it holds at its peak, in tokens of whole blocks
	idx     int // its index in replay.due (-1: the newcomer)
}

// refReplay is the engine's state as Predict reads it: the running sequences, the queue (the
// swapped-out ones, the waiting ones, then the newcomer last) and each one's deadline from
// now (due, indexed by refPseq.idx; Never: none).
type refReplay struct {
	running, queue []refPseq
	due            []dataplane.Time
	slo            []dataplane.Time // each one's whole SLO (Never: none)
	busy           dataplane.Time
	pace           float64
}

func refNewReplay(m *Model, e *Engine, waiting []*Seq, a Arrival) *refReplay {
	yields := func(s *Seq) bool { return a.Yields != nil && a.Yields(s) }
	peak := func(p, o int) int { return m.Blocks(p + o) }
	r := &refReplay{busy: a.Busy, pace: a.Pace}
	add := func(s *Seq) int {
		d, full := dataplane.Never, dataplane.Never
		if s.Deadline > 0 {
			full = s.Deadline - s.Arrival
			d = s.Deadline - a.Now - dataplane.Time(math.Round(a.Headroom*float64(full)))
		}
		r.due = append(r.due, d)
		r.slo = append(r.slo, full)
		return len(r.due) - 1
	}
	for _, s := range e.running {
		if s.Fin || yields(s) {
			continue // its last token is computed (only the output delay is left), or it gives way
		}
		// The step in flight (Sched) counts as done; a sequence whose computed tokens then
		// reach its context has yielded that step's token.
		comp, gen := s.Comp+s.Sched, s.Gen
		if s.Sched > 0 && comp >= s.Prompt+s.Gen {
			gen++
		}
		p := refPseq{left: s.Out - gen, ctx: comp}
		if comp < s.Prompt+gen-1 {
			p.need = s.Prompt + gen - comp // mid-prompt (or recomputing): the rest, then a token
		}
		if p.left <= 0 {
			continue
		}
		p.reserve = max(s.KV, peak(s.Prompt, s.Out))
		p.idx = add(s)
		r.running = append(r.running, p)
	}
	for g, group := range [][]*Seq{e.swapped, waiting} {
		for _, s := range group {
			if s.Fin || (g == 0 && yields(s)) {
				continue
			}
			need := s.Prompt + s.Gen
			if s.Swapped {
				need = 0 // its KV comes back whole: decode resumes
			}
			r.queue = append(r.queue, refPseq{need: need, left: max(s.Out-s.Gen, 1), ctx: s.Prompt + s.Gen - need, reserve: peak(s.Prompt, s.Out), idx: add(s)})
		}
	}
	r.queue = append(r.queue, refPseq{need: a.Prompt, left: max(a.Out, 1), reserve: peak(a.Prompt, a.Out), idx: -1})
	return r
}

// run replays the engine (the rules above), with the newcomer or without, and returns its
// prediction (with it) and when each other sequence's last token reaches its client
// (indexed as due).
func (r *refReplay) run(m *Model, withNew bool) (Prediction, []dataplane.Time) {
	run := append([]refPseq(nil), r.running...)
	queue := r.queue
	if !withNew {
		queue = queue[:len(queue)-1]
	}
	queue = append([]refPseq(nil), queue...)
	done := make([]dataplane.Time, len(r.due))
	used := 0
	for _, p := range run {
		used += p.reserve
	}
	t, last := r.busy, dataplane.Time(0)
	first := dataplane.Never
	var pred Prediction
	delay := func() dataplane.Time { return dataplane.Time(m.OutDelay) * last }
	step := func(tokens, pre, ctx int) dataplane.Time {
		d := m.StepUs(tokens, pre, ctx)
		if r.pace > 1 {
			d = dataplane.Time(math.Round(float64(d) * r.pace))
		}
		return d
	}
	for len(run) > 0 || len(queue) > 0 {
		// Admission: queue order, head-of-line, a slot and the peak KV free. A batch that
		// holds nothing admits its head whatever its size (Refuses turned away what never fits).
		for len(queue) > 0 && len(run) < m.MaxSeqs && (len(run) == 0 || used+queue[0].reserve <= m.KVCap) {
			used += queue[0].reserve
			run = append(run, queue[0])
			queue = queue[1:]
		}
		prefill, decodes, ctx := 0, 0, 0
		for i := range run {
			ctx += run[i].ctx
			if run[i].need == 0 {
				decodes++
			}
		}
		budget := m.MaxBatched - decodes
		for i := range run {
			if c := min(run[i].need, budget); c > 0 {
				prefill += c
				budget -= c
			}
		}
		if prefill > 0 {
			// One step: the chunks in admission order beside one token per decode.
			d := step(decodes+prefill, prefill, ctx+decodes+prefill)
			t, last = t+d, d
			budget = m.MaxBatched - decodes
			for i := range run {
				p := &run[i]
				if p.need == 0 {
					p.left--
					p.ctx++
					continue
				}
				c := min(p.need, budget)
				if c <= 0 {
					continue
				}
				budget -= c
				p.need -= c
				p.ctx += c
				if p.need == 0 {
					p.left-- // its prompt is computed: its (first) token comes with it
					if p.idx < 0 && first == dataplane.Never {
						first = t
					}
				}
			}
		} else {
			// Decode only until the next completion: k steps of this batch.
			k := run[0].left
			for i := range run {
				k = min(k, run[i].left)
			}
			n := len(run)
			d := step(n, 0, ctx+n*(k+1)/2) // the mean context over the k steps
			t, last = t+dataplane.Time(k)*d, d
			for i := range run {
				run[i].left -= k
				run[i].ctx += k
			}
		}
		kept := run[:0]
		for _, p := range run {
			if p.left > 0 {
				kept = append(kept, p)
				continue
			}
			used -= p.reserve
			if p.idx < 0 {
				pred = Prediction{TTFT: first + delay(), E2E: t + delay()}
			} else {
				done[p.idx] = t + delay()
			}
		}
		run = kept
	}
	return pred, done
}
