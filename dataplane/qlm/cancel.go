package qlm

import (
	"cmp"
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// DropTooLarge is the reason a request is dropped at arrival when its prompt and output can
// never fit the KV cache of any instance holding a profile of its model: admitting it is
// impossible, and left waiting it would hold the head of its queue forever (vLLM refuses a request longer than max_model_len at intake, the LLM engine digest §4).
const DropTooLarge dataplane.DropReason = "too-large"

// fits reports whether some instance with a profile of s's model could hold s's KV cache at
// its last token (prompt + output, in whole blocks) with nothing else running, and admit its
// prompt (under kv_allocation admission, within the watermark: llm.Model.MaxPrompt). The largest
// such cache per model is found once (every arrival asks).
func (p *Policy) fits(s *seq) bool {
	if p.kvMax == nil {
		p.kvMax = map[string]int{}
		p.promptMax = map[string]int{}
		for _, in := range p.inst {
			for _, e := range in.llms {
				p.kvMax[e.name] = max(p.kvMax[e.name], e.m.TokensWithin(e.m.KVCap/e.m.Block*e.m.Block))
				p.promptMax[e.name] = max(p.promptMax[e.name], e.m.MaxPrompt())
			}
		}
	}
	return s.Prompt+s.Out <= p.kvMax[s.Model] && s.Prompt <= p.promptMax[s.Model]
}

// Reasons a request is refused at arrival (LLM engine digest §2 and §4): its prompt plus
// output exceed max_model_len on every instance able to serve its model (HTTP 400 at the
// OpenAI intake), or chunked prefill is off and its prompt exceeds max_num_batched_tokens.
const (
	DropMaxModelLen  dataplane.DropReason = "max-model-len"
	DropPromptBudget dataplane.DropReason = "prompt-over-batched-tokens"
)

// refusal is why s can never be admitted by the engine settings of any instance with a
// profile of its model ("" when some can admit it).
func (p *Policy) refusal(s *seq) dataplane.DropReason {
	why := dataplane.DropReason("")
	for _, in := range p.inst {
		m := p.llmFor(in, s.Model)
		switch {
		case m == nil:
		case m.MaxModelLen > 0 && s.Prompt+s.Out > m.MaxModelLen:
			if why == "" {
				why = DropMaxModelLen
			}
		case !m.Chunked && s.Prompt > m.MaxBatched:
			why = DropPromptBudget
		default:
			return ""
		}
	}
	return why
}

// hopeless reports whether s misses its deadline even alone on the fastest instance able to
// serve its model, with nothing ahead of it: its prefill, then its output at a batch of one
// (QLM §6, Eq. 4 at ε = 1; the model load is not counted, so the rule never drops a request
// some instance could serve in time).
func (p *Policy) hopeless(now dataplane.Time, s *seq) bool {
	best := dataplane.Never
	var seen []*lm // instances of one GPU type share their profile: time it once
	for _, in := range p.inst {
		m := p.llmFor(in, s.Model)
		if m == nil || in.down || slices.Contains(seen, m) {
			continue
		}
		seen = append(seen, m)
		t := m.PrefillUs(s.Prompt)
		for k := 1; k < s.Out; k++ {
			t += m.DecodeUs(1, s.Prompt+k)
			if t >= best {
				break
			}
		}
		best = min(best, t)
	}
	return best != dataplane.Never && now+best > s.Deadline
}

// dropExpired drops, with reason deadline, the waiting sequences (in a queue, holding no KV)
// whose deadline has passed, in request order: served now they would be late whatever
// happens, and they hold back requests that can still make theirs (drop_late).
func (p *Policy) dropExpired(now dataplane.Time, out *dataplane.Decisions) {
	var late []*seq
	for _, s := range p.seqs {
		if s.Deadline < now && s.KV == 0 && !s.Swapped && !s.Fin {
			late = append(late, s)
		}
	}
	slices.SortFunc(late, func(a, b *seq) int { return cmp.Compare(a.ID, b.ID) })
	for _, s := range late {
		p.delSeq(s.ID)
		if s.Inst >= 0 {
			// A recompute-preempted sequence may still have its first token in flight.
			p.inst[s.Inst].DropOutputs(s)
		}
		p.q.withdraw(p, s)
		p.stats.Expired++
		out.Drop(s.ID, 0, dataplane.DropDeadline, 0)
	}
}

// Limit is what the largest instance able to serve a class can hold: the KV capacity in
// tokens (prompt + output) of the biggest cache among the instances with a profile of the
// class's model, and the class's own maxima (its token profiles' max; 0: none).
type Limit struct {
	Model     string
	KVTokens  int
	MaxPrompt int
	MaxOutput int
	// MaxModelLen is the largest max_model_len (prompt + output) of the instances serving
	// the model (0: one of them sets none); PromptBudget the largest prompt one with chunked
	// prefill off admits (its max_num_batched_tokens; 0: one chunks prompts). The engine
	// refuses past them at arrival (Policy.refusal), the OpenAI front end with a 400.
	MaxModelLen  int
	PromptBudget int
}

// Limits reads the per-class limits of a QLM deployment (indexed by application): the
// OpenAI front end refuses at intake what the engine would drop as DropTooLarge.
func Limits(dep *dataplane.Deployment) ([]Limit, error) {
	s, cls, err := decodeSetup(dep)
	if err != nil {
		return nil, err
	}
	out := make([]Limit, len(cls))
	for i, c := range cls {
		out[i] = Limit{Model: c.Model, MaxPrompt: c.In.Max, MaxOutput: c.Out.Max}
		lenSet, budgetSet := true, true
		for k := range s.Profiles {
			pr := &s.Profiles[k]
			if pr.Model != c.Model {
				continue
			}
			for _, in := range s.Instances {
				if in.runs(pr) {
					m := newLM(pr)
					// blocks(n) <= kvCap holds for n up to kvCap rounded down to a block.
					out[i].KVTokens = max(out[i].KVTokens, m.TokensWithin(m.KVCap/m.Block*m.Block))
					lenSet = lenSet && m.MaxModelLen > 0
					out[i].MaxModelLen = max(out[i].MaxModelLen, m.MaxModelLen)
					budgetSet = budgetSet && !m.Chunked
					out[i].PromptBudget = max(out[i].PromptBudget, m.MaxBatched)
					break
				}
			}
		}
		if !lenSet {
			out[i].MaxModelLen = 0
		}
		if !budgetSet {
			out[i].PromptBudget = 0
		}
	}
	return out, nil
}

// cancel handles EvCancel: request id was withdrawn and is already finished (Dropped,
// DropCancelled). A waiting sequence leaves its queue (its request group, QLM §4); a running
// or swapped one leaves the instance and its KV blocks (GPU or CPU) are freed at once — the
// engine delivers EvCancel for a sequence in the iteration in flight only when that
// iteration ends, so it is never scheduled again (vLLM aborts a request whose client
// disconnected, LLM engine digest §4). Other sequences are untouched.
func (p *Policy) cancel(id dataplane.ReqID) {
	s := p.seqs[id]
	if s == nil {
		return
	}
	p.delSeq(id)
	p.stats.Cancelled++
	if s.Inst >= 0 {
		p.inst[s.Inst].DropOutputs(s)
	}
	if s.Fin {
		return // computed, its completion waited for the output delay
	}
	if s.Inst >= 0 && p.abort(p.inst[s.Inst], s) {
		return
	}
	p.q.withdraw(p, s)
}

// abort takes s out of in's running batch, the iteration in flight or its swapped set and
// frees its KV (llm.Engine.Abort); false when in holds none of it.
func (p *Policy) abort(in *instance, s *seq) bool {
	if !in.Abort(s) {
		return false
	}
	p.touch(in.ID)
	return true
}

// Forget implements dataplane.Forgetter: the policy's per-request state (the sequence table
// and the per-request statistics) drops request id once the engine retires it, so its memory
// follows what is in flight.
func (p *Policy) Forget(id dataplane.ReqID) {
	p.delSeq(id)
	delete(p.stats.TTFT, id)
	delete(p.stats.TPOT, id)
	delete(p.stats.Predicted, id)
	delete(p.stats.PredictedAt, id)
}
