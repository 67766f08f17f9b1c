package llm_test

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/formats"
)

// flatProfile has flat step times so KV timelines are computable by hand: every step that
// computes a prompt token takes 2,000 µs, every decode-only step 1,000 µs, whatever its
// tokens; no context term. Budget 64 tokens, KV for 160 tokens (10 blocks of 16), no output
// delay (a token reaches its client when its step ends).
func flatProfile(e formats.LLMEngine) *formats.LLMProfile {
	zero := 0
	e.MaxNumBatchedTokens = 64
	e.OutputDelaySteps = &zero
	return &formats.LLMProfile{Model: "m", GPU: "A100", GPUCount: 1, KVBytesPerToken: 1, KVCapacityTokens: 160,
		Iteration: &formats.LLMIteration{
			Prefill: []formats.PWLPoint{{Tokens: 1, Us: 2000}},
			Decode:  []formats.PWLPoint{{Tokens: 1, Us: 1000}},
		}, Engine: &e}
}

// kvCase is one hand-computed KV timeline: A (64 prompt, 6 out) at 0, B (96 prompt, 2 out)
// at 1,500 µs, while A runs its first step. A holds blocks(65) = 80 tokens once it decodes,
// so the whole of B (96) never fits beside it, but B's first chunk (63, 4 blocks) does.
type kvCase struct {
	name   string
	engine formats.LLMEngine
	// ttft and e2e per request (A, B), from arrival.
	ttft, e2e   [2]dataplane.Time
	preemptions int64
}

func kvCases() []kvCase {
	return []kvCase{
		{
			// V0: B needs all 96 tokens' blocks at admission and waits while A holds 80.
			// s1 A 64 prompt tokens 1→2,001 (A's first token); s2–s6 A decodes → 7,001 (A
			// done, blocks freed); s7 B 64 → 9,001; s8 B 32 → 11,001 (B's first token); s9 B
			// decode → 12,001. B from its arrival (1,500): 9,501 and 10,501.
			name: "admission queues", engine: formats.LLMEngine{KVAllocation: formats.KVAllocAdmission},
			ttft: [2]dataplane.Time{2001, 9501}, e2e: [2]dataplane.Time{7001, 10501},
		},
		{
			// V1: B's first chunk fits, so B is admitted, and the chunk after needs blocks that
			// are not there: B preempts itself (the most recently admitted), recomputes, and
			// does it again (llm-engine-2 §1: the preempt-and-retry loop of a long prompt).
			// s1 A 1→2,001; s2 A decode + B 63 (a prefill step) → 4,001; s3 B's 33 need
			// blocks(96): 80 + 96 > 160, B preempted, A decodes alone → 5,001; s4 A + B 63 →
			// 7,001; s5 B preempted again, A → 8,001; s6 A + B 63 → 10,001 (A done); s7 B 33 →
			// 12,001 (B's first token); s8 B decode → 13,001. B: 10,501 and 11,501.
			name: "chunk preempts", engine: formats.LLMEngine{KVAllocation: formats.KVAllocChunk},
			ttft: [2]dataplane.Time{2001, 10501}, e2e: [2]dataplane.Time{10001, 11501}, preemptions: 2,
		},
		{
			// Newer V1 (scheduler_reserve_full_isl): B's first chunk fits but its whole prompt
			// does not, so it waits as under admission: the same timeline, no preemption.
			name: "chunk with full-prompt check queues", engine: formats.LLMEngine{KVAllocation: formats.KVAllocChunkFullPrompt},
			ttft: [2]dataplane.Time{2001, 9501}, e2e: [2]dataplane.Time{7001, 10501},
		},
		{
			// release next_step: A, done computing at 7,001, runs one more decode step; its
			// completion is processed, and its blocks freed, at that step's end, 8,001. B
			// starts then: s8 B 64 → 10,001; s9 B 32 → 12,001 (first token); s10 B decode →
			// 13,001; s11 B's extra step → 14,001 (done). B: 10,501 and 12,501.
			name: "admission, blocks free a step later", engine: formats.LLMEngine{KVAllocation: formats.KVAllocAdmission, Release: formats.ReleaseNextStep},
			ttft: [2]dataplane.Time{2001, 10501}, e2e: [2]dataplane.Time{8001, 12501},
		},
	}
}

// KVRequests are the two requests of kvCases.
var kvRequests = []llm.Request{{ID: 0, Arrival: 0, Prompt: 64, Out: 6}, {ID: 1, Arrival: 1500, Prompt: 96, Out: 2}}

// TestKVPressureTimelines checks each KV rule of llm-engine-2 §1 on the hand-computed
// timelines of kvCases: the exact TTFT and E2E of each request and the preemption events.
// The timelines are computed without prefix caching, so the engine runs with it off (on,
// the default, a preempted request finds its own blocks cached:
// TestPrefixCacheUniquePromptsKeepTimelines).
func TestKVPressureTimelines(t *testing.T) {
	for _, tc := range kvCases() {
		t.Run(tc.name, func(t *testing.T) {
			tc.engine.EnablePrefixCaching = new(false)
			m := llm.NewModel(flatProfile(tc.engine))
			res, ctr := llm.Replay(m, kvRequests, fcfs.New())
			for i, r := range res {
				at := kvRequests[i].Arrival
				if r.Refused || r.FirstToken-at != tc.ttft[i] || r.Done-at != tc.e2e[i] {
					t.Errorf("request %d: refused %v ttft %d e2e %d, want %d %d", i, r.Refused, r.FirstToken-at, r.Done-at, tc.ttft[i], tc.e2e[i])
				}
			}
			if n := ctr.Preemptions.Load(); n != tc.preemptions || ctr.Evictions != tc.preemptions {
				t.Errorf("preemptions %d (evictions %d), want %d", n, ctr.Evictions, tc.preemptions)
			}
			if want := min(tc.preemptions, 1); ctr.PreemptedReqs != want {
				t.Errorf("distinct preempted requests %d, want %d", ctr.PreemptedReqs, want)
			}
		})
	}
}

// TestAdmissionWatermark: under admission allocation the watermark keeps free blocks back
// (V0's can_allocate: free − need ≥ watermark blocks), and a prompt that could never leave
// them is refused (NEVER) at arrival.
func TestAdmissionWatermark(t *testing.T) {
	w := 0.2 // int(0.2 × 10 blocks) = 2 blocks = 32 tokens
	m := llm.NewModel(flatProfile(formats.LLMEngine{KVAllocation: formats.KVAllocAdmission, Watermark: &w}))
	if got := m.WatermarkTokens(); got != 32 {
		t.Fatalf("watermark %d tokens, want 32", got)
	}
	if !m.Refuses(130, 1) || m.Refuses(128, 1) {
		t.Errorf("refuses(130) %v refuses(128) %v: want the prompt limit at 160 − 32 = 128", m.Refuses(130, 1), m.Refuses(128, 1))
	}
	// A (64/6) holds 80 once decoding: B (48) needs 48, free 80 − 48 = 32 ≥ 32: admitted
	// beside A; at watermark 0.3 (3 blocks) it waits for A.
	reqs := []llm.Request{{ID: 0, Arrival: 0, Prompt: 64, Out: 6}, {ID: 1, Arrival: 1500, Prompt: 48, Out: 2}}
	res, _ := llm.Replay(m, reqs, fcfs.New())
	w = 0.3
	m3 := llm.NewModel(flatProfile(formats.LLMEngine{KVAllocation: formats.KVAllocAdmission, Watermark: &w}))
	res3, _ := llm.Replay(m3, reqs, fcfs.New())
	if !(res[1].FirstToken < res[0].Done && res3[1].FirstToken > res3[0].Done) {
		t.Errorf("B's first token %d (A done %d) at 0.2, %d (A done %d) at 0.3: want beside A, then after it",
			res[1].FirstToken, res[0].Done, res3[1].FirstToken, res3[0].Done)
	}
}

// TestDefaultsFollowCurrentVLLM: with no settings the engine allocates per chunk with the
// full-prompt check, frees blocks in the same step, and keeps no watermark.
func TestDefaultsFollowCurrentVLLM(t *testing.T) {
	m := llm.NewModel(flatProfile(formats.LLMEngine{}))
	if m.Alloc != formats.KVAllocChunkFullPrompt || m.Release != formats.ReleaseSameStep || m.Watermark != 0 {
		t.Errorf("defaults: alloc %q release %q watermark %g", m.Alloc, m.Release, m.Watermark)
	}
	a := llm.NewModel(flatProfile(formats.LLMEngine{KVAllocation: formats.KVAllocAdmission}))
	if a.Watermark != 0.01 {
		t.Errorf("admission watermark %g, want vLLM V0's 0.01", a.Watermark)
	}
}
