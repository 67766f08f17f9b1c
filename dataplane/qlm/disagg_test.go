package qlm_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/sim"
)

func readDisaggPlan(t *testing.T) *formats.Plan {
	t.Helper()
	doc, err := formats.ReadFile("../../testdata/disagg/plan.json", intree.Sections())
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
	c := llmspec.ClassesOf(p.Provenance.Embedded.Workload)[0]
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

func TestDisaggOfBadInput(t *testing.T) {
	for _, c := range []struct {
		name, want string
		mut        func(p *formats.Plan)
	}{
		{"no link", "kv_link_gbps", func(p *formats.Plan) { p.Cluster.KVLinkGBps = nil }},
		{"no profile", "no LLM profile", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].GPUCount = 2 }},
		{"no decode", "prefill and decode", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].Role = llmspec.RolePrefill }},
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

// TestDisaggPolicyMatchesReplay: `plan simulate` of the fixture (every policy runs role
// instances FCFS per role, disaggpol.go), and of it with 2 prefill + 2 decode instances at
// twice the rate, gives each request the TTFT and E2E of llm.ReplayDisagg on the same
// arrivals, the replay the deployment search calls.
func TestDisaggPolicyMatchesReplay(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%dP%dD", n, n), func(t *testing.T) {
			p := readDisaggPlan(t)
			for k := 1; k < n; k++ {
				for _, in := range qlmsec.PlanOf(p).Instances[:2] {
					in.Name, in.Queue = fmt.Sprintf("%s-%d", in.Name, k), nil
					qlmsec.PlanOf(p).Instances = append(qlmsec.PlanOf(p).Instances, in)
				}
			}
			matchReplay(t, p, 1.2*float64(n))
		})
	}
}

func matchReplay(t *testing.T, p *formats.Plan, rate float64) {
	dep, err := qlm.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := qlm.DisaggOf(p)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 0))
	var ts []dataplane.Time
	var attrs []dataplane.Attrs
	var reqs []llm.Request
	at := 0.0
	for i := range 120 {
		at += rng.ExpFloat64() / rate
		in, out := 6000+rng.IntN(4000), 100+rng.IntN(200)
		ts = append(ts, dataplane.Time(at*1e6))
		attrs = append(attrs, dataplane.Attrs{InTokens: int32(in), OutTokens: int32(out)})
		reqs = append(reqs, llm.Request{ID: dataplane.ReqID(i), Arrival: ts[i], Prompt: in, Out: out})
	}
	for _, pol := range []string{qlm.PolicyFCFS, qlm.PolicyQLM} {
		t.Run(pol, func(t *testing.T) {
			pl, err := qlm.Registry().New(dep, dataplane.Config{Policy: pol}, pol)
			if err != nil {
				t.Fatal(err)
			}
			var got []*dataplane.Request
			s, err := sim.New(dep, pl, []sim.Source{&sim.Times{T: ts}}, sim.Options{Duration: ts[len(ts)-1] + 600*dataplane.Second,
				Attrs:    func(_ dataplane.AppID, n int64) dataplane.Attrs { return attrs[n] },
				OnFinish: func(_ dataplane.Time, r *dataplane.Request) { c := *r; got = append(got, &c) }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Run(); err != nil {
				t.Fatal(err)
			}
			want, _, err := llm.ReplayDisagg(ds[0].Deploy, reqs)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d finished, want %d", len(got), len(want))
			}
			bad := 0
			for _, r := range got {
				i := int(r.Attrs.Trace) - 1
				w := want[i]
				if r.FirstToken != w.FirstToken || r.Done != w.Done {
					if bad++; bad <= 3 {
						t.Errorf("request %d: simulate first %d done %d, replay %d %d", i, r.FirstToken, r.Done, w.FirstToken, w.Done)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d requests differ", bad, len(got))
			}
		})
	}
}
