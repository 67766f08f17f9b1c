package llm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/prefixcache"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/formats"
)

// linearProfile has a prefill step of 1,000 µs + 10 µs per scheduled token and a flat
// 500 µs decode step, plus 1 µs per context token the step's sequences hold (cached ones
// included), no output delay, block 16, budget 2,048 and KV for 1,600 tokens: timelines with
// and without prefix caching are computable by hand.
func linearProfile(apc bool) *formats.LLMProfile {
	zero := 0
	return &formats.LLMProfile{Model: "m", GPU: "A100", GPUCount: 1, KVBytesPerToken: 1, KVCapacityTokens: 1600,
		Iteration: &formats.LLMIteration{
			Prefill:                 []formats.PWLPoint{{Tokens: 1, Us: 1010}, {Tokens: 1001, Us: 11010}},
			Decode:                  []formats.PWLPoint{{Tokens: 1, Us: 500}},
			DecodeUsPerContextToken: 1,
		}, Engine: &formats.LLMEngine{MaxNumBatchedTokens: 2048, OutputDelaySteps: &zero, EnablePrefixCaching: new(apc)}}
}

// TestPrefixCacheSharedPrefix: two 80-token prompts whose first 64 tokens are one system
// prompt (prefix group "sys", 4 blocks of 16). A: s1 prefill 80 tokens, 1,000 + 800 + 80
// context = 1,880 → first token at 1,881; s2 decode (context 81) 581 → done 2,462. B alone
// at 10,000: without caching the same 1,880 µs prefill (TTFT 1,881); with caching its 4
// blocks are cached (the cap (80 − 1)/16 = 4 blocks allows all of them), so it computes 16
// tokens over an 80-token context: 1,000 + 160 + 80 = 1,240 (TTFT 1,241) — 640 µs less,
// the prefill time of the 64 cached tokens. B at 0 beside A: both prefill in A's step
// without caching (160 tokens: 1,000 + 1,600 + 160 = 2,760); with caching B is admitted
// after A in the same step and hits the blocks A's chunk registered (vLLM caches blocks as
// they are scheduled), so the step computes 96 tokens: 1,000 + 960 + 160 = 2,120.
func TestPrefixCacheSharedPrefix(t *testing.T) {
	sys := &dataplane.Prefix{Group: "sys", GroupTokens: 64}
	cases := []struct {
		name     string
		bAt      dataplane.Time
		apc      bool
		ttft     [2]dataplane.Time
		cached   int
		hitRatio float64
	}{
		{"sequential, off", 10000, false, [2]dataplane.Time{1881, 1881}, 0, 0},
		{"sequential, on", 10000, true, [2]dataplane.Time{1881, 1241}, 64, 64.0 / 160},
		{"same step, off", 0, false, [2]dataplane.Time{2761, 2761}, 0, 0},
		{"same step, on", 0, true, [2]dataplane.Time{2121, 2121}, 64, 64.0 / 160},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reqs := []llm.Request{{ID: 1, Arrival: 0, Prompt: 80, Out: 2, Prefix: sys}, {ID: 2, Arrival: tc.bAt, Prompt: 80, Out: 2, Prefix: sys}}
			res, ctr := llm.Replay(llm.NewModel(linearProfile(tc.apc)), reqs, fcfs.New())
			for i, r := range res {
				if got := r.FirstToken - reqs[i].Arrival; got != tc.ttft[i] {
					t.Errorf("request %d: TTFT %d µs, want %d", i, got, tc.ttft[i])
				}
			}
			if res[0].Cached != 0 || res[1].Cached != tc.cached {
				t.Errorf("cached tokens %d, %d; want 0, %d", res[0].Cached, res[1].Cached, tc.cached)
			}
			q, h := ctr.PrefixQueries.Load(), ctr.PrefixHits.Load()
			var rate float64
			if q > 0 {
				rate = float64(h) / float64(q)
			}
			if rate != tc.hitRatio || (tc.apc && q != 160) {
				t.Errorf("prefix cache: %d hits of %d queries, want rate %g of 160", h, q, tc.hitRatio)
			}
		})
	}
}

// TestPrefixCacheUniquePromptsKeepTimelines: prompts that share nothing never hit, so with
// caching on the KV timelines of kvCases are unchanged — except where a preempted request
// comes back: it hits its own cached blocks (llm-engine-2 §1, preemption). In "chunk
// preempts" B's first chunk (63 tokens) registered 3 full blocks; at s4 B finds them cached
// and needs 48 more tokens (blocks for 96 in all), which do not fit beside A's 80, so under
// the chunk rule B now waits for A instead of thrashing: one preemption instead of two.
func TestPrefixCacheUniquePromptsKeepTimelines(t *testing.T) {
	for _, tc := range kvCases() {
		t.Run(tc.name, func(t *testing.T) {
			tc.engine.EnablePrefixCaching = new(true)
			res, ctr := llm.Replay(llm.NewModel(flatProfile(tc.engine)), kvRequests, fcfs.New())
			if tc.preemptions > 0 {
				if n := ctr.Preemptions.Load(); n != 1 || res[1].Cached != 48 || ctr.PrefixHits.Load() != 48 {
					t.Errorf("preemptions %d, B cached %d (hits %d): want 1 and B's own 48 tokens", n, res[1].Cached, ctr.PrefixHits.Load())
				}
				return
			}
			for i, r := range res {
				at := kvRequests[i].Arrival
				if r.Refused || r.FirstToken-at != tc.ttft[i] || r.Done-at != tc.e2e[i] || r.Cached != 0 {
					t.Errorf("request %d: refused %v ttft %d e2e %d cached %d, want %d %d 0", i, r.Refused, r.FirstToken-at, r.Done-at, r.Cached, tc.ttft[i], tc.e2e[i])
				}
			}
			if ctr.PrefixHits.Load() != 0 || ctr.PrefixQueries.Load() != 64+96 {
				t.Errorf("prefix cache: %d hits of %d queries, want 0 of 160", ctr.PrefixHits.Load(), ctr.PrefixQueries.Load())
			}
		})
	}
}

// sessionProfile is an engine for the session trace: a prefill step of 5 ms + 10 µs per
// token, decode 5–8 ms by batch, block 16, a budget that holds any prompt of the trace whole
// (8,192) with chunked prefill off, and KV for 4M tokens (nothing is ever evicted).
func sessionProfile(apc bool) *formats.LLMProfile {
	off := false
	return &formats.LLMProfile{Model: "m", GPU: "H100", GPUCount: 1, KVBytesPerToken: 1, KVCapacityTokens: 4 << 20,
		Iteration: &formats.LLMIteration{
			Prefill:                 []formats.PWLPoint{{Tokens: 1, Us: 5000}, {Tokens: 8192, Us: 5000 + 81920}},
			Decode:                  []formats.PWLPoint{{Tokens: 1, Us: 5000}, {Tokens: 256, Us: 8000}},
			DecodeUsPerContextToken: 0.01,
		}, Engine: &formats.LLMEngine{MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024, EnableChunkedPrefill: &off, EnablePrefixCaching: new(apc)}}
}

// sessionRequests are a Mooncake-style trace (prefixcache.DefaultSessions) as Replay requests.
func sessionRequests(t testing.TB, seed int64) ([]llm.Request, []prefixcache.TraceRow) {
	rows, err := prefixcache.Sessions(prefixcache.DefaultSessions(seed))
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]llm.Request, len(rows))
	for i, r := range rows {
		reqs[i] = llm.Request{ID: dataplane.ReqID(i), Arrival: dataplane.Time(r.TimestampMs) * 1000, Prompt: r.InputLength, Out: r.OutputLength,
			Prefix: &dataplane.Prefix{HashIDs: r.HashIDs, HashBlockTokens: 512}}
	}
	return reqs, rows
}

// referenceHits is an independent count of what a never-evicting prefix cache of 16-token
// blocks hits when requests are admitted in trace order, each prompt computed whole at its
// admission: a block is named by the token identities it holds — the Mooncake ids up to the
// one holding it and its offset in that id (512 is a multiple of 16, so no block spans two
// ids) — and a request hits the longest run of its leading full blocks some earlier prompt
// held, at most (prompt − 1)/16 of them (llm-engine-2 §2). No hashing, no pool.
func referenceHits(rows []prefixcache.TraceRow) []int {
	const block = 16
	seen := map[string]bool{}
	hits := make([]int, len(rows))
	for i, r := range rows {
		keys := make([]string, r.InputLength/block)
		for j := range keys {
			id := j * block / 512
			ids := make([]string, id+1)
			for k := range ids {
				ids[k] = fmt.Sprint(r.HashIDs[k])
			}
			keys[j] = strings.Join(ids, ",") + fmt.Sprintf("@%d", j*block%512)
		}
		n := 0
		for n < min(len(keys), (r.InputLength-1)/block) && seen[keys[n]] {
			n++
		}
		hits[i] = n * block
		for _, k := range keys {
			seen[k] = true
		}
	}
	return hits
}

// TestPrefixCacheSessionsMatchReference: on a generated Mooncake-style session trace the
// engine's per-request cached tokens and its counters equal the independent reference, and
// TTFT falls with caching on.
func TestPrefixCacheSessionsMatchReference(t *testing.T) {
	for _, seed := range []int64{1, 7} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			reqs, rows := sessionRequests(t, seed)
			want := referenceHits(rows)
			on, ctr := llm.Replay(llm.NewModel(sessionProfile(true)), reqs, fcfs.New())
			off, _ := llm.Replay(llm.NewModel(sessionProfile(false)), reqs, fcfs.New())
			var hits, queries int64
			var ttftOn, ttftOff dataplane.Time
			for i, r := range on {
				if r.Refused || r.Cached != want[i] {
					t.Fatalf("request %d (session %d turn %d): refused %v, cached %d tokens, reference %d", i, rows[i].Session, rows[i].Turn, r.Refused, r.Cached, want[i])
				}
				hits += int64(want[i])
				queries += int64(reqs[i].Prompt)
				ttftOn += r.FirstToken - reqs[i].Arrival
				ttftOff += off[i].FirstToken - reqs[i].Arrival
			}
			if ctr.PrefixHits.Load() != hits || ctr.PrefixQueries.Load() != queries || ctr.Preemptions.Load() != 0 {
				t.Errorf("counters: %d hits of %d queries, %d preemptions; reference %d of %d, none", ctr.PrefixHits.Load(), ctr.PrefixQueries.Load(), ctr.Preemptions.Load(), hits, queries)
			}
			rate := float64(hits) / float64(queries)
			t.Logf("%d requests: hit rate %.3f, mean TTFT %.1f ms on, %.1f ms off", len(reqs), rate, float64(ttftOn)/float64(len(reqs))/1e3, float64(ttftOff)/float64(len(reqs))/1e3)
			if rate < 0.3 || ttftOn >= ttftOff {
				t.Errorf("hit rate %.3f, TTFT sum %d on vs %d off: want shared system prompts to hit and TTFT to fall", rate, ttftOn, ttftOff)
			}
		})
	}
}
