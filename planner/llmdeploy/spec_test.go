package llmdeploy

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	pllm "github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/profiler/roofline"
)

// specProfile is the 8B's roofline profile on one H100 stating speculative decoding (k 3,
// α 0.7, free n-gram drafting), as a user who measured acceptance on their traffic gives it.
func specProfile(t *testing.T) *formats.Profile {
	t.Helper()
	pr, err := pllm.EstimateTP("llama-3.1-8b", "H100", 1, roofline.LinkAuto)
	if err != nil {
		t.Fatal(err)
	}
	eng := formats.LLMEngine{}
	if pr.Engine != nil {
		eng = *pr.Engine
	}
	eng.Speculative = &formats.LLMSpeculative{DraftTokens: 3, AcceptanceRate: 0.7}
	pr.Engine = &eng
	return &formats.Profile{LLMs: []formats.LLMProfile{*pr}}
}

// TestSpeculativeSearched: where a profile states speculative decoding, the search tries it
// off and at k 2, 3 (the profile's) and 4 (llm-deploy-search.md §5: it slows a loaded engine
// down, so it is searched, never assumed), each candidate's profile carrying its own k (or
// none), the flags naming it; a profile without it gets no such candidates.
func TestSpeculativeSearched(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml")
	in.Profiles = append(in.Profiles, specProfile(t))
	in.Refs = append(in.Refs, formats.InputRef{Kind: formats.KindProfile, Path: "spec.json"})
	cands, err := Enumerate(in, Options{Modes: []Mode{Aggregated}})
	if err != nil {
		t.Fatal(err)
	}
	ks := map[string]map[int]bool{}
	for _, c := range cands {
		r := c.Roles[0]
		key := c.Model + "@" + r.GPU
		if ks[key] == nil {
			ks[key] = map[int]bool{}
		}
		ks[key][r.Engine.SpecTokens] = true
		sp := r.Profile.Engine.Speculative
		switch {
		case r.Engine.SpecTokens == 0 && sp != nil:
			t.Errorf("%s: speculative off, profile still states %+v", c.Label(), *sp)
		case r.Engine.SpecTokens > 0 && (sp == nil || sp.DraftTokens != r.Engine.SpecTokens || sp.AcceptanceRate != 0.7):
			t.Errorf("%s: profile's speculative %+v, want k %d at α 0.7", c.Label(), sp, r.Engine.SpecTokens)
		}
		if k := r.Engine.SpecTokens; k > 0 {
			want := `--speculative-config '{"method":"ngram","num_speculative_tokens":` + string(rune('0'+k)) + `}'`
			if !strings.Contains(r.flags(), want) || !strings.Contains(c.Label(), " k") {
				t.Errorf("%s: flags %q lack %s", c.Label(), r.flags(), want)
			}
		}
	}
	if got := ks["llama-3.1-8b@H100"]; len(got) != 4 || !got[0] || !got[2] || !got[3] || !got[4] {
		t.Errorf("H100 draft lengths %v, want 0, 2, 3, 4", got)
	}
	if got := ks["llama-3.1-8b@L40S"]; len(got) != 1 || !got[0] {
		t.Errorf("L40S (no speculative profile) draft lengths %v, want 0 only", got)
	}
}

// TestSpeculativeLowersTPOT: at a trickle, speculative decoding at α 0.7, k 3 with free
// drafting emits (1 − α⁴)/(1 − α) = 2.53 tokens per verify step, so the candidate's TPOT is
// well below the same engine's without it (Leviathan et al. §3).
func TestSpeculativeLowersTPOT(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml")
	in.Profiles = append(in.Profiles, specProfile(t))
	cands, err := Enumerate(in, Options{Modes: []Mode{Aggregated}, BatchedTokens: []int{2048}, MaxSeqs: []int{64}})
	if err != nil {
		t.Fatal(err)
	}
	tpot := map[int]float64{}
	for _, c := range cands {
		if c.Model != "llama-3.1-8b" || c.Roles[0].GPU != "H100" {
			continue
		}
		var classes []llmspec.LLMClass
		for _, cl := range llmspec.ClassesOf(in.Workload) {
			if cl.Model == c.Model {
				classes = append(classes, cl)
			}
		}
		preds, err := AggregatedEvaluator{}.Probe(c, classes, 0.2, Options{Requests: 40, Seed: 1}.withDefaults())
		if err != nil {
			t.Fatal(err)
		}
		tpot[c.Roles[0].Engine.SpecTokens] = preds[0].TPOT.P50
		t.Logf("%s: TPOT p50 %.4g", c.Label(), preds[0].TPOT.P50)
	}
	if tpot[0] <= 0 || tpot[3] <= 0 || tpot[3] > 0.6*tpot[0] {
		t.Errorf("TPOT p50 at a trickle: off %.3g, k 3 %.3g: want k 3 below 0.6× off (2.53 tokens a step)", tpot[0], tpot[3])
	}
}
