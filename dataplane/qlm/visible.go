package qlm

import "github.com/plan-dev/plan/dataplane"

// VisibleTokens is how many of request id's output tokens have reached its client by now: none
// before its first token is stamped, then every generated token less those the output delay
// still holds (a token computed in step k shows at the end of step k + output_delay_steps, LLM
// engine digest §2.5). A streaming front end sends exactly these, so a served stream shows its
// tokens when the simulator stamps them, and a prompt's prefill chunks (steps that compute no
// output token) stream nothing. ok is false for a request the policy does not hold (finished:
// its answer carries every token).
func (p *Policy) VisibleTokens(id dataplane.ReqID) (n int, ok bool) {
	s, ok := p.seqs[id]
	if !ok {
		return 0, false
	}
	if s.TTFT == 0 {
		return 0, true
	}
	if s.Fin {
		// Every token is computed: the answer, stamped when the output delay ends, carries
		// the count (a request without max_tokens is answered with it).
		return s.Gen, true
	}
	delay := 0
	if s.Inst >= 0 && s.Inst < len(p.inst) {
		if m := p.llmFor(p.inst[s.Inst], s.Model); m != nil {
			delay = m.OutDelay
		}
	}
	return min(max(s.Gen-delay, 1), s.Gen), true
}
