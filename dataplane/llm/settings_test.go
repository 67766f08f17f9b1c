package llm

import (
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestSettingsSources: each resolved setting says where its value came from: vLLM V1's
// default for the GPU, the older iteration fields, the engine block (which wins over them),
// or a flag laid over the profile (which wins over all).
func TestSettingsSources(t *testing.T) {
	seqs := func(n int) *formats.LLMProfile {
		return &formats.LLMProfile{Model: "m", GPU: "H100", KVCapacityTokens: 4096, Engine: &formats.LLMEngine{MaxNumSeqs: n}}
	}
	iter := &formats.LLMIteration{Prefill: []formats.PWLPoint{{Tokens: 1, Us: 10}}, Decode: []formats.PWLPoint{{Tokens: 1, Us: 10}},
		MaxSeqs: 100, MaxBatchedTokens: 1000, BlockTokens: 32}
	off := false
	delay := 0
	tests := []struct {
		name string
		prof *formats.LLMProfile
		flag map[string]int
		want map[string]Setting // by name: value and source
	}{
		{"defaults on an H100", &formats.LLMProfile{Model: "m", GPU: "H100", KVCapacityTokens: 4096}, nil, map[string]Setting{
			SetMaxBatched: {Value: "8192", Source: SourceDefault}, SetMaxSeqs: {Value: "1024", Source: SourceDefault},
			SetBlock: {Value: "16", Source: SourceDefault}, SetMaxModelLen: {Value: "4096", Source: SourceDefault},
			SetPreemptionMode: {Value: "recompute", Source: SourceDefault}, SetKVCapacity: {Value: "4096", Source: SourceProfile}}},
		{"defaults on an A10G", &formats.LLMProfile{Model: "m", GPU: "A10G"}, nil, map[string]Setting{
			SetMaxBatched: {Value: "2048", Source: SourceDefault}, SetMaxSeqs: {Value: "256", Source: SourceDefault}}},
		{"iteration fields", &formats.LLMProfile{Model: "m", GPU: "H100", Iteration: iter}, nil, map[string]Setting{
			SetMaxBatched: {Value: "1000", Source: SourceIteration}, SetMaxSeqs: {Value: "100", Source: SourceIteration},
			SetBlock: {Value: "32", Source: SourceIteration}}},
		{"engine over iteration", &formats.LLMProfile{Model: "m", GPU: "H100", Iteration: iter,
			Engine: &formats.LLMEngine{MaxNumSeqs: 48, EnablePrefixCaching: &off, OutputDelaySteps: &delay, SchedulingPolicy: "priority"}}, nil, map[string]Setting{
			SetMaxBatched: {Value: "1000", Source: SourceIteration}, SetMaxSeqs: {Value: "48", Source: SourceEngine},
			SetPrefixCaching: {Value: "false", Source: SourceEngine}, SetOutDelay: {Value: "0", Source: SourceEngine},
			SetPolicy: {Value: "priority", Source: SourceEngine}}},
		{"engine max_num_seqs without iteration", seqs(48), nil, map[string]Setting{SetMaxSeqs: {Value: "48", Source: SourceEngine}}},
		{"a flag over the engine", seqs(48), map[string]int{SetMaxSeqs: 64, SetMaxBatched: 512}, map[string]Setting{
			SetMaxSeqs: {Value: "64", Source: SourceFlag}, SetMaxBatched: {Value: "512", Source: SourceFlag}, SetBlock: {Value: "16", Source: SourceDefault}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewModel(tc.prof)
			for k, v := range tc.flag {
				if !m.WithFlag(k, v) {
					t.Fatalf("WithFlag(%s) refused", k)
				}
			}
			got := map[string]Setting{}
			for _, s := range m.Settings() {
				if _, dup := got[s.Name]; dup {
					t.Errorf("%s listed twice", s.Name)
				}
				got[s.Name] = s
			}
			for name, w := range tc.want {
				if g := got[name]; g.Value != w.Value || g.Source != w.Source {
					t.Errorf("%s: %s from %s, want %s from %s", name, g.Value, g.Source, w.Value, w.Source)
				}
			}
		})
	}
}

// TestWithFlagKeepsCopiesApart: a flag laid over a copy of a resolved engine leaves the
// original's sources as they were.
func TestWithFlagKeepsCopiesApart(t *testing.T) {
	m := NewModel(&formats.LLMProfile{Model: "m", GPU: "H100", Engine: &formats.LLMEngine{MaxNumBatchedTokens: 4096}})
	cp := *m
	cp.WithFlag(SetMaxBatched, 512)
	if m.SourceOf(SetMaxBatched) != SourceEngine || m.MaxBatched != 4096 {
		t.Errorf("original: %d from %s, want 4096 from the engine block", m.MaxBatched, m.SourceOf(SetMaxBatched))
	}
	if cp.SourceOf(SetMaxBatched) != SourceFlag || cp.MaxBatched != 512 {
		t.Errorf("copy: %d from %s, want 512 from the flag", cp.MaxBatched, cp.SourceOf(SetMaxBatched))
	}
	if m.WithFlag("max_model_len", 10) {
		t.Error("WithFlag took a setting it does not lay over")
	}
}
