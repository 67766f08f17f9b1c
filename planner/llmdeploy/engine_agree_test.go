package llmdeploy

import (
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane/llm"
)

// TestCandidatesStateTheirEngine: every candidate the search enumerates, on the estimated
// and the given profiles, runs the engine its settings name: llm.NewModel resolves the
// role's profile to the tried max_num_batched_tokens, max_num_seqs and prefix caching, each
// from the engine block, and the vLLM flags the plan writes are those.
func TestCandidatesStateTheirEngine(t *testing.T) {
	cases := []struct {
		name     string
		profiles []string
	}{
		{"estimated", nil},
		{"given", []string{"profile-8b-h100-tp1.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := inputs(t, "workload.yaml", "cluster.yaml", tc.profiles...)
			cands, err := Enumerate(in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(cands) == 0 {
				t.Fatal("no candidates")
			}
			for _, c := range cands {
				for _, r := range c.Roles {
					m := llm.NewModel(r.Profile)
					if m.MaxBatched != r.Engine.MaxBatchedTokens || m.MaxSeqs != r.Engine.MaxSeqs || m.PrefixCaching != r.Engine.PrefixCaching {
						t.Errorf("%s: the engine runs b%d s%d caching %t, the candidate says b%d s%d caching %t", c.Label(),
							m.MaxBatched, m.MaxSeqs, m.PrefixCaching, r.Engine.MaxBatchedTokens, r.Engine.MaxSeqs, r.Engine.PrefixCaching)
					}
					for _, name := range []string{llm.SetMaxBatched, llm.SetMaxSeqs, llm.SetPrefixCaching} {
						if s := m.SourceOf(name); s != llm.SourceEngine {
							t.Errorf("%s: %s from %s, want the candidate's engine block", c.Label(), name, s)
						}
					}
					f := r.flags()
					for _, want := range []string{
						"--max-num-batched-tokens " + strconv.Itoa(r.Engine.MaxBatchedTokens),
						"--max-num-seqs " + strconv.Itoa(r.Engine.MaxSeqs),
					} {
						if !strings.Contains(f, want) {
							t.Errorf("%s: flags %q lack %q", c.Label(), f, want)
						}
					}
				}
			}
		})
	}
}
