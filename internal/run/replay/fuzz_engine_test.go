package replay

import (
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/profiler/llm"
)

// FuzzEngineFields: any engine block a profile validates with — the token and sequence
// budgets, block size, max_model_len, KV capacity and bytes, the CPU offload tier and host
// link, prefix caching, the vLLM release — builds an engine that replays a small trace to
// the end: no panic, every request answered or refused with a reason, and the work bounded
// by the fields' validated ranges (the fuzzer's per-input timeout catches a hang).
func FuzzEngineFields(f *testing.F) {
	f.Add(2048, 128, 16, 4096, int64(100_000), int64(0), 25.0, true, "0.15")
	f.Add(16, 1, 16, 0, int64(64), int64(1<<20), 0.1, true, "0.6")
	f.Add(1<<24, 1<<16, 4096, 1<<20, int64(1<<31-1), int64(1<<40), 1e3, false, "0.11")
	base, err := llm.EstimateOn("llama-3.1-8b", "H100", 1)
	if err != nil {
		f.Fatal(err)
	}
	reg := systems.Default()
	f.Fuzz(func(t *testing.T, batched, seqs, block, maxLen int, kv, offload int64, hostGBps float64, caching bool, version string) {
		p := *base
		e := *p.Engine
		e.MaxNumBatchedTokens, e.MaxNumSeqs, e.BlockSize, e.MaxModelLen = batched, seqs, block, maxLen
		e.KVOffloadBytes, e.EnablePrefixCaching, e.VLLMVersion = offload, &caching, version
		p.Engine, p.KVCapacityTokens, p.HostLinkGBps = &e, kv, hostGBps
		doc := formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile},
			Metadata: formats.Metadata{Name: "fuzz"}, LLMs: []formats.LLMProfile{p}}
		if errs := doc.ValidateFor(formats.UseReplay); len(errs) > 0 {
			return // refused by name: the bounds are the validation's
		}
		tr := &formats.Trace{}
		for i := range 20 {
			tr.Requests = append(tr.Requests, formats.TraceRequest{TimeUs: int64(i) * 50_000, InputTokens: 100 + 37*i, OutputTokens: 1 + 11*i,
				PrefixGroup: formats.PrefixGroup([]string{"a", "b"}[i%2]), PrefixTokens: 64})
		}
		recs, err := Records(reg, p, "fuzz", tr)
		if err != nil {
			return // a trace the engine refuses whole (a prompt past its KV), said as an error
		}
		if len(recs) != len(tr.Requests) {
			t.Fatalf("%d records for %d requests", len(recs), len(tr.Requests))
		}
		for _, r := range recs {
			if r.Outcome == "" || (r.Outcome != "completed" && r.Outcome != "late" && r.Reason == "") {
				t.Fatalf("request %d: outcome %q without a reason", r.ID, r.Outcome)
			}
		}
	})
}
