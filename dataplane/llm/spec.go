package llm

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// Speculative decoding (formats.LLMSpeculative; llm-deploy-search §5, Leviathan et al.,
// ICML'23 §3). With it on, a running sequence in decode proposes k tokens with a draft and
// the target verifies them in one step over k + 1 tokens of that sequence: k + 1 tokens of
// the step's token budget and KV slots for all of them. Each proposed token is accepted with
// rate α, so a verify step emits E = (1 − α^(k+1))/(1 − α) tokens in expectation (at least
// the one the target computes itself). The engine stays deterministic: each sequence carries
// the fraction of E its steps emitted beyond whole tokens (Seq.specAcc) and emits
// ⌊carry + E⌋ tokens per step, so over n steps it emits ⌊n·E⌋ tokens — E per step on
// average, with no random draw. A step's time is the target's over its tokens (the verify)
// plus k draft steps: each draft_step_us, or draft_cost_ratio × the target's decode step of
// the same sequences (the ratio c of Leviathan et al. §3).

// draftUs is the time of the k draft steps that precede the verify step being formed: 0 when
// no sequence in it decodes speculatively.
func (e *Engine) draftUs(m *Model) dataplane.Time {
	if m.Spec == nil {
		return 0
	}
	b, ctx := 0, 0
	for _, s := range e.iter {
		if s.spec {
			b++
			ctx += s.Comp + 1
		}
	}
	if b == 0 {
		return 0
	}
	k := float64(m.Spec.DraftTokens)
	switch {
	case m.Spec.DraftStepUs > 0:
		return dataplane.Time(math.Round(k * m.Spec.DraftStepUs))
	case m.Spec.DraftCostRatio > 0:
		return dataplane.Time(math.Round(k * m.Spec.DraftCostRatio * (m.Decode.At(b) + m.CtxUs*float64(ctx))))
	}
	return 0
}

// specDone applies a verify step to s: it emits ⌊carry + E⌋ tokens, at most those its output
// still lacks, which its KV cache now holds but for the newest (as after a plain decode:
// Comp = Prompt + Gen − 1 once Done counts the last of them).
func (s *Seq) specDone(m *Model) {
	s.specAcc += m.SpecTokens
	t := int(s.specAcc)
	s.specAcc -= float64(t)
	t = max(1, min(t, s.Out-s.Gen))
	s.Comp += t
	s.Gen += t - 1 // Done adds the last one, as for a plain decode
}
