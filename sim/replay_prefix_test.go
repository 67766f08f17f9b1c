package sim

import (
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// TestReplayCarriesPrefix: a replayed request's Arrival.Prefix holds its trace id and what its
// prompt shares (group and prefix tokens, or hash ids with the trace's block size); a request
// with neither has none.
func TestReplayCarriesPrefix(t *testing.T) {
	cfg := qlmSweep(t)
	ids := []int64{0, 1}
	tr := traceOf(
		formats.TraceRequest{Class: "mistral-chat", InputTokens: 600, OutputTokens: 5, ID: "a", PrefixGroup: "sys", PrefixTokens: 512},
		formats.TraceRequest{TimeUs: 10, Class: "mistral-chat", InputTokens: 600, OutputTokens: 5, HashIDs: &ids},
		formats.TraceRequest{TimeUs: 20, Class: "mistral-chat", InputTokens: 60, OutputTokens: 5},
	)
	tr.HashBlockTokens = formats.MooncakeBlockTokens
	x, err := NewExactReplay("t.json", tr, cfg.Dep, cfg.LLM)
	if err != nil {
		t.Fatal(err)
	}
	app := dataplane.AppID(-1)
	for a, d := range cfg.Dep.Apps {
		if d.Name == "mistral-chat" {
			app = dataplane.AppID(a)
		}
	}
	got := []*dataplane.Prefix{x.prefix(app, 0), x.prefix(app, 1), x.prefix(app, 2)}
	if p := got[0]; p == nil || p.ID != "a" || p.Group != "sys" || p.GroupTokens != 512 || p.HashIDs != nil {
		t.Fatalf("request 0: prefix %+v", p)
	}
	if p := got[1]; p == nil || p.ID != "" || p.Group != "" || !slices.Equal(p.HashIDs, ids) || p.HashBlockTokens != 512 {
		t.Fatalf("request 1: prefix %+v", p)
	}
	if got[2] != nil {
		t.Fatalf("request 2: prefix %+v, want none", got[2])
	}
}
