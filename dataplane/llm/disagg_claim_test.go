package llm_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/formats"
)

// longProfiles is one synthetic 8B-class model on an H100 (step curves of the shape of
// measured vLLM steps, not a measurement): a step is memory-bound up to 256 tokens, 6–10 ms
// whether its tokens are prompt or decode tokens (weights 16 GB at ~3 TB/s), then
// compute-bound at ~39 µs per token (16 GFLOP per token at ~400 TFLOP/s; 2,048 tokens: 80 ms);
// plus 0.02 µs per context token; KV 128 KiB per token (Llama-3-8B: 2·32·8·128·2 bytes),
// 200,000 tokens of cache; budget 2,048 tokens. The same profile serves both roles.
func longProfiles() (pre, dec *formats.LLMProfile) {
	p := &formats.LLMProfile{Model: "m8b", GPU: "H100", GPUCount: 1, KVBytesPerToken: 131072, KVCapacityTokens: 200000,
		Iteration: &formats.LLMIteration{
			Prefill:                 []formats.PWLPoint{{Tokens: 1, Us: 6000}, {Tokens: 64, Us: 7000}, {Tokens: 256, Us: 10000}, {Tokens: 512, Us: 20000}, {Tokens: 2048, Us: 80000}, {Tokens: 8192, Us: 320000}},
			Decode:                  []formats.PWLPoint{{Tokens: 1, Us: 6000}, {Tokens: 64, Us: 7000}, {Tokens: 256, Us: 10000}},
			DecodeUsPerContextToken: 0.02,
		}, Engine: &formats.LLMEngine{MaxNumBatchedTokens: 2048}}
	return p, p
}

// poisson is n requests of prompt and out tokens arriving as a seeded Poisson process of
// rate per second.
func poisson(seed uint64, n int, rate float64, prompt, out int) []llm.Request {
	rng := rand.New(rand.NewPCG(seed, 0))
	reqs := make([]llm.Request, n)
	t := 0.0
	for i := range reqs {
		t += rng.ExpFloat64() / rate
		reqs[i] = llm.Request{ID: dataplane.ReqID(i + 1), Arrival: dataplane.Time(t * 1e6), Prompt: prompt, Out: out}
	}
	return reqs
}

// aggregated replays reqs on n aggregated instances of p, requests dealt round-robin in
// arrival order (identical instances, Poisson arrivals), each FCFS.
func aggregated(p *formats.LLMProfile, n int, reqs []llm.Request) []llm.Result {
	m := llm.NewModel(p)
	parts := make([][]llm.Request, n)
	for i, r := range reqs {
		parts[i%n] = append(parts[i%n], r)
	}
	var out []llm.Result
	for _, part := range parts {
		res, _ := llm.Replay(m, part, fcfs.New())
		out = append(out, res...)
	}
	return out
}

// p99 are the 99th percentiles (nearest rank) of TTFT and TPOT in µs of results whose
// requests asked for out tokens; ok is false when one was refused or never finished.
func p99(res []llm.Result, reqs []llm.Request, out int) (ttft, tpot float64, ok bool) {
	arr := map[dataplane.ReqID]dataplane.Time{}
	for _, r := range reqs {
		arr[r.ID] = r.Arrival
	}
	var a, b []float64
	for _, r := range res {
		if r.Refused || r.Done == dataplane.Never {
			return 0, 0, false
		}
		a = append(a, float64(r.FirstToken-arr[r.ID]))
		b = append(b, float64(r.Done-r.FirstToken)/float64(out-1))
	}
	slices.Sort(a)
	slices.Sort(b)
	k := (99*len(a)+99)/100 - 1
	return a[k], b[k], true
}

// TestDisaggWinsLongPromptTightTPOT is llm-deploy-search §2's claim (DistServe §2.3, §7;
// TaiChi): with long prompts and a tight TPOT, colocated prefill chunks stretch every decode
// step they share, so 1 prefill + 1 decode instance meet a TPOT p99 that 2 aggregated
// instances of the same GPUs miss. 8,000-token prompts, 200 output tokens, 1.2 requests/s,
// KV over 50 GB/s (inter-node NDR, §1 "Links"): 21 ms per transfer.
func TestDisaggWinsLongPromptTightTPOT(t *testing.T) {
	const sloTPOT = 8000.0 // µs: tight, under 1.5× an unloaded decode step
	pre, dec := longProfiles()
	reqs := poisson(1, 400, 1.2, 8000, 200)
	dres, _, err := llm.ReplayDisaggProfiles(pre, dec, 1, 1, 50, reqs)
	if err != nil {
		t.Fatal(err)
	}
	dTTFT, dTPOT, ok1 := p99(dres, reqs, 200)
	aTTFT, aTPOT, ok2 := p99(aggregated(pre, 2, reqs), reqs, 200)
	t.Logf("p99 TTFT/TPOT (ms): disagg 1P+1D %.1f / %.2f, aggregated 2× %.1f / %.2f; TPOT SLO %.0f ms",
		dTTFT/1e3, dTPOT/1e3, aTTFT/1e3, aTPOT/1e3, sloTPOT/1e3)
	if !ok1 || !ok2 {
		t.Fatal("a request was refused or never finished")
	}
	if !(dTPOT <= sloTPOT && aTPOT > sloTPOT) {
		t.Fatalf("TPOT p99: disagg %.0f µs, aggregated %.0f µs: want disagg within %.0f and aggregated over", dTPOT, aTPOT, sloTPOT)
	}
}

// capacity is the highest rate of a grid at which run's p99 TTFT and TPOT meet the SLOs.
func capacity(rates []float64, prompt, out int, sloTTFT, sloTPOT float64, run func([]llm.Request) []llm.Result) float64 {
	best := 0.0
	for _, r := range rates {
		reqs := poisson(3, 2000, r, prompt, out)
		ttft, tpot, ok := p99(run(reqs), reqs, out)
		if ok && ttft <= sloTTFT && tpot <= sloTPOT {
			best = r
		}
	}
	return best
}

// TestAggregatedWinsShortPrompt is the other side of §2 (DistServe §7 "few GPUs → don't
// split"; vLLM: disaggregation "does not improve throughput"; TaiChi: aggregation for a loose
// TPOT): with short prompts the work is decode, and two aggregated instances decode with
// both GPUs' KV caches where 1P+1D decodes with one, so at a loose TPOT the aggregated
// deployment serves at least the rate the disaggregated one does. (At a tight 15 ms TPOT the
// two are within one grid step of each other on this profile: a decode-only batch is cheap.)
func TestAggregatedWinsShortPrompt(t *testing.T) {
	pre, dec := longProfiles()
	var rates []float64
	for r := 50.0; r <= 400; r += 10 {
		rates = append(rates, r)
	}
	const sloTTFT, sloTPOT = 1e6, 50e3 // µs: a loose TPOT (TaiChi: aggregation's side)
	d := capacity(rates, 128, 200, sloTTFT, sloTPOT, func(r []llm.Request) []llm.Result {
		res, _, err := llm.ReplayDisaggProfiles(pre, dec, 1, 1, 50, r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	})
	a := capacity(rates, 128, 200, sloTTFT, sloTPOT, func(r []llm.Request) []llm.Result { return aggregated(pre, 2, r) })
	t.Logf("short prompts (128 in, 200 out), p99 TTFT ≤ %.0f ms and TPOT ≤ %.0f ms: aggregated 2× %.0f req/s, disagg 1P+1D %.0f req/s",
		sloTTFT/1e3, sloTPOT/1e3, a, d)
	if a < d || a == 0 {
		t.Fatalf("aggregated %.0f req/s < disaggregated %.0f", a, d)
	}
}
