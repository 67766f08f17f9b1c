package llm

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// Admission at the door: would a request arriving now at engine e finish within its SLO, and
// would the requests already admitted still finish within theirs? Serve's OpenAI front end
// and the simulator both drive QLM's policy, which asks Judge at every arrival
// (dataplane/qlm, admit.go), so a refusal is one decision, made once, from the same state in
// both clocks.
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
// A new request costs the others: its prompt's steps are prefill steps for every running
// sequence (digest §2.4: a chunk of 4,096 tokens can take a hundred decode steps' time), so
// under sustained overload each admission pushes the batch's completions later, and a door
// that looked only at the newcomer admitted requests that all finished late. Judge therefore
// replays twice, with the newcomer and without, and refuses it also when a sequence ahead of
// it that would finish in time without it finishes late with it: what the door admitted stays
// on time as long as the prediction holds.
//
// [ours] Speculative decoding, prefix caching and a model switch are left out: each makes the
// true completion earlier (the first two) or is refused by placement (the third), so the
// prediction errs towards refusing. Arrivals after the newcomer are not foreseen: each is
// judged in turn. The cost is linear in the requests ahead times the batch.

// Prediction is when a request arriving now would see its first token (TTFT) and its last
// (E2E), as durations from now, at an engine in its current state.
type Prediction struct {
	TTFT, E2E dataplane.Time
}

// Verdict is the admission decision on a request.
type Verdict struct {
	Prediction
	// Late: the request would finish after its SLO (or see its first token after its TTFT
	// SLO), or would make a sequence ahead of it late that is on time without it (Harms
	// counts those): refuse it at the door.
	Late  bool
	Harms int
	// Wait is how much later it would have to arrive to fit: the engine drains the work ahead
	// meanwhile, so a request arriving Wait later finishes about Wait sooner after its
	// arrival (with no other arrival in between); when it would make a sequence ahead late,
	// at least until that sequence is predicted done. 0 when it fits.
	Wait dataplane.Time
}

// RetryAfter is the Retry-After header's value for a late verdict: the predicted wait in
// whole seconds, rounded up, at least 1 (RFC 9110 §10.2.3: a delay in seconds).
func RetryAfter(wait dataplane.Time) int64 {
	return max(1, (int64(wait)+int64(dataplane.Second)-1)/int64(dataplane.Second))
}

// Arrival is the request Judge and Predict consider: its prompt and output tokens, its
// end-to-end SLO and TTFT SLO (0: none), the time it arrives (the sequences' deadlines are
// read against it), and which of the engine's running or swapped sequences would give way
// to it (Yields; nil: none): a scheduler that preempts for an earlier deadline (QLM §5
// eviction, EDF) runs the arrival before them, and their lateness is not counted against it.
type Arrival struct {
	Prompt, Out  int
	SLO, TTFTSLO dataplane.Time
	Now          dataplane.Time
	Yields       func(*Seq) bool
	// Busy is how long the engine's iteration in flight still runs (0: idle): the replay
	// starts when it ends, with its tokens computed.
	Busy dataplane.Time
	// Pace scales every step's profiled time (≤ 1: as profiled): the ratio of the engine's
	// observed step times to its profile's, when a wall-clock engine runs slower than the
	// profile says.
	Pace float64
	// Headroom is the share of each request's SLO the prediction keeps free (0: none): a
	// request is on time when predicted to finish within (1 − Headroom) of its SLO. The
	// door packs admissions until the earliest admitted has no slack left, so a wall-clock
	// server's scheduling delays (a loaded machine) would make it late without some.
	Headroom float64
	// Guarded: the scheduler holds a waiting request back while admitting it would make a
	// running one of a tighter SLO late (QLM §5's deadline guard). Such a sequence is not
	// counted as harmed when the arrival's own SLO leaves room to wait for it. Requests of
	// one SLO are not held back for each other (the guard admits below the batch's decode
	// knee), so harm among them always counts.
	Guarded bool
}

// Judge is the verdict on request a arriving at engine e of model m, queued behind waiting
// (the swapped-out sequences of e come first by the engine's rule).
func Judge(m *Model, e *Engine, waiting []*Seq, a Arrival) Verdict {
	r := newReplay(m, e, waiting, a)
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

// Predict is when request a's first and last tokens would reach its client, from now, at
// engine e of model m with waiting queued after its running and swapped sequences (less
// those that yield to a).
func Predict(m *Model, e *Engine, waiting []*Seq, a Arrival) Prediction {
	p, _ := newReplay(m, e, waiting, a).run(m, true)
	return p
}

// pseq is a sequence in the abstract replay.
type pseq struct {
	need    int // prompt (or recomputed) tokens still to compute before its next token
	left    int // output tokens still to generate
	ctx     int // tokens its KV holds
	reserve int // KV it holds at its peak, in tokens of whole blocks
	idx     int // its index in replay.due (-1: the newcomer)
}

// replay is the engine's state as Predict reads it: the running sequences, the queue (the
// swapped-out ones, the waiting ones, then the newcomer last) and each one's deadline from
// now (due, indexed by pseq.idx; Never: none).
type replay struct {
	running, queue []pseq
	due            []dataplane.Time
	slo            []dataplane.Time // each one's whole SLO (Never: none)
	busy           dataplane.Time
	pace           float64
}

func newReplay(m *Model, e *Engine, waiting []*Seq, a Arrival) *replay {
	yields := func(s *Seq) bool { return a.Yields != nil && a.Yields(s) }
	peak := func(p, o int) int { return m.Blocks(p + o) }
	r := &replay{busy: a.Busy, pace: a.Pace}
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
		p := pseq{left: s.Out - gen, ctx: comp}
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
	for g, group := range [][]*Seq{e.Swapped, waiting} {
		for _, s := range group {
			if s.Fin || (g == 0 && yields(s)) {
				continue
			}
			need := s.Prompt + s.Gen
			if s.Swapped {
				need = 0 // its KV comes back whole: decode resumes
			}
			r.queue = append(r.queue, pseq{need: need, left: max(s.Out-s.Gen, 1), ctx: s.Prompt + s.Gen - need, reserve: peak(s.Prompt, s.Out), idx: add(s)})
		}
	}
	r.queue = append(r.queue, pseq{need: a.Prompt, left: max(a.Out, 1), reserve: peak(a.Prompt, a.Out), idx: -1})
	return r
}

// run replays the engine (the rules above), with the newcomer or without, and returns its
// prediction (with it) and when each other sequence's last token reaches its client
// (indexed as due).
func (r *replay) run(m *Model, withNew bool) (Prediction, []dataplane.Time) {
	run := append([]pseq(nil), r.running...)
	queue := r.queue
	if !withNew {
		queue = queue[:len(queue)-1]
	}
	queue = append([]pseq(nil), queue...)
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
