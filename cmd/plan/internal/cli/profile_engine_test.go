package cli

import (
	"path/filepath"
	"testing"
)

// TestProfileEngineFlags: vLLM's server flags given to plan profile land in the profile's
// engine block under vLLM's names, and the KV layout follows them: gpt-oss keeps its two KV
// groups under vLLM's defaults and one with --disable-hybrid-kv-cache-manager.
func TestProfileEngineFlags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flags    []string
		seqs     int // 0: vLLM's default for the GPU
		noHybrid bool
		groups   bool
	}{
		{"defaults", nil, 0, false, true},
		{"seqs", []string{"--max-num-seqs", "64"}, 64, false, true},
		{"hybrid manager off", []string{"--disable-hybrid-kv-cache-manager"}, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "p.json")
			args := append([]string{"profile", "--llm", "gpt-oss-20b", "--gpu", "H100", "-o", out}, tc.flags...)
			if code, _, stderr := rootRun(t, args...); code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			p := readProfile(t, out).LLMs[0]
			e := p.Engine
			if e == nil {
				t.Fatal("no engine block")
			}
			if (tc.seqs > 0 && e.MaxNumSeqs != tc.seqs) || e.DisableHybridKVCacheManager != tc.noHybrid || (p.KVGroups != nil) != tc.groups {
				t.Errorf("engine %+v, kv_groups %+v: want max_num_seqs %d, disable_hybrid_kv_cache_manager %v, groups %v", p.Engine, p.KVGroups, tc.seqs, tc.noHybrid, tc.groups)
			}
		})
	}
}
