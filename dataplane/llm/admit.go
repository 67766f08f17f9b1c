package llm

import (
	"github.com/plan-dev/plan/dataplane"
)

// Admission at the door: would a request arriving now at engine e finish within its SLO?
// Serve's OpenAI front end and the simulator both drive QLM's policy, which asks Predict at
// every arrival (dataplane/qlm, admit.go), so a refusal is one decision, made once, from the
// same state in both clocks.
//
// The prediction replays the engine's own rules (LLM engine digest §2) on an abstract copy of
// its state, a step per prefill chunk and one jump per completion in between:
//
//   - the running sequences (prompt chunks left, output tokens left, context), then the
//     swapped-out ones and the waiting ones ahead, in queue order, then the new request;
//   - a waiting sequence joins the batch while a sequence slot (max_num_seqs) is free and the
//     KV cache holds its whole context at its last token (prompt + output, in whole blocks):
//     the peak every admitted sequence reaches, so the replay never needs a preemption, which
//     would only make the true completion later (llm-engine-2 §1);
//   - a step with prompt tokens to compute takes them in admission order under the token
//     budget (max_num_batched_tokens) beside one token per decoding sequence, and lasts
//     Model.StepUs (the one piecewise-linear lookup the engine uses); a prompt whose last
//     chunk is computed yields its first token;
//   - between two events (a completion, a prefill) the batch is fixed, so its decode steps
//     all last StepUs of that batch at its mean context: the replay jumps to the next
//     completion in one go;
//   - every token reaches its client OutDelay steps after it was computed (digest §2.5).
//
// [ours] Speculative decoding, prefix caching and a model switch are left out: each makes the
// true completion earlier (the first two) or is refused by placement (the third), so the
// prediction errs towards refusing. Its cost is linear in the requests ahead times the batch.

// Prediction is when a request arriving now would see its first token (TTFT) and its last
// (E2E), as durations from now, at an engine in its current state.
type Prediction struct {
	TTFT, E2E dataplane.Time
}

// Verdict is the admission decision on a Prediction against the request's SLOs.
type Verdict struct {
	Prediction
	// Late: the request would finish after its SLO (or see its first token after its TTFT
	// SLO): refuse it at the door.
	Late bool
	// Wait is how much later it would have to arrive to fit: the engine drains the work ahead
	// meanwhile, so a request arriving Wait later finishes Wait sooner after its arrival
	// (with no other arrival in between). 0 when it fits.
	Wait dataplane.Time
}

// RetryAfter is the Retry-After header's value for a late verdict: the predicted wait in
// whole seconds, rounded up, at least 1 (RFC 9110 §10.2.3: a delay in seconds).
func RetryAfter(wait dataplane.Time) int64 {
	return max(1, (int64(wait)+int64(dataplane.Second)-1)/int64(dataplane.Second))
}

// Arrival is the request Judge and Predict consider: its prompt and output tokens, its
// end-to-end SLO and TTFT SLO (0: none), and which of the engine's running or swapped
// sequences would give way to it (Yields; nil: none): a scheduler that preempts for an
// earlier deadline (QLM §5 eviction, EDF) runs the arrival before them.
type Arrival struct {
	Prompt, Out  int
	SLO, TTFTSLO dataplane.Time
	Yields       func(*Seq) bool
}

// Judge is the verdict on request a arriving now at engine e of model m, queued behind
// waiting (the swapped-out sequences of e come first by the engine's rule).
func Judge(m *Model, e *Engine, waiting []*Seq, a Arrival) Verdict {
	p := Predict(m, e, waiting, a)
	v := Verdict{Prediction: p}
	if a.SLO > 0 && p.E2E > a.SLO {
		v.Wait = p.E2E - a.SLO
	}
	if a.TTFTSLO > 0 && p.TTFT > a.TTFTSLO {
		v.Wait = max(v.Wait, p.TTFT-a.TTFTSLO)
	}
	v.Late = v.Wait > 0
	return v
}

// pseq is a sequence in Predict's abstract replay.
type pseq struct {
	need    int // prompt (or recomputed) tokens still to compute
	left    int // output tokens still to generate
	ctx     int // tokens its KV holds
	reserve int // KV it holds at its peak, in tokens of whole blocks
	isNew   bool
}

// Predict replays engine e of model m (see the rules above) with waiting queued after its
// running and swapped sequences (less those that yield to a) and request a last, and returns
// when a's first and last tokens would reach its client, from now.
func Predict(m *Model, e *Engine, waiting []*Seq, a Arrival) Prediction {
	prompt, out := a.Prompt, a.Out
	yields := func(s *Seq) bool { return a.Yields != nil && a.Yields(s) }
	peak := func(p, o int) int { return m.Blocks(p + o) }
	var run []pseq
	used := 0
	for _, s := range e.Running {
		if s.Fin || yields(s) {
			continue // its last token is computed (only the output delay is left), or it gives way
		}
		// The step in flight (Sched) counts as done; a sequence whose computed tokens then
		// reach its context has yielded that step's token.
		comp, gen := s.Comp+s.Sched, s.Gen
		if s.Sched > 0 && comp >= s.Prompt+s.Gen {
			gen++
		}
		r := pseq{left: s.Out - gen, ctx: comp}
		if comp < s.Prompt+gen-1 {
			r.need = s.Prompt + gen - comp // mid-prompt (or recomputing): the rest, then a token
		}
		if r.left <= 0 {
			continue
		}
		r.reserve = max(s.KV, peak(s.Prompt, s.Out))
		used += r.reserve
		run = append(run, r)
	}
	queue := make([]pseq, 0, len(e.Swapped)+len(waiting)+1)
	for g, group := range [][]*Seq{e.Swapped, waiting} {
		for _, s := range group {
			if s.Fin || (g == 0 && yields(s)) {
				continue
			}
			need := s.Prompt + s.Gen
			if s.Swapped {
				need = 0 // its KV comes back whole: decode resumes
			}
			queue = append(queue, pseq{need: need, left: max(s.Out-s.Gen, 1), ctx: s.Prompt + s.Gen - need, reserve: peak(s.Prompt, s.Out)})
		}
	}
	queue = append(queue, pseq{need: prompt, left: max(out, 1), reserve: peak(prompt, out), isNew: true})

	var t, last dataplane.Time
	first := dataplane.Never
	delay := func() dataplane.Time { return dataplane.Time(m.OutDelay) * last }
	for {
		// Admission: queue order, head-of-line, a slot and the peak KV free. A batch that
		// holds nothing admits its head whatever its size (Refuses turned away what never fits).
		for len(queue) > 0 && len(run) < m.MaxSeqs && (len(run) == 0 || used+queue[0].reserve <= m.KVCap) {
			used += queue[0].reserve
			run = append(run, queue[0])
			queue = queue[1:]
		}
		if len(run) == 0 {
			return Prediction{TTFT: first, E2E: first} // unreachable: the new request is queued
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
			if run[i].need > 0 && budget > 0 {
				prefill += min(run[i].need, budget)
				budget -= min(run[i].need, budget)
			}
		}
		if prefill > 0 {
			// One step: the chunks in admission order beside one token per decode.
			d := m.StepUs(decodes+prefill, prefill, ctx+decodes+prefill)
			t, last = t+d, d
			budget = m.MaxBatched - decodes
			for i := range run {
				r := &run[i]
				if r.need == 0 {
					r.left--
					r.ctx++
					continue
				}
				if budget <= 0 {
					continue
				}
				c := min(r.need, budget)
				budget -= c
				r.need -= c
				r.ctx += c
				if r.need == 0 {
					r.left-- // its prompt is computed: its (first) token comes with it
					if r.isNew && first == dataplane.Never {
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
			d := m.StepUs(n, 0, ctx+n*(k+1)/2) // the mean context over the k steps
			t, last = t+dataplane.Time(k)*d, d
			for i := range run {
				run[i].left -= k
				run[i].ctx += k
			}
		}
		kept := run[:0]
		for _, r := range run {
			if r.left > 0 {
				kept = append(kept, r)
				continue
			}
			used -= r.reserve
			if r.isNew {
				return Prediction{TTFT: first + delay(), E2E: t + delay()}
			}
		}
		run = kept
	}
}
