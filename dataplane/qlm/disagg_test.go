package qlm_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
)

func readDisaggPlan(t *testing.T) *formats.Plan {
	t.Helper()
	doc, err := formats.ReadFile("../../testdata/disagg/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	return doc.(*formats.Plan)
}

// TestDisaggOfFixture resolves testdata/disagg/plan.json (1 prefill + 1 decode H100, 50 GB/s)
// and replays its class at its rate: every request finishes and the TPOT p99 meets the
// class's 8 ms (the deployment llm's TestDisaggWinsLongPromptTightTPOT compares).
func TestDisaggOfFixture(t *testing.T) {
	p := readDisaggPlan(t)
	if !qlm.HasRoles(p) {
		t.Fatal("fixture has no roles")
	}
	ds, err := qlm.DisaggOf(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Deploy.P != 1 || ds[0].Deploy.D != 1 || ds[0].Deploy.LinkGBps != 50 {
		t.Fatalf("resolved %+v", ds)
	}
	c := p.Provenance.Embedded.Workload.LLMClasses[0]
	rng := rand.New(rand.NewPCG(1, 0))
	reqs := make([]llm.Request, 400)
	at := 0.0
	for i := range reqs {
		at += rng.ExpFloat64() / c.RateRPS
		reqs[i] = llm.Request{ID: dataplane.ReqID(i + 1), Arrival: dataplane.Time(at * 1e6), Prompt: int(c.InputTokens.Mean), Out: int(c.OutputTokens.Mean)}
	}
	res, st, err := llm.ReplayDisagg(ds[0].Deploy, reqs)
	if err != nil {
		t.Fatal(err)
	}
	var tpot []float64
	for _, r := range res {
		if r.Refused || r.Done == dataplane.Never {
			t.Fatalf("request %d did not finish: %+v", r.ID, r)
		}
		tpot = append(tpot, float64(r.Done-r.FirstToken)/float64(int(c.OutputTokens.Mean)-1))
	}
	slices.Sort(tpot)
	p99 := tpot[(99*len(tpot)+99)/100-1]
	t.Logf("TPOT p99 %.2f ms; %d transfers, mean %.1f ms", p99/1e3, st.Transfers, float64(st.TransferUs)/float64(st.Transfers)/1e3)
	if p99 > float64(c.TPOTSLO.D().Microseconds()) {
		t.Fatalf("TPOT p99 %.0f µs over the class's %v", p99, c.TPOTSLO.D())
	}
}

// TestFromPlanRefusesRoles: QLM's policies do not run disaggregated instances; the deployer
// says so, naming the field, instead of simulating them as aggregated ones.
func TestFromPlanRefusesRoles(t *testing.T) {
	_, err := qlm.FromPlan(readDisaggPlan(t))
	if err == nil || !strings.Contains(err.Error(), "qlm.instances[0].role") {
		t.Fatalf("got %v", err)
	}
}

func TestDisaggOfBadInput(t *testing.T) {
	for _, c := range []struct {
		name, want string
		mut        func(p *formats.Plan)
	}{
		{"no link", "kv_link_gbps", func(p *formats.Plan) { p.Cluster.KVLinkGBps = nil }},
		{"no profile", "no LLM profile", func(p *formats.Plan) { p.QLM.Instances[1].GPUCount = 2 }},
		{"no decode", "prefill and decode", func(p *formats.Plan) { p.QLM.Instances[1].Role = formats.RolePrefill }},
	} {
		p := readDisaggPlan(t)
		if p.Cluster == nil {
			p.Cluster = p.Provenance.Embedded.Cluster
		}
		c.mut(p)
		if _, err := qlm.DisaggOf(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
