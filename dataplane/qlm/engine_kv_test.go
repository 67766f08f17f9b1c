package qlm

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// TestKVRulesThroughPolicy runs the hand-computed KV timelines of dataplane/llm's
// TestKVPressureTimelines (see kv_test.go there for each step) through the vLLM baseline on
// the simulator: A (64 prompt, 6 out) at 0, B (96, 2) at 1,500 µs, flat steps (prompt-
// containing 2,000 µs, decode-only 1,000 µs), budget 64, KV for 160 tokens, no output
// delay. The policy's instance and a bare engine replay must agree to the µs.
func TestKVRulesThroughPolicy(t *testing.T) {
	zero := 0
	for _, tc := range []struct {
		name        string
		alloc       string
		release     string
		ttft, e2e   [2]dataplane.Time
		preemptions int64
		// settings is what the run's report names beside the defaults.
		settings string
	}{
		{"admission queues", formats.KVAllocAdmission, "", [2]dataplane.Time{2001, 9501}, [2]dataplane.Time{7001, 10501}, 0, "kv_allocation=admission"},
		{"chunk preempts", formats.KVAllocChunk, "", [2]dataplane.Time{2001, 10501}, [2]dataplane.Time{10001, 11501}, 2, "kv_allocation=chunk"},
		{"chunk with full-prompt check queues", formats.KVAllocChunkFullPrompt, "", [2]dataplane.Time{2001, 9501}, [2]dataplane.Time{7001, 10501}, 0, ""},
		{"admission, blocks free a step later", formats.KVAllocAdmission, formats.ReleaseNextStep, [2]dataplane.Time{2001, 10501}, [2]dataplane.Time{8001, 12501}, 0, "kv_allocation=admission release=next_step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := handProfile()
			p.KVCapacityTokens = 160
			p.Iteration = &formats.LLMIteration{Prefill: []formats.PWLPoint{{Tokens: 1, Us: 2000}}, Decode: []formats.PWLPoint{{Tokens: 1, Us: 1000}}}
			p.Engine = &formats.LLMEngine{MaxNumBatchedTokens: 64, OutputDelaySteps: &zero, KVAllocation: tc.alloc, Release: tc.release, EnablePrefixCaching: new(false)}
			r := runEngine(t, PolicyFCFS, p, []engineReq{{0, 64, 6, 0}, {1500, 96, 2, 0}})
			for i := range 2 {
				id := dataplane.ReqID(i)
				if r.first[id] != tc.ttft[i] || r.done[id] != tc.e2e[i] {
					t.Errorf("request %d: ttft %d e2e %d, want %d %d", i, r.first[id], r.done[id], tc.ttft[i], tc.e2e[i])
				}
			}
			if r.st.Evictions != tc.preemptions {
				t.Errorf("evictions %d, want %d", r.st.Evictions, tc.preemptions)
			}
			// The report names the policy, counts preemption events (and requests), and
			// lists every setting that differs from vLLM's defaults.
			e := r.m.LLMEngine
			want := strings.TrimSpace("max_num_batched_tokens=64 enable_prefix_caching=false output_delay_steps=0 " + tc.settings)
			if e == nil || e.Policy != PolicyFCFS || e.Preemptions != tc.preemptions || e.PreemptedRequests != min(tc.preemptions, 1) || strings.Join(e.Settings, " ") != want {
				t.Errorf("engine report %+v, want policy %s, %d preemptions, settings %q", e, PolicyFCFS, tc.preemptions, want)
			}
		})
	}
}
