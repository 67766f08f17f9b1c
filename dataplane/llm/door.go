package llm

import (
	"cmp"
	"math"
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// Door is Judge with a memory: it keeps, for the engine it last judged at, the replay of that
// engine's state up to the admission of the last request queued (the checkpoint), and judges
// an arrival from there. Until the arrival's request is admitted, the replay with it and the
// one without it are the same (it is queued last), so only the tail after the checkpoint
// differs between them: the batch the newcomer joins, at most max_num_seqs sequences.
//
// The checkpoint holds while the engine has not moved (Engine.ver: no step, completion,
// preemption or abort since) and the same sequences give way (Arrival.Yields); a queue that
// grew at its end (the requests the door admitted since) extends it from where it stood. So
// a burst of arrivals between two steps replays the queue once per step, not once per
// arrival. Anything else (another engine, model, pace, headroom, a queue reordered) replays
// from the start. The zero Door is ready; it is not safe for concurrent use.
type Door struct {
	ok             bool
	m              *Model
	e              *Engine
	ver            uint64
	pace, headroom float64
	// fixed are the running and swapped sequences replayed (those that do not give way),
	// waiting the queue replayed after them.
	fixed, waiting []*Seq
	// dueAt is each replayed sequence's deadline less its headroom (Never: none), slo its
	// whole SLO, indexed by pseq.idx: Judge reads them against the arrival's now.
	dueAt, slo []dataplane.Time
	// cp is the replay when the last of the queue has just joined the batch.
	cp rstate
	// wo is when each sequence in the batch at cp finishes without a newcomer (woOK: for
	// the current cp), indexed as dueAt.
	wo   []dataplane.Time
	woOK bool
	// Scratch reused between calls.
	st   rstate
	tail []doneAt
	q    []pseq
}

// doneAt is a sequence's completion in the replay: when its last token reaches its client,
// from the replay's start.
type doneAt struct {
	idx int
	at  dataplane.Time
}

// Judge is the verdict on request a arriving at engine e of model m, queued behind waiting
// (the swapped-out sequences of e come first by the engine's rule): Judge's, from the
// checkpoint when it holds.
func (d *Door) Judge(m *Model, e *Engine, waiting []*Seq, a Arrival) Verdict {
	d.sync(m, e, waiting, a)
	p, tail := d.with(m, a)
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
	// Only the sequences finishing after the checkpoint can be made late: the replay with
	// the newcomer is the one without it until then.
	late := false
	for _, c := range tail {
		due := d.due(c.idx, a.Now)
		late = late || (due != dataplane.Never && a.Busy+c.at > due)
	}
	if late {
		// Someone ahead finishes late with the newcomer: was it on time without it?
		wo := d.without(m)
		for _, c := range tail {
			due, with, without := d.due(c.idx, a.Now), a.Busy+c.at, a.Busy+wo[c.idx]
			if a.Guarded && d.slo[c.idx] < a.SLO && due+p.E2E <= slo {
				continue // the guard holds the arrival back until it is done, and it is still on time
			}
			if due != dataplane.Never && with > due && without <= due {
				// It fits once the sequence it would make late is done.
				v.Harms++
				v.Wait = max(v.Wait, without)
			}
		}
	}
	v.Late = v.Wait > 0
	return v
}

// due is sequence idx's deadline less its headroom, from now (Never: none).
func (d *Door) due(idx int, now dataplane.Time) dataplane.Time {
	if d.dueAt[idx] == dataplane.Never {
		return dataplane.Never
	}
	return d.dueAt[idx] - now
}

// sync brings the checkpoint to engine e with waiting queued, as arrival a sees it.
func (d *Door) sync(m *Model, e *Engine, waiting []*Seq, a Arrival) {
	if d.ok && d.m == m && d.e == e && d.ver == e.ver && d.pace == a.Pace && d.headroom == a.Headroom &&
		len(waiting) >= len(d.waiting) && d.sameFixed(e, a) && samePtrs(waiting[:len(d.waiting)], d.waiting) {
		if extra := waiting[len(d.waiting):]; len(extra) > 0 {
			// Requests queued since (those the door admitted): they join the replay's queue
			// at its end, after everything the checkpoint admitted.
			q := d.q[:0]
			for _, s := range extra {
				if p, ok := d.queued(m, s, false, a); ok {
					q = append(q, p)
				}
			}
			d.q = q
			d.cp.advance(m, d.pace, q, true, nil)
			d.waiting = append(d.waiting, extra...)
			d.woOK = false
		}
		return
	}
	d.ok, d.m, d.e, d.ver, d.pace, d.headroom, d.woOK = true, m, e, e.ver, a.Pace, a.Headroom, false
	d.fixed, d.waiting = d.fixed[:0], append(d.waiting[:0], waiting...)
	d.dueAt, d.slo = d.dueAt[:0], d.slo[:0]
	d.cp.reset()
	for _, s := range e.running {
		if p, ok := d.running(m, s, a); ok {
			p.idx = d.add(s, a)
			d.fixed = append(d.fixed, s)
			d.cp.admit(p, true)
		}
	}
	d.cp.sortDec()
	q := d.q[:0]
	for g, group := range [][]*Seq{e.swapped, waiting} {
		for _, s := range group {
			if p, ok := d.queued(m, s, g == 0, a); ok {
				if g == 0 {
					d.fixed = append(d.fixed, s)
				}
				q = append(q, p)
			}
		}
	}
	d.q = q
	d.cp.advance(m, d.pace, q, true, nil)
}

// Version counts the calls that changed the engine's batch or its sequences (Step, Done,
// Preempt, Abort, Reset): an owner's memo of what it read of them holds while it stands.
func (e *Engine) Version() uint64 { return e.ver }

// yields: s gives way to the arrival.
func yields(a Arrival, s *Seq) bool { return a.Yields != nil && a.Yields(s) }

// running is running sequence s as the replay starts it (false: left out).
func (d *Door) running(m *Model, s *Seq, a Arrival) (pseq, bool) {
	if s.Fin || yields(a, s) {
		return pseq{}, false // its last token is computed (only the output delay is left), or it gives way
	}
	// The step in flight (Sched) counts as done; a sequence whose computed tokens then reach
	// its context has yielded that step's token.
	comp, gen := s.Comp+s.Sched, s.Gen
	if s.Sched > 0 && comp >= s.Prompt+s.Gen {
		gen++
	}
	p := pseq{left: s.Out - gen, ctx: comp}
	if comp < s.Prompt+gen-1 {
		p.need = s.Prompt + gen - comp // mid-prompt (or recomputing): the rest, then a token
	}
	if p.left <= 0 {
		return pseq{}, false
	}
	p.reserve = max(s.KV, m.Blocks(s.Prompt+s.Out))
	return p, true
}

// queued is swapped-out (swapped) or waiting sequence s as the replay queues it, with its
// index (false: left out).
func (d *Door) queued(m *Model, s *Seq, swapped bool, a Arrival) (pseq, bool) {
	if s.Fin || (swapped && yields(a, s)) {
		return pseq{}, false
	}
	need := s.Prompt + s.Gen
	if s.Swapped {
		need = 0 // its KV comes back whole: decode resumes
	}
	return pseq{need: need, left: max(s.Out-s.Gen, 1), ctx: s.Prompt + s.Gen - need, reserve: m.Blocks(s.Prompt + s.Out), idx: d.add(s, a)}, true
}

// add indexes s's deadline and SLO.
func (d *Door) add(s *Seq, a Arrival) int {
	at, full := dataplane.Never, dataplane.Never
	if s.Deadline > 0 {
		full = s.Deadline - s.Arrival
		at = s.Deadline - dataplane.Time(math.Round(a.Headroom*float64(full)))
	}
	d.dueAt = append(d.dueAt, at)
	d.slo = append(d.slo, full)
	return len(d.dueAt) - 1
}

// sameFixed: the running and swapped sequences the checkpoint replayed are those a replays
// (with the engine unmoved, only which give way can differ).
func (d *Door) sameFixed(e *Engine, a Arrival) bool {
	i := 0
	for _, s := range e.running {
		if _, ok := d.running(d.m, s, a); ok {
			if i >= len(d.fixed) || d.fixed[i] != s {
				return false
			}
			i++
		}
	}
	for _, s := range e.swapped {
		if !s.Fin && !yields(a, s) {
			if i >= len(d.fixed) || d.fixed[i] != s {
				return false
			}
			i++
		}
	}
	return i == len(d.fixed)
}

func samePtrs(a, b []*Seq) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// with replays from the checkpoint with the newcomer queued and returns its prediction and
// the completions after the checkpoint (valid until the next call).
func (d *Door) with(m *Model, a Arrival) (Prediction, []doneAt) {
	d.st.copyFrom(&d.cp)
	d.tail = d.tail[:0]
	newcomer := pseq{need: a.Prompt, left: max(a.Out, 1), reserve: m.Blocks(a.Prompt + a.Out), idx: -1}
	var p Prediction
	d.st.advance(m, d.pace, []pseq{newcomer}, false, func(idx int, at, first, delay dataplane.Time) {
		if idx >= 0 {
			d.tail = append(d.tail, doneAt{idx, at})
			return
		}
		p.E2E = a.Busy + at
		if first == dataplane.Never {
			p.TTFT = first + delay
		} else {
			p.TTFT = a.Busy + first + delay
		}
	})
	return p, d.tail
}

// without is when each sequence in the batch at the checkpoint finishes with no newcomer,
// from the replay's start, indexed as dueAt.
func (d *Door) without(m *Model) []dataplane.Time {
	if !d.woOK {
		if len(d.wo) < len(d.dueAt) {
			d.wo = make([]dataplane.Time, len(d.dueAt))
		}
		d.st.copyFrom(&d.cp)
		d.st.advance(m, d.pace, nil, false, func(idx int, at, _, _ dataplane.Time) { d.wo[idx] = at })
		d.woOK = true
	}
	return d.wo
}

// pseq is a sequence in the abstract replay, queued or computing prompt tokens.
type pseq struct {
	need    int // prompt (or recomputed) tokens still to compute before its next token
	left    int // output tokens still to generate
	ctx     int // tokens its KV holds
	reserve int // KV it holds at its peak, in tokens of whole blocks
	idx     int // its index in Door.dueAt (-1: the newcomer)
}

// dseq is a decoding sequence of the replay's batch. Every decoding sequence computes one
// token per step, so the replay counts the decode steps (rstate.g) and each keeps the count
// at which it ends: its tokens left are end − g, its context ctx0 + g.
type dseq struct {
	end, ctx0, reserve, idx int
}

// rstate is the replay's batch at one instant: its decoding sequences (sorted by end from
// dec[head] on: completions leave at the front, and few join after the replay starts),
// those computing prompt tokens in admission order (a step's token budget goes to them in
// that order), the KV reserved, the context summed over the batch, and the time since the
// replay started (the iteration in flight not counted) with the last step's length.
type rstate struct {
	dec     []dseq
	head    int
	pre     []pseq
	g       int
	used    int
	ctx     int
	t, last dataplane.Time
	first   dataplane.Time // when the newcomer's prompt is computed (Never: not yet)
	// keys and tmp are sortDec's scratch.
	keys []uint64
	tmp  []dseq
	// loops counts advance's iterations: its work, which must follow the batch's changes
	// (admissions, completions, prompts done), not its steps (TestReplayWorkBounded).
	loops int
}

func (st *rstate) reset() {
	*st = rstate{dec: st.dec[:0], pre: st.pre[:0], first: dataplane.Never, keys: st.keys, tmp: st.tmp}
}

func (st *rstate) copyFrom(o *rstate) {
	dec, pre, keys, tmp := st.dec[:0], st.pre[:0], st.keys, st.tmp
	*st = *o
	st.dec, st.head, st.pre = append(dec, o.dec[o.head:]...), 0, append(pre, o.pre...)
	st.keys, st.tmp = keys, tmp
}

func (st *rstate) n() int { return len(st.dec) - st.head + len(st.pre) }

// decoding is how many of the batch decode.
func (st *rstate) decoding() int { return len(st.dec) - st.head }

// admit puts p in the batch; unsorted, the decoding ones are appended for a sort (sortDec).
func (st *rstate) admit(p pseq, unsorted bool) {
	st.used += p.reserve
	st.ctx += p.ctx
	switch {
	case p.need > 0:
		st.pre = append(st.pre, p)
	case unsorted:
		st.dec = append(st.dec, dseq{end: p.left + st.g, ctx0: p.ctx - st.g, reserve: p.reserve, idx: p.idx})
	default:
		st.push(dseq{end: p.left + st.g, ctx0: p.ctx - st.g, reserve: p.reserve, idx: p.idx})
	}
}

// sortDec orders the decoding sequences appended unsorted (the order of those ending
// together is immaterial: they complete at one instant). It sorts (end, position) pairs
// packed in integers, then places the sequences: half the time of sorting them by a
// comparison function at a batch of hundreds, at every arrival.
func (st *rstate) sortDec() {
	dec := st.dec[st.head:]
	keys := st.keys[:0]
	for i, x := range dec {
		if x.end < 0 || x.end >= 1<<31 {
			slices.SortFunc(dec, func(a, b dseq) int { return cmp.Compare(a.end, b.end) })
			return
		}
		keys = append(keys, uint64(x.end)<<32|uint64(i))
	}
	slices.Sort(keys)
	tmp := append(st.tmp[:0], dec...)
	for i, k := range keys {
		dec[i] = tmp[uint32(k)]
	}
	st.keys, st.tmp = keys, tmp
}

// push enters a decoding sequence in end order.
func (st *rstate) push(x dseq) {
	if st.head > 0 && st.head == len(st.dec) {
		st.dec, st.head = st.dec[:0], 0
	}
	i, _ := slices.BinarySearchFunc(st.dec[st.head:], x.end, func(d dseq, end int) int { return cmp.Compare(d.end, end+1) })
	st.dec = slices.Insert(st.dec, st.head+i, x)
}

// prefillRun advances k > 1 identical prefill steps at once, as the decode-only branch of
// advance does: while the first prompt in the batch takes the whole token budget left by the
// decodes (need > budget) and no decode completes, every step computes the same tokens, no
// one is admitted (the batch and its KV do not change) and only the context grows; k is
// their count. Stepping them through the whole batch made a small
// max_num_batched_tokens (16 tokens a step against 4,200-token prompts) cost need/budget
// iterations over the batch per queued prompt at every arrival's judgment: quadratic under
// overload; here a step is one step time. It
// reports false, changing nothing, when fewer than two such steps are ahead.
func (st *rstate) prefillRun(m *Model, step func(tokens, pre, ctx int) dataplane.Time) bool {
	decodes := st.decoding()
	budget := m.MaxBatched - decodes
	if len(st.pre) == 0 || budget <= 0 || st.pre[0].need <= budget {
		return false
	}
	k := (st.pre[0].need - 1) / budget // it still needs tokens after them
	if decodes > 0 {
		k = min(k, st.dec[st.head].end-st.g) // completions end the run
	}
	if k < 2 {
		return false
	}
	per := decodes + budget // tokens and context growth of each step
	// Each step timed at its own context, as one by one: a run split anywhere (a checkpoint,
	// a judgment from the start) sums to the same time.
	for range k {
		st.ctx += per
		d := step(per, budget, st.ctx)
		st.t, st.last = st.t+d, d
	}
	st.g += k
	st.pre[0].need -= k * budget
	st.pre[0].ctx += k * budget
	return true
}

// advance replays the engine from st with q queued (the rules of admit.go): until the last
// of q has joined the batch when stop (it then reports true), else until the batch is empty.
// done, when not nil, receives each completion: the sequence's index, when its last token
// reaches its client from the replay's start, and for the newcomer when its prompt was
// computed (Never: never) and the output delay then.
func (st *rstate) advance(m *Model, pace float64, q []pseq, stop bool, done func(idx int, at, first, delay dataplane.Time)) bool {
	if stop && len(q) == 0 {
		return true
	}
	step := func(tokens, pre, ctx int) dataplane.Time {
		d := m.StepUs(tokens, pre, ctx)
		if pace > 1 {
			d = dataplane.Time(math.Round(float64(d) * pace))
		}
		return d
	}
	finish := func(idx, ctx, reserve int) {
		st.used -= reserve
		st.ctx -= ctx
		if done != nil {
			delay := dataplane.Time(m.OutDelay) * st.last
			done(idx, st.t+delay, st.first, delay)
		}
	}
	for {
		st.loops++
		// Admission: queue order, head-of-line, a slot and the peak KV free. A batch that
		// holds nothing admits its head whatever its size (Refuses turned away what never fits).
		for len(q) > 0 && st.n() < m.MaxSeqs && (st.n() == 0 || st.used+q[0].reserve <= m.KVCap) {
			st.admit(q[0], false)
			q = q[1:]
			if stop && len(q) == 0 {
				return true
			}
		}
		if st.n() == 0 {
			return false
		}
		decodes := st.decoding()
		prefill, budget := 0, m.MaxBatched-decodes
		for i := 0; i < len(st.pre) && budget > 0; i++ {
			c := min(st.pre[i].need, budget)
			prefill += c
			budget -= c
		}
		if prefill > 0 && st.prefillRun(m, step) {
			// k identical steps at once (prefillRun); completions below.
		} else if prefill > 0 {
			// One step: the chunks in admission order beside one token per decode.
			d := step(decodes+prefill, prefill, st.ctx+decodes+prefill)
			st.t, st.last = st.t+d, d
			st.g++
			st.ctx += decodes
			budget = m.MaxBatched - decodes
			kept := st.pre[:0]
			for _, p := range st.pre {
				c := min(p.need, budget)
				if c <= 0 {
					kept = append(kept, p)
					continue
				}
				budget -= c
				p.need -= c
				p.ctx += c
				st.ctx += c
				if p.need > 0 {
					kept = append(kept, p)
					continue
				}
				p.left-- // its prompt is computed: its (first) token comes with it
				if p.idx < 0 && st.first == dataplane.Never {
					st.first = st.t
				}
				st.push(dseq{end: p.left + st.g, ctx0: p.ctx - st.g, reserve: p.reserve, idx: p.idx})
			}
			st.pre = kept
		} else {
			// Decode only until the next completion: k steps of this batch (a batch whose
			// decodes fill the token budget advances its prompts' sequences too).
			k := math.MaxInt
			if st.decoding() > 0 {
				k = st.dec[st.head].end - st.g
			}
			for _, p := range st.pre {
				k = min(k, p.left)
			}
			n := st.n()
			d := step(n, 0, st.ctx+n*(k+1)/2) // the mean context over the k steps
			st.t, st.last = st.t+dataplane.Time(k)*d, d
			st.g += k
			st.ctx += n * k
			for i := range st.pre {
				st.pre[i].left -= k
				st.pre[i].ctx += k
			}
		}
		for ; st.head < len(st.dec) && st.dec[st.head].end <= st.g; st.head++ {
			x := st.dec[st.head]
			finish(x.idx, x.ctx0+st.g, x.reserve)
		}
		kept := st.pre[:0]
		for _, p := range st.pre {
			if p.left > 0 {
				kept = append(kept, p)
				continue
			}
			finish(p.idx, p.ctx, p.reserve)
		}
		st.pre = kept
	}
}
