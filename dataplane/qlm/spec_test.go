package qlm

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// TestSpeculativeThroughPolicy runs dataplane/llm's hand-computed speculative decoding case
// (spec_test.go there) through the vLLM baseline on the simulator: prompt 16, 20 out, flat
// prefill 2,000 µs, verify 1,040 µs + 4 draft steps of 100 µs, k = 4, α = 0.8: the first
// token at 2,001, then 6 verify steps emitting 3, 3, 4, 3, 3, 3 tokens → 2,001 + 6 · 1,440.
func TestSpeculativeThroughPolicy(t *testing.T) {
	zero := 0
	p := handProfile()
	p.KVCapacityTokens = 4096
	p.Iteration = &formats.LLMIteration{Prefill: []formats.PWLPoint{{Tokens: 1, Us: 2000}},
		Decode: []formats.PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 101, Us: 2000}}}
	p.Engine = &formats.LLMEngine{MaxNumBatchedTokens: 64, OutputDelaySteps: &zero,
		Speculative: &formats.LLMSpeculative{DraftTokens: 4, AcceptanceRate: 0.8, DraftStepUs: 100}}
	r := runEngine(t, PolicyFCFS, p, []engineReq{{0, 16, 20, 0}})
	if r.first[0] != 2001 || r.done[0] != 2001+6*1440 {
		t.Fatalf("ttft %d e2e %d, want 2001 %d", r.first[0], r.done[0], dataplane.Time(2001+6*1440))
	}
}
