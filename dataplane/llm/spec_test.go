package llm_test

import (
	"testing"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/formats"
)

// specProfile is flatProfile with a decode curve of 1,000 µs + 10 µs per token above one
// (a verify step over 5 tokens: 1,040 µs) and speculative decoding of k = 4 at α = 0.8:
// (1 − 0.8⁵)/0.2 = 3.3616 tokens per step (llm-deploy-search §7.4: 3.36).
func specProfile(sp formats.LLMSpeculative) *formats.LLMProfile {
	p := flatProfile(formats.LLMEngine{Speculative: &sp})
	p.KVCapacityTokens = 4096
	p.Iteration.Decode = []formats.PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 101, Us: 2000}}
	return p
}

func TestSpeculativeTokensPerStep(t *testing.T) {
	sp := formats.LLMSpeculative{DraftTokens: 4, AcceptanceRate: 0.8}
	if got := sp.TokensPerStep(); got < 3.3616-1e-12 || got > 3.3616+1e-12 {
		t.Fatalf("tokens per step %v, want 3.3616", got)
	}
	for _, c := range []struct {
		name string
		sp   formats.LLMSpeculative
	}{
		{"draft_step_us", formats.LLMSpeculative{DraftTokens: 4, AcceptanceRate: 0.8, DraftStepUs: 100}},
		{"draft_cost_ratio", formats.LLMSpeculative{DraftTokens: 4, AcceptanceRate: 0.8, DraftCostRatio: 0.1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := llm.NewModel(specProfile(c.sp))
			// Prompt 16: one prefill step 1 → 2,001 (first token). Then verify steps of
			// 1,040 µs + 4 draft steps of 100 µs (or 0.1 × the 1,000 µs decode step) =
			// 1,440 µs, emitting ⌊carry + 3.3616⌋: 3, 3, 4, 3, 3, then 3 of 4 (the last
			// three of 20): Gen 1 → 4 → 7 → 11 → 14 → 17 → 20 in 6 steps → 10,641.
			res, ctr := llm.Replay(m, []llm.Request{{ID: 1, Prompt: 16, Out: 20}}, fcfs.New())
			if r := res[0]; r.FirstToken != 2001 || r.Done != 2001+6*1440 {
				t.Fatalf("first %d done %d, want 2001 %d", r.FirstToken, r.Done, 2001+6*1440)
			}
			if ctr.Iterations != 7 {
				t.Fatalf("%d iterations, want 7", ctr.Iterations)
			}
		})
	}
	// Over a long output the mean is E: 1,000 tokens after the first take ⌈1000/3.3616⌉ = 298
	// verify steps (297 · 3.3616 = 998.4 < 1,000 ≤ 298 · 3.3616).
	m := llm.NewModel(specProfile(sp))
	_, ctr := llm.Replay(m, []llm.Request{{ID: 1, Prompt: 16, Out: 1001}}, fcfs.New())
	if ctr.Iterations != 1+298 {
		t.Fatalf("%d iterations, want 299", ctr.Iterations)
	}
}

// TestSpeculativeZeroAcceptance: k proposals accepted never (α = 0) and free drafting emit one
// token per step like plain decoding, only with a longer verify (k + 1 tokens).
func TestSpeculativeZeroAcceptance(t *testing.T) {
	m := llm.NewModel(specProfile(formats.LLMSpeculative{DraftTokens: 2, AcceptanceRate: 0}))
	res, _ := llm.Replay(m, []llm.Request{{ID: 1, Prompt: 16, Out: 5}}, fcfs.New())
	// 4 decode steps of 1,020 µs (3 tokens each) after the 2,001 µs prefill.
	if r := res[0]; r.Done != 2001+4*1020 {
		t.Fatalf("done %d, want %d", r.Done, 2001+4*1020)
	}
}
