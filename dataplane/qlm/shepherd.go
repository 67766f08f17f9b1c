package qlm

import (
	"math"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// shepherdQueue is the SHEPHERD-like baseline of QLM §8 [ours] (Zhang et al., NSDI 2023, as
// QLM's evaluation ran it: "dynamic batching plus ILP ordering/placement, designed for
// deterministic-latency DNNs"; QLM §8 notes it cannot use continuous batching). Per instance
// and model it forms the largest static batch (≤ shepherdBatch) whose deadlines all hold
// when every member generates its class's p95 output length; the batch runs to completion
// with no joins mid-batch; a running batch is preempted (recompute) only when a new feasible
// batch is at least twice its size; new requests go to the least-loaded instance.
type shepherdQueue struct {
	wait    [][]*seq // per instance, earliest deadline first
	pending [][]*seq // the formed batch not yet admitted
	tokens  []float64
	dirty   []bool
}

// shepherdBatch is B_static, the largest static batch the SHEPHERD-like baseline forms
// whose deadlines all hold (QLM §8; the digest's default, 32).
const shepherdBatch = 32

func (q *shepherdQueue) init(p *Policy) {
	if q.wait == nil {
		n := len(p.inst)
		q.wait, q.pending = make([][]*seq, n), make([][]*seq, n)
		q.tokens, q.dirty = make([]float64, n), make([]bool, n)
	}
}

func (q *shepherdQueue) insert(i int, s *seq) {
	w := q.wait[i]
	k := sort.Search(len(w), func(j int) bool {
		if w[j].Deadline != s.Deadline {
			return s.Deadline < w[j].Deadline
		}
		return s.ID < w[j].ID
	})
	w = append(w, nil)
	copy(w[k+1:], w[k:])
	w[k] = s
	q.wait[i] = w
	q.tokens[i] += p95Out(s)
	q.dirty[i] = true
}

// p95Out is the SHEPHERD-like deterministic stand-in for a request's unknown output length:
// its class's p95 (normal, QLM §6, Eq. 3), at most the class maximum; the policy never reads
// the true length.
func p95Out(s *seq) float64 { return float64(ext(s).group.maxOut) }

func (q *shepherdQueue) add(p *Policy, _ dataplane.Time, s *seq) {
	q.init(p)
	c := &p.class[s.App]
	o := c.Out.Mean + 1.645*c.Out.Std
	if c.Out.Max > 0 {
		o = math.Min(o, float64(c.Out.Max))
	}
	// The group field carries the per-request p95 (SHEPHERD has no request groups).
	ext(s).group = &group{maxOut: int(math.Ceil(math.Max(1, o)))}
	best, bt := -1, math.Inf(1)
	for _, in := range p.routed(s.Model, ext(s).gpu) {
		m := p.llmFor(in, s.Model)
		load := q.tokens[in.ID]
		for _, r := range in.Running() {
			load += math.Max(p95Out(r)-float64(r.Gen), 1)
		}
		if t := load / m.thetaTokPerSec; t < bt {
			best, bt = in.ID, t
		}
	}
	s.Inst = best
	q.insert(best, s)
}

// form returns the largest feasible static batch on in at now (model, members) and whether
// one is feasible; without a feasible one, the earliest-deadline request's model with as
// many of its requests as fit in a batch (they are late anyway; serving them drains).
func (q *shepherdQueue) form(p *Policy, in *instance, now dataplane.Time) ([]*seq, bool) {
	w := q.wait[in.ID]
	if len(w) == 0 {
		return nil, false
	}
	var models []string
	by := map[string][]*seq{}
	for _, s := range w {
		if _, ok := by[s.Model]; !ok {
			models = append(models, s.Model)
		}
		by[s.Model] = append(by[s.Model], s)
	}
	var best []*seq
	for _, k := range models {
		m := p.llmFor(in, k)
		cand := by[k]
		for b := min(shepherdBatch, len(cand), m.MaxSeqs); b >= 1 && b > len(best); b-- {
			if q.feasible(p, in, m, k, cand[:b], now) {
				if b > len(best) || (b == len(best) && k == in.model) {
					best = cand[:b]
				}
				break
			}
		}
	}
	if best != nil {
		return best, true
	}
	cand := by[w[0].Model]
	return cand[:min(shepherdBatch, len(cand), p.llmFor(in, w[0].Model).MaxSeqs)], false
}

// feasible: the batch's deterministic time (model switch, one prefill over all prompts, then
// p95 decode steps at the batch's size) meets every member's deadline and fits the KV cache.
func (q *shepherdQueue) feasible(p *Policy, in *instance, m *lm, model string, b []*seq, now dataplane.Time) bool {
	t := 0.0
	if model != in.model {
		t += p.swapSeconds(in, model) * 1e6
	}
	prompt, steps, ctx, kv := 0, 0.0, 0.0, 0.0
	for _, s := range b {
		prompt += s.Prompt
		steps = math.Max(steps, p95Out(s))
		ctx += float64(s.Prompt) + p95Out(s)
		kv += m.SeqKV(float64(s.Prompt) + p95Out(s))
	}
	if int(kv) > m.KVCap {
		return false
	}
	t += float64(m.PrefillUs(prompt)) + steps*float64(m.DecodeUs(len(b), int(ctx/2)))
	end := now + dataplane.Time(math.Ceil(t))
	for _, s := range b {
		if end > s.Deadline {
			return false
		}
	}
	return true
}

func (q *shepherdQueue) head(p *Policy, in *instance) *seq {
	q.init(p)
	if len(q.pending[in.ID]) > 0 {
		return q.pending[in.ID][0]
	}
	if len(in.Running()) > 0 || len(in.Swapped()) > 0 {
		// The static batch runs to completion; a new feasible batch twice its size preempts
		// it (checked once per change of the waiting list).
		if !q.dirty[in.ID] {
			return nil
		}
		q.dirty[in.ID] = false
		b, ok := q.form(p, in, p.now)
		if !ok || len(b) < 2*(len(in.Running())+len(in.Swapped())) {
			return nil
		}
		m := p.llmFor(in, in.model)
		for len(in.Running()) > 0 {
			p.preempt(in, in.Running()[len(in.Running())-1], m)
		}
		return nil // the next step finds the instance empty and forms the batch
	}
	b, _ := q.form(p, in, p.now)
	q.pending[in.ID] = append(q.pending[in.ID][:0], b...)
	if len(b) == 0 {
		return nil
	}
	return b[0]
}

func (q *shepherdQueue) pop(_ *Policy, in *instance, s *seq) {
	if pd := q.pending[in.ID]; len(pd) > 0 && pd[0] == s {
		q.pending[in.ID] = pd[1:]
	}
	w := q.wait[in.ID]
	for i, x := range w {
		if x == s {
			q.wait[in.ID] = append(w[:i], w[i+1:]...)
			q.tokens[in.ID] -= p95Out(s)
			return
		}
	}
}

func (q *shepherdQueue) requeue(_ *Policy, in *instance, s *seq) { q.insert(in.ID, s) }

// preemptFor: the static batch never evicts for admission (it was sized to fit).
func (q *shepherdQueue) preemptFor(*Policy, dataplane.Time, *instance, *seq, int) bool {
	return false
}

func (q *shepherdQueue) evacuate(p *Policy, in *instance) []*seq {
	q.init(p)
	out := q.wait[in.ID]
	q.wait[in.ID], q.pending[in.ID] = nil, nil
	q.tokens[in.ID], q.dirty[in.ID] = 0, false
	return out
}

func (q *shepherdQueue) finished(*Policy, *seq) {}

// withdraw takes a cancelled waiting sequence out of its instance's list and out of the
// batch formed there; the list changed, so preemption is re-checked.
func (q *shepherdQueue) withdraw(p *Policy, s *seq) {
	if q.wait == nil || s.Inst < 0 {
		return
	}
	i := s.Inst
	pd := q.pending[i][:0]
	for _, x := range q.pending[i] {
		if x != s {
			pd = append(pd, x)
		}
	}
	q.pending[i] = pd
	for k, x := range q.wait[i] {
		if x == s {
			q.wait[i] = append(q.wait[i][:k], q.wait[i][k+1:]...)
			q.tokens[i] -= p95Out(s)
			q.dirty[i] = true
			p.touch(i)
			return
		}
	}
}

// admitted drops the rest of a formed batch that KV could not take: it re-forms next time.
func (q *shepherdQueue) admitted(_ *Policy, in *instance) {
	q.pending[in.ID] = q.pending[in.ID][:0]
}

func (q *shepherdQueue) tick(p *Policy, _ dataplane.Time) {
	q.init(p)
	for i := range q.dirty {
		q.dirty[i] = true // slack shrinks with time: re-check preemption
	}
}
