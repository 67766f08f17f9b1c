package qlm

import (
	"slices"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
)

// VisibleTokens is how many of request id's output tokens have reached its client by now: none
// before its first token is stamped, then every generated token less those the output delay
// still holds (a token computed in step k shows at the end of step k + output_delay_steps, LLM
// engine digest §2.5), a finished sequence's last tokens included: they show when its
// completion is stamped (an output-only step's end when nothing else runs, llm.Engine's
// OutputStep), not at the end of the step that computed them (llm.Engine.Visible). A
// streaming front end sends exactly these, so a served stream shows its tokens when the
// simulator stamps them, and a prompt's prefill chunks (steps that compute no output token)
// stream nothing. ok is false for a request the policy does not hold (finished: its answer
// carries every token).
func (p *Policy) VisibleTokens(id dataplane.ReqID) (n int, ok bool) {
	s, ok := p.seqs[id]
	if !ok {
		return 0, false
	}
	if s.TTFT == 0 {
		return 0, true
	}
	if s.Inst < 0 || s.Inst >= len(p.inst) {
		return s.Gen, true // on no instance: nothing delays what it generated
	}
	in := p.inst[s.Inst]
	var em *llm.Model
	if m := p.llmFor(in, s.Model); m != nil {
		em = m.Model
	}
	return in.Visible(s, em), true
}

// TimerTokens names the requests whose visible tokens the timer just handled grew, and
// forgets them: those with outputs still in flight on an instance whose output-only step it
// ended (each such step shows one more token of each, llm.Engine.Visible; the outputs it
// emitted were stamped, and their requests answered). Other timers show none.
func (p *Policy) TimerTokens() []dataplane.ReqID {
	ids := p.shown
	p.shown = p.shown[:0]
	return ids
}

// noteShown records, after in's output-only step ended, the requests whose outputs it still
// holds (TimerTokens); a sequence holding a first and a last output is named once.
func (p *Policy) noteShown(in *instance) {
	p.shown = p.shown[:0]
	for _, o := range in.Outputs() {
		if !slices.Contains(p.shown, o.S.ID) {
			p.shown = append(p.shown, o.S.ID)
		}
	}
}
