package qlm

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/sim"
)

// bundledLLMProfiles are every LLM profile the repository bundles (the Profile documents
// under testdata, the benches' data and the CLI's fixtures, less the bad inputs), by path.
func bundledLLMProfiles(t *testing.T) map[string]*formats.Profile {
	t.Helper()
	out := map[string]*formats.Profile{}
	roots := []string{"testdata", "bench", "cmd/plan/internal/cli/testdata", "formats/testdata"}
	for _, r := range roots {
		root := filepath.Join("..", "..", r)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || filepath.Ext(path) != ".json" || strings.Contains(filepath.ToSlash(path), "/bad/") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var head struct {
				Kind string          `json:"kind"`
				LLMs json.RawMessage `json:"llms"`
			}
			if json.Unmarshal(b, &head) != nil || head.Kind != "Profile" || len(head.LLMs) == 0 {
				return nil
			}
			// Replay profiles hold the engine fields alone: the engine reads them all the same.
			p, err := formats.ReadProfileFor(path, formats.UseReplay)
			if err != nil {
				t.Errorf("bundled profile %s: %v", path, err)
				return nil
			}
			if len(p.LLMs) > 0 {
				out[path] = p
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestEngineSettingsAgree: for every bundled LLM profile, the LLM engine (llm.NewModel), the
// simulator's engine report and the QLM planner's capacity rule see the same
// max_num_batched_tokens, max_num_seqs, block_size and KV capacity, and those are the
// precedence the engine documents, worked out here from the profile itself: the engine
// block, else the iteration fields, else vLLM V1's default for the GPU.
func TestEngineSettingsAgree(t *testing.T) {
	profs := bundledLLMProfiles(t)
	if len(profs) < 10 {
		t.Fatalf("found %d bundled LLM profiles, want at least 10: the walk misses them", len(profs))
	}
	var large, engineSeqs int // profiles whose defaults, or engine block, the test exercises
	for path, p := range profs {
		for i := range p.LLMs {
			l := p.LLMs[i]
			name := path + ": " + l.Model + "@" + l.GPU
			want := expectedSettings(l)
			if _, seqs := formats.DefaultBatchedTokens(l.GPU); seqs != 256 && (l.Engine == nil || l.Engine.MaxNumSeqs == 0) && (l.Iteration == nil || l.Iteration.MaxSeqs == 0) {
				large++
			}
			if l.Engine != nil && l.Engine.MaxNumSeqs > 0 {
				engineSeqs++
			}

			eng := llm.NewModel(&l)
			gotEng := map[string]int{llm.SetMaxBatched: eng.MaxBatched, llm.SetMaxSeqs: eng.MaxSeqs, llm.SetBlock: eng.Block, llm.SetKVCapacity: eng.KVCap}
			rep := sim.NewEngineReport("p.json", l, "fcfs", true, "t.json", &sim.Point{})
			gotRep := map[string]int{}
			for _, s := range rep.Engine {
				if v, err := strconv.Atoi(s.Value); err == nil {
					gotRep[s.Name] = v
				}
				if s.Source != string(eng.SourceOf(s.Name)) && s.Name != llm.SetKVCapacity {
					t.Errorf("%s: the report says %s came from %s, the engine %s", name, s.Name, s.Source, eng.SourceOf(s.Name))
				}
			}
			for k, w := range want {
				if gotEng[k] != w || gotRep[k] != w {
					t.Errorf("%s: %s: engine %d, report %d, want %d", name, k, gotEng[k], gotRep[k], w)
				}
			}

			// The QLM planner: its batch bound for a request of in + out tokens.
			in, out := 256.0, 128.0
			bound := want[llm.SetMaxSeqs]
			if kv := want[llm.SetKVCapacity]; kv > 0 {
				bound = min(bound, int(float64(kv)/(in+out)))
			}
			if got := newLifeModel(&l).maxBatch(in, out); got != bound {
				t.Errorf("%s: the QLM planner's batch bound %d, the engine's %d", name, got, bound)
			}
			if _, b := Capacity(&l, in, out, time.Hour, 1); b > bound {
				t.Errorf("%s: the QLM planner runs a batch of %d, over the engine's bound %d", name, b, bound)
			}
		}
	}
	t.Logf("%d profiles: %d entries on large-GPU defaults, %d with engine max_num_seqs", len(profs), large, engineSeqs)
	if large == 0 || engineSeqs == 0 {
		t.Errorf("the bundled profiles exercise %d large-GPU defaults and %d engine max_num_seqs: want both", large, engineSeqs)
	}
}

// expectedSettings are the step budgets, block and KV capacity an LLM profile entry states,
// by the documented precedence (formats.LLMEngine: engine block, iteration, default).
func expectedSettings(l formats.LLMProfile) map[string]int {
	tokens, seqs := formats.DefaultBatchedTokens(l.GPU)
	block := 16
	first := func(vs ...int) int {
		for _, v := range vs {
			if v > 0 {
				return v
			}
		}
		return 0
	}
	e, it := l.Engine, l.Iteration
	if e == nil {
		e = &formats.LLMEngine{}
	}
	if it == nil {
		it = &formats.LLMIteration{}
	}
	return map[string]int{
		llm.SetMaxBatched: first(e.MaxNumBatchedTokens, it.MaxBatchedTokens, tokens),
		llm.SetMaxSeqs:    first(e.MaxNumSeqs, it.MaxSeqs, seqs),
		llm.SetBlock:      first(e.BlockSize, it.BlockTokens, block),
		llm.SetKVCapacity: int(l.KVCapacityTokens),
	}
}

// TestCapacityReadsEngineSeqs: the capacity rule's batch is bounded by max_num_seqs as the
// engine resolves it: vLLM V1's 1024 on an H100 (not a flat 256), the engine block's
// max_num_seqs with or without iteration curves, and the engine block over the iteration's
// max_seqs.
func TestCapacityReadsEngineSeqs(t *testing.T) {
	base := func(gpu string) formats.LLMProfile {
		// A flat decode step: the rate B/L(B) grows with B, so a generous SLO runs the
		// largest batch the engine allows.
		return formats.LLMProfile{Model: "m", GPU: gpu, GPUCount: 1, PrefillBaseUs: 100, PrefillUsPerToken: 1,
			DecodeUsPerToken: 10000, KVCapacityTokens: 10_000_000, KVBytesPerToken: 1}
	}
	withEngine := func(l formats.LLMProfile, seqs int) formats.LLMProfile {
		l.Engine = &formats.LLMEngine{MaxNumSeqs: seqs}
		return l
	}
	withIter := func(l formats.LLMProfile, seqs int) formats.LLMProfile {
		l.Iteration = &formats.LLMIteration{Prefill: []formats.PWLPoint{{Tokens: 1, Us: 101}, {Tokens: 2, Us: 102}},
			Decode: []formats.PWLPoint{{Tokens: 1, Us: 10000}}, MaxSeqs: seqs}
		return l
	}
	tests := []struct {
		name string
		prof formats.LLMProfile
		want int
	}{
		{"H100 default", base("H100"), 1024},
		{"A10G default", base("A10G"), 256},
		{"engine max_num_seqs, no iteration", withEngine(base("H100"), 48), 48},
		{"iteration max_seqs", withIter(base("H100"), 100), 100},
		{"engine over iteration", withEngine(withIter(base("H100"), 100), 48), 48},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, b := Capacity(&tc.prof, 100, 100, time.Hour, 1); b != tc.want {
				t.Errorf("batch %d, want %d (the engine's max_num_seqs %d)", b, tc.want, llm.NewModel(&tc.prof).MaxSeqs)
			}
		})
	}
}
