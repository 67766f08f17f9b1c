package formats

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// replayProfile is testdata/replay/engine-only.json with its one LLM entry edited by edit.
func replayProfile(t testing.TB, edit func(l map[string]any)) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "replay", "engine-only.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(doc["llms"].([]any)[0].(map[string]any))
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withPlannerFields gives an LLM entry every planner-only field.
func withPlannerFields(l map[string]any) {
	for k, v := range map[string]any{"params_billion": 8, "weight_bytes": 16e9, "prefill_base_us": 5000, "prefill_us_per_token": 40,
		"decode_us_per_token": 9000, "throughput_tokens_per_s": 3000, "kv_bytes_per_token": 131072, "avg_batch": 32,
		"load_cold_us": 8e6, "load_warm_us": 6e5} {
		l[k] = v
	}
}

// TestProfileUse: the ten planner-only fields of an LLM profile are required for planning
// (the default, and Validate) and optional for one engine's replay, which requires what the
// engine reads instead; a planner-only field given is checked either way.
func TestProfileUse(t *testing.T) {
	missing := func(fields ...string) []string {
		var out []string
		for _, f := range fields {
			out = append(out, "llms[0]."+f+": missing required field")
		}
		return out
	}
	cases := []struct {
		name string
		data []byte
		use  ProfileUse
		want []string // every problem's text, in order (nil: the profile is good)
	}{
		{"engine-only for planning", replayProfile(t, nil), UsePlan, missing(PlannerOnlyLLMFields...)},
		{"engine-only for replay", replayProfile(t, nil), UseReplay, nil},
		{"complete for planning", replayProfile(t, withPlannerFields), UsePlan, nil},
		{"complete for replay", replayProfile(t, withPlannerFields), UseReplay, nil},
		{"one left out for planning", replayProfile(t, func(l map[string]any) { withPlannerFields(l); delete(l, "avg_batch") }), UsePlan, missing("avg_batch")},
		{"a planner field given wrong, replay", replayProfile(t, func(l map[string]any) { l["weight_bytes"] = -1 }), UseReplay,
			[]string{"llms[0].weight_bytes: -1: must be > 0"}},
		{"no iteration, no scalar times, replay", replayProfile(t, func(l map[string]any) { delete(l, "iteration") }), UseReplay,
			[]string{"llms[0].prefill_us_per_token: missing: without iteration curves", "llms[0].decode_us_per_token: missing: without iteration curves"}},
		{"no iteration, scalar times, replay", replayProfile(t, func(l map[string]any) {
			delete(l, "iteration")
			l["prefill_us_per_token"], l["decode_us_per_token"] = 40, 9000
		}), UseReplay, nil},
		{"swap space without KV bytes, replay", replayProfile(t, func(l map[string]any) { l["engine"].(map[string]any)["swap_space"] = 4 }), UseReplay,
			[]string{"llms[0].kv_bytes_per_token: missing: engine.swap_space 4 swaps preempted KV"}},
		{"offload tier without KV bytes, replay", replayProfile(t, func(l map[string]any) {
			l["engine"].(map[string]any)["kv_offload_bytes"] = 1e10
			l["kv_bytes_per_token"] = 0
		}), UseReplay, []string{"llms[0].kv_bytes_per_token: 0: missing: engine.kv_offload_bytes 10000000000 holds KV blocks"}},
		// Every field that scales a simulated engine's memory or time is bounded.
		{"KV capacity 2^62, replay", replayProfile(t, func(l map[string]any) { l["kv_capacity_tokens"] = int64(1) << 62 }), UseReplay,
			[]string{"llms[0].kv_capacity_tokens: 4611686018427387904: must be <= 2147483647 (2^31-1)"}},
		{"host link 1e-9 GB/s, replay", replayProfile(t, func(l map[string]any) { l["host_link_gbps"] = 1e-9 }), UseReplay,
			[]string{"llms[0].host_link_gbps: 1e-09: must be 0 (the default, 25 GB/s) or >= 0.1 GB/s"}},
		{"KV bytes 2^40 a token, replay", replayProfile(t, func(l map[string]any) { l["kv_bytes_per_token"] = int64(1) << 40 }), UseReplay,
			[]string{"llms[0].kv_bytes_per_token: 1099511627776: must be <= 16777216 (16 MiB)"}},
		{"2^20 sequences, replay", replayProfile(t, func(l map[string]any) { l["engine"].(map[string]any)["max_num_seqs"] = 1 << 20 }), UseReplay,
			[]string{"llms[0].engine.max_num_seqs: 1048576: must be in [0, 65536]"}},
		{"2^30 batched tokens, replay", replayProfile(t, func(l map[string]any) { l["engine"].(map[string]any)["max_num_batched_tokens"] = 1 << 30 }), UseReplay,
			[]string{"llms[0].engine.max_num_batched_tokens: 1073741824: must be in [0, 16777216]"}},
		{"2^20-token blocks, replay", replayProfile(t, func(l map[string]any) { l["engine"].(map[string]any)["block_size"] = 1 << 20 }), UseReplay,
			[]string{"llms[0].engine.block_size: 1048576: must be in [0, 4096]", "llms[0].engine.max_num_batched_tokens: 2048: must be >= block_size (1048576)"}},
		{"2^20 partial prefills, replay", replayProfile(t, func(l map[string]any) { l["engine"].(map[string]any)["max_num_partial_prefills"] = 1 << 20 }), UseReplay,
			[]string{"llms[0].engine.max_num_partial_prefills: 1048576: must be in [0, 65536]"}},
		{"the KV capacity is the engine's, replay", replayProfile(t, func(l map[string]any) { delete(l, "kv_capacity_tokens") }), UseReplay,
			missing("kv_capacity_tokens")},
		{"other problems are not relaxed, replay", replayProfile(t, func(l map[string]any) { l["avg_batchh"] = 3 }), UseReplay,
			[]string{"llms[0].avg_batchh: unknown field (did you mean avg_batch?)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeProfileFor("p.json", c.data, c.use)
			var got []string
			for _, e := range Problems(err) {
				got = append(got, e.Error())
			}
			if len(got) != len(c.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(got[i], "p.json: "+w) {
					t.Errorf("problem %d: %q, want %q", i, got[i], "p.json: "+w)
				}
			}
		})
	}
}

// TestProfileUsePlanIsValidate: planning's checks are Validate's, the decoder's default
// (DecodeInto), problem for problem.
func TestProfileUsePlanIsValidate(t *testing.T) {
	for _, edit := range []func(map[string]any){nil, withPlannerFields, func(l map[string]any) {
		withPlannerFields(l)
		l["avg_batch"], l["throughput_tokens_per_s"] = -2, 0
	}} {
		data := replayProfile(t, edit)
		_, errDefault := DecodeInto[*Profile]("p.json", data, nil)
		_, errPlan := DecodeProfileFor("p.json", data, UsePlan)
		a, b := Problems(errDefault), Problems(errPlan)
		if !slices.EqualFunc(a, b, func(x, y *FieldError) bool { return x.Error() == y.Error() }) {
			t.Errorf("DecodeInto %v, DecodeProfileFor(plan) %v", a, b)
		}
	}
}

// TestParseProfileForYAML: a YAML profile leaves out the planner's fields for a replay too,
// and they decode as 0.
func TestParseProfileForYAML(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "replay", "engine-only.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseProfileFor("p.yaml", data, UsePlan); err == nil || len(Problems(err)) != len(PlannerOnlyLLMFields) {
		t.Errorf("planning: %v, want the %d planner-only fields missing", err, len(PlannerOnlyLLMFields))
	}
	p, err := DecodeProfileFor("p.yaml", data, UseReplay)
	if err != nil {
		t.Fatal(err)
	}
	if l := p.LLMs[0]; l.Model != "llama-3-8b" || l.KVCapacityTokens != 4096 || l.ParamsB != 0 || len(l.Iteration.Decode) != 2 {
		t.Errorf("decoded %+v", l)
	}
}

func TestParseProfileUse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ProfileUse
		ok   bool
	}{{"plan", UsePlan, true}, {"replay", UseReplay, true}, {"", "", false}, {"Replay", "", false}} {
		got, err := ParseProfileUse(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("%q: %q, %v", c.in, got, err)
		}
	}
}

// FuzzParseProfileFor: decoding a profile for a replay never panics, accepts everything
// planning accepts, and what it accepts for a replay validates the same after a round trip.
func FuzzParseProfileFor(f *testing.F) {
	fuzzSeeds(f)
	f.Add(replayProfile(f, nil))
	f.Add(replayProfile(f, withPlannerFields))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, errPlan := DecodeProfileFor("fuzz", data, UsePlan)
		p, err := DecodeProfileFor("fuzz", data, UseReplay)
		if errPlan == nil && err != nil {
			t.Fatalf("planning accepts what a replay refuses: %v", err)
		}
		if err != nil {
			if len(Problems(err)) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		out, err := Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeProfileFor("fuzz", out, UseReplay); err != nil {
			t.Fatalf("re-decoding the marshaled profile: %v\n%s", err, out)
		}
	})
}
