package qlm

import (
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/sim"
)

// TestClassPrefixTokens: a class's prefix_tokens (a shared system prompt) reach the engines'
// prefix caches through the policy — with enable_prefix_caching every request after the
// first finds the prefix's full blocks cached (64 of 80 tokens at block 16), the run's
// report counts them and the policy keeps each request's cached tokens; without caching, or
// without prefix_tokens, nothing hits.
func TestClassPrefixTokens(t *testing.T) {
	for _, tc := range []struct {
		name        string
		apc         bool
		prefix      int
		hits, query int64
	}{
		{"cached", true, 64, 4 * 64, 5 * 80},
		{"no prefix", true, 0, 0, 5 * 80},
		{"caching off", false, 64, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof := handProfile()
			prof.Engine = &formats.LLMEngine{EnablePrefixCaching: new(tc.apc)}
			cl := oneClass("m", time.Hour)
			cl.PrefixTokens = tc.prefix
			dep, err := Build([]llmspec.LLMClass{cl}, Setup{Profiles: []formats.LLMProfile{prof}, Instances: []Instance{{Name: "i0", GPU: prof.GPU, Model: "m"}}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := Registry().New(dep, dataplane.Config{Policy: PolicyFCFS}, PolicyQLM)
			if err != nil {
				t.Fatal(err)
			}
			at := []dataplane.Time{0, 100000, 200000, 300000, 400000}
			s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: at}}, sim.Options{Duration: dataplane.Second,
				Attrs: func(dataplane.AppID, int64) dataplane.Attrs { return dataplane.Attrs{InTokens: 80, OutTokens: 4} }})
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.Run()
			if err != nil {
				t.Fatal(err)
			}
			e := m.LLMEngine
			if e == nil || e.PrefixCacheHits != tc.hits || e.PrefixCacheQueries != tc.query {
				t.Fatalf("engine report %+v, want %d hits of %d", e, tc.hits, tc.query)
			}
			var cached int64
			for id := range dataplane.ReqID(len(at)) {
				c, _ := p.(*Policy).RequestLLM(id)
				cached += int64(c)
			}
			if cached != tc.hits {
				t.Errorf("requests' cached tokens sum to %d, want %d", cached, tc.hits)
			}
		})
	}
	if _, err := Build([]llmspec.LLMClass{{Name: "c", Model: "m", PrefixTokens: -1}}, Setup{Profiles: []formats.LLMProfile{handProfile()}, Instances: []Instance{{Name: "i0", GPU: "A100", Model: "m"}}}); err == nil {
		t.Error("prefix_tokens -1 accepted")
	}
}
