package llm_test

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
)

// TestKVOffloadLoadsEvictedPrefix: A's 64-token system prompt (4 blocks) is evicted from
// the GPU's 100 blocks by three 800-token prompts that come after it; B, with the same system
// prompt, then finds nothing in the GPU's cache. Without an offload tier B prefills all 80
// tokens: 1,000 + 800 + 80 = 1,880 µs (TTFT 1,881). With a CPU tier (kv_offload_bytes for
// 400 blocks) A's blocks were copied there as they were computed: B loads 64 tokens of KV
// (64 × 65,536 B over the 25 GB/s host link: 168 µs) and then computes 16 tokens over an
// 80-token context, 1,000 + 160 + 80 = 1,240 µs: TTFT 168 + 1,240 + 1 = 1,409. The tier
// counts 64 hit tokens of the 80 the GPU missed, and the GPU's cache none.
func TestKVOffloadLoadsEvictedPrefix(t *testing.T) {
	sys := &dataplane.Prefix{Group: "sys", GroupTokens: 64}
	reqs := []llm.Request{{ID: 1, Arrival: 0, Prompt: 80, Out: 2, Prefix: sys}}
	for i := range 3 {
		reqs = append(reqs, llm.Request{ID: dataplane.ReqID(2 + i), Arrival: dataplane.Time(10000 * (i + 1)), Prompt: 800, Out: 2})
	}
	reqs = append(reqs, llm.Request{ID: 9, Arrival: 60000, Prompt: 80, Out: 2, Prefix: sys})
	for _, tc := range []struct {
		name                   string
		offload                int64
		ttft                   dataplane.Time
		gpuHits, cpuHits, cpuQ int64
	}{
		{"no tier", 0, 1881, 0, 0, 0},
		{"cpu tier", 400 * 16 * 65536, 1409, 0, 64, 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := linearProfile(true)
			p.KVBytesPerToken = 65536
			p.Engine.KVOffloadBytes = tc.offload
			res, ctr := llm.Replay(llm.NewModel(p), reqs, fcfs.New())
			b := res[len(res)-1]
			if got := b.FirstToken - 60000; got != tc.ttft {
				t.Errorf("B's TTFT %d µs, want %d", got, tc.ttft)
			}
			// A's own query hits nothing; the fillers share nothing.
			if h := ctr.PrefixHits.Load(); h != tc.gpuHits {
				t.Errorf("GPU prefix-cache hits %d tokens, want %d (A's blocks evicted)", h, tc.gpuHits)
			}
			if q, h := ctr.OffloadQueries.Load(), ctr.OffloadHits.Load(); h != tc.cpuHits || (tc.offload > 0 && q < tc.cpuQ) {
				t.Errorf("offload tier: %d hits of %d queries, want %d of at least %d", h, q, tc.cpuHits, tc.cpuQ)
			}
			if b.Cached != int(tc.cpuHits) {
				t.Errorf("B's cached tokens %d, want %d", b.Cached, tc.cpuHits)
			}
		})
	}
}
