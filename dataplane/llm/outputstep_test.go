package llm_test

import (
	"fmt"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/formats"
)

// delayModel is flatProfile (prompt-containing steps 2,000 µs, decode-only 1,000 µs, no
// context term) with output_delay_steps delay and KV for 1,024 tokens (room for 256 outputs).
func delayModel(delay int) *llm.Model {
	p := flatProfile(formats.LLMEngine{})
	p.Engine.OutputDelaySteps = &delay
	p.KVCapacityTokens = 1024
	return llm.NewModel(p)
}

// TestReplayOutputSteps: a lone request's tokens reach its client output_delay_steps steps
// after the step that computed them (LLM engine digest §2.5) whatever its max_tokens, the
// idle engine ending those steps as output-only ones (outputstep.go): TTFT = 1 µs of arrival
// hold + the prefill (2,000) + delay decode steps (1,000 each), and the last token one decode
// step after the one before it, E2E = TTFT + (out − 1) · 1,000.
func TestReplayOutputSteps(t *testing.T) {
	for _, delay := range []int{0, 1, 2} {
		for _, out := range []int{1, 2, 3, 256} {
			t.Run(fmt.Sprintf("delay=%d/max_tokens=%d", delay, out), func(t *testing.T) {
				res, _ := llm.Replay(delayModel(delay), []llm.Request{{ID: 0, Arrival: 100, Prompt: 32, Out: out}}, fcfs.New())
				ttft := dataplane.Time(1 + 2000 + delay*1000)
				e2e := ttft + dataplane.Time(out-1)*1000
				if r := res[0]; r.FirstToken-100 != ttft || r.Done-100 != e2e {
					t.Errorf("ttft %d e2e %d, want %d %d", r.FirstToken-100, r.Done-100, ttft, e2e)
				}
			})
		}
	}
}

// TestReplayRealStepTakesOver: delay 1. A (32 prompt, 1 token) is computed by its prefill,
// 1→2,001; the idle engine starts an output-only step D(1) to 3,001. B arrives at 2,500: its
// prefill 2,501→4,501 is the step after A's, so A's token is stamped at its end, not at
// 3,001 (the output-only step was taken over). Without B, A completes at 3,001.
func TestReplayRealStepTakesOver(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reqs  []llm.Request
		doneA dataplane.Time
	}{
		{"alone", []llm.Request{{ID: 0, Prompt: 32, Out: 1}}, 3001},
		{"B arrives during the output-only step", []llm.Request{{ID: 0, Prompt: 32, Out: 1}, {ID: 1, Arrival: 2500, Prompt: 32, Out: 1}}, 4501},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := llm.Replay(delayModel(1), tc.reqs, fcfs.New())
			if a := res[0]; a.FirstToken != tc.doneA || a.Done != tc.doneA {
				t.Errorf("A: first token %d, done %d, want both %d", a.FirstToken, a.Done, tc.doneA)
			}
			if len(res) > 1 {
				// B: computed by its prefill at 4,501, stamped by the output-only step after
				// it, D(1) → 5,501.
				if b := res[1]; b.FirstToken != 5501 || b.Done != 5501 {
					t.Errorf("B: first token %d, done %d, want both 5,501", b.FirstToken, b.Done)
				}
			}
		})
	}
}
