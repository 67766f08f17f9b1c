package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/sim"
)

// TestSimulateLLMEnginePrefixCache: the one-engine replay of a trace whose requests share a
// 1,024-token system prompt (prefix_group) reports the prefix cache's hit rate and cached
// tokens — in the text report, the JSON report and each --requests-out record — when prefix
// caching is on (the profile says so, or says nothing: vLLM V1's default), and the cached
// prefill lowers TTFT; with enable_prefix_caching false nothing about the cache is reported.
func TestSimulateLLMEnginePrefixCache(t *testing.T) {
	dir := t.TempDir()
	var prof map[string]any
	data, err := os.ReadFile(engineFixture("profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &prof); err != nil {
		t.Fatal(err)
	}
	// withCaching writes the fixture profile with enable_prefix_caching set to v.
	withCaching := func(name string, v bool) string {
		entry := prof["llms"].([]any)[0].(map[string]any)
		eng, _ := entry["engine"].(map[string]any)
		if eng == nil {
			eng = map[string]any{}
		}
		eng["enable_prefix_caching"] = v
		entry["engine"] = eng
		path := filepath.Join(dir, name)
		b, _ := json.Marshal(prof)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	on, off := withCaching("profile-apc.json", true), withCaching("profile-no-apc.json", false)
	// Twelve requests 0.5 s apart: a 1,024-token system prompt and 200 tokens of their own.
	var rows []string
	for i := range 12 {
		rows = append(rows, fmt.Sprintf(`{"t_us":%d,"input_tokens":1224,"output_tokens":20,"prefix_group":"sys","prefix_tokens":1024}`, i*500000))
	}
	trace := filepath.Join(dir, "trace.json")
	doc := `{"apiVersion":"plan/v1","kind":"Trace","metadata":{"name":"sys"},"requests":[` + strings.Join(rows, ",\n") + "]}"
	if err := os.WriteFile(trace, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(profile string, extra ...string) (sim.EngineReport, []map[string]any, string) {
		out := filepath.Join(dir, "req.jsonl")
		code, stdout, stderr := runCLI(t, append([]string{"simulate", "--llm", "--profile", profile, "--trace", trace, "--requests-out", out, "-q"}, extra...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var rep sim.EngineReport
		if len(extra) > 0 {
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
		}
		var recs []map[string]any
		raw, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var r map[string]any
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
		return rep, recs, stdout
	}
	repOn, recsOn, _ := run(on, "-O", "json")
	repOff, recsOff, _ := run(off, "-O", "json")
	// The fixture says nothing: caching is on, vLLM V1's default.
	repDefault, _, _ := run(engineFixture("profile.json"), "-O", "json")
	if d, o := repDefault.PrefixCache, repOn.PrefixCache; d == nil || o == nil || *d != *o {
		t.Errorf("default profile's prefix cache %+v, want the enabled profile's %+v", d, o)
	}
	// The first request computes all; each later one finds the group's 64 full blocks.
	c := repOn.PrefixCache
	if c == nil || c.QueriedTokens != 12*1224 || c.CachedTokens != 11*1024 || c.HitRate != 0.766885 {
		t.Errorf("prefix cache %+v, want 11×1024 of 12×1224 tokens", c)
	}
	if repOff.PrefixCache != nil {
		t.Errorf("caching off reports %+v", repOff.PrefixCache)
	}
	for i, r := range recsOn {
		want := 1024.0
		if i == 0 {
			want = 0
		}
		if got, _ := r["cached_tokens"].(float64); got != want {
			t.Errorf("record %d: cached_tokens %v, want %v", i, r["cached_tokens"], want)
		}
		if _, ok := recsOff[i]["cached_tokens"]; ok {
			t.Errorf("record %d without caching has cached_tokens", i)
		}
	}
	if on, off := repOn.Classes[0].TTFT.MeanUs, repOff.Classes[0].TTFT.MeanUs; !(on < off) {
		t.Errorf("mean TTFT %g µs with caching, %g without: want lower", on, off)
	}
	_, _, text := run(on)
	if !strings.Contains(text, "prefix cache: hit rate 76.7%, 11264 of 14688 prompt tokens cached") || !strings.Contains(text, "enable_prefix_caching true,") {
		t.Errorf("text report lacks the prefix cache:\n%s", text)
	}
	if _, _, text := run(off); !strings.Contains(text, "enable_prefix_caching false,") {
		t.Errorf("text report does not name caching off:\n%s", text)
	}
}

// TestSimulateLLMEngineOffload: a profile with a CPU KV offload tier (engine.kv_offload_bytes)
// names it among the replay's engine settings and reports the tier's hit rate — loaded
// tokens of the prompt tokens the GPU's prefix cache missed — in text and JSON; eight system
// prompts cycling through a GPU cache that holds six thrash it, and the tier serves them.
// Without kv_bytes_per_token the tier would have no blocks: refused, naming the field.
func TestSimulateLLMEngineOffload(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(engineFixture("profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, kvBytes int) string {
		var prof map[string]any
		if err := json.Unmarshal(data, &prof); err != nil {
			t.Fatal(err)
		}
		entry := prof["llms"].([]any)[0].(map[string]any)
		entry["kv_bytes_per_token"], entry["kv_capacity_tokens"], entry["host_link_gbps"] = kvBytes, 20000, 25
		entry["engine"].(map[string]any)["kv_offload_bytes"] = 1e10
		path := filepath.Join(dir, name)
		b, _ := json.Marshal(prof)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var rows []string
	for i := range 40 {
		rows = append(rows, fmt.Sprintf(`{"t_us":%d,"input_tokens":3000,"output_tokens":20,"prefix_group":"g%d","prefix_tokens":2048}`, i*300000, i%8))
	}
	trace := filepath.Join(dir, "trace.json")
	doc := `{"apiVersion":"plan/v1","kind":"Trace","metadata":{"name":"sys"},"requests":[` + strings.Join(rows, ",\n") + "]}"
	if err := os.WriteFile(trace, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		kvBytes int
		json    bool
		code    int
		want    []string
	}{
		{name: "text", kvBytes: 131072, code: 0, want: []string{"kv_offload_bytes 10000000000,", "CPU KV offload (kv_offload_bytes 10000000000): hit rate "}},
		{name: "json", kvBytes: 131072, json: true, code: 0},
		{name: "no KV bytes", kvBytes: 0, code: ExitUsage, want: []string{"kv_bytes_per_token: 0: missing: engine.kv_offload_bytes 10000000000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"simulate", "--llm", "--profile", write(tc.name+".json", tc.kvBytes), "--trace", trace, "-q"}
			if tc.json {
				args = append(args, "-O", "json")
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output lacks %q:\n%s%s", w, stdout, stderr)
				}
			}
			if !tc.json {
				return
			}
			var rep sim.EngineReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			o := rep.KVOffload
			if o == nil || o.Bytes != 1e10 || o.LoadedTokens <= 0 || o.LoadedTokens > o.QueriedTokens || o.HitRate <= 0 {
				t.Fatalf("kv_offload %+v: want the tier's loads", o)
			}
			if !slices.ContainsFunc(rep.Engine, func(s sim.EngineSetting) bool { return s.Name == "kv_offload_bytes" && s.Value == "10000000000" }) {
				t.Errorf("engine settings %+v lack kv_offload_bytes", rep.Engine)
			}
		})
	}
}
