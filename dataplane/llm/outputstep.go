package llm

import "github.com/plan-dev/plan/dataplane"

// Output-only steps. Measured vLLM processes the output of step k while step k + 1 runs, so a
// token reaches its client at the end of the step after the one that computed it (LLM engine
// digest §2.5, output_delay_steps). The steps that deliver must not depend on whether other
// work follows: a lone request asking for one token would otherwise see it at the end of its
// prefill, one asking for two a decode step later (TTFT depending on max_tokens), and a
// request's last token would reach the client together with the one before it (one chunk of
// two tokens, TPOT short by a step). An engine left with outputs in flight and nothing to
// compute therefore still ends its output steps: each as long as a decode of the sequences
// whose outputs it holds (the step those sequences would take next), delivering one more
// token of each, until every output is emitted. A real step starting meanwhile takes over
// (Step clears OutEnd): its end counts instead.

// OutputStep starts an output-only step at now when e is idle with outputs in flight, timed
// by m, and returns its end (e.outEnd), which the owner ends with EndOutputStep; Never when
// none starts. With m nil (no profile to time the step) the outputs are emitted now.
func (e *Engine) OutputStep(now dataplane.Time, m *Model, emit func(Output)) dataplane.Time {
	if e.busy || len(e.outq) == 0 {
		return dataplane.Never
	}
	if m == nil {
		e.ReleaseOutputs(now, true, emit)
		return dataplane.Never
	}
	// With OutDelay > 1 a sequence may hold two outputs (a first token and a last): it is
	// one sequence of the step.
	seqs, ctx := 0, 0
	for i, o := range e.outq {
		if m.OutDelay > 1 && holds(e.outq[:i], o.S) {
			continue
		}
		seqs++
		ctx += o.S.Comp + 1
	}
	e.outEnd = now + max(m.DecodeUs(seqs, ctx), 1)
	return e.outEnd
}

// EndOutputStep ends the output-only step due at now: one more step ended for the outputs in
// flight, those due emitted. It reports false, doing nothing, when that step is no longer in
// flight (a real step took over, or it ended already); on true the owner starts the next
// (OutputStep) if outputs remain.
func (e *Engine) EndOutputStep(now dataplane.Time, emit func(Output)) bool {
	if e.busy || e.outEnd != now {
		return false
	}
	e.outEnd = 0
	e.outSteps++
	e.ReleaseOutputs(now, false, emit)
	return true
}

// Visible is how many of s's generated tokens have reached its client, for s on e running m
// (m nil: no output delay): every generated token less those the output delay still holds
// (a token computed in step k shows at the end of step k + output_delay_steps, digest §2.5),
// at least the first once stamped; each output-only step ended since the last real step
// delivers one more, a finished sequence's last tokens included.
func (e *Engine) Visible(s *Seq, m *Model) int {
	delay := 0
	if m != nil {
		delay = max(m.OutDelay-e.outSteps, 0)
	}
	return min(max(s.Gen-delay, 1), s.Gen)
}

// holds reports whether outs holds an output of s.
func holds(outs []Output, s *Seq) bool {
	for _, o := range outs {
		if o.S == s {
			return true
		}
	}
	return false
}
