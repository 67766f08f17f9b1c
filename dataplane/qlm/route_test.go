package qlm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/sim"
)

// TestSizeRouting: a least-cost plan's routes send each request size to the GPU type the ILP
// chose for it (Mélange §5): short requests to the L4, long ones to the
// A100, whatever the queues look like; a split route sends its requests by share. Without
// routing, QLM places each group on the instance that drains it first and short and long
// requests mix on both types.
func TestSizeRouting(t *testing.T) {
	short, long := engineReq{in: 100, out: 10}, engineReq{in: 2000, out: 10}
	routes := []qlmsec.QLMRoute{
		{Class: "c-m", InputTokens: 100, OutputTokens: 10, GPUs: []qlmsec.QLMShare{{GPU: "L4", Share: 1}}},
		{Class: "c-m", InputTokens: 2000, OutputTokens: 10, GPUs: []qlmsec.QLMShare{{GPU: "A100", Share: 1}}},
	}
	var reqs []engineReq
	want := map[dataplane.ReqID]string{}
	for i := range 24 {
		r := short
		if i%3 == 0 {
			r = long
		}
		r.at = dataplane.Time(i) * 20 * dataplane.Millisecond
		reqs = append(reqs, r)
		want[dataplane.ReqID(i)] = map[bool]string{true: "A100", false: "L4"}[r.in == long.in]
	}
	for _, pol := range []string{PolicyQLM, PolicyFCFS, PolicyEDF, PolicyShepherd} {
		t.Run(pol, func(t *testing.T) {
			st := runRouted(t, pol, routes, reqs)
			for id, g := range want {
				if st.Served[id] != g {
					t.Errorf("request %d (%d prompt tokens): served on %q, want %q", id, reqs[id].in, st.Served[id], g)
				}
			}
		})
	}
	// A split route: its requests go to both types, about by share (drawn per request ID).
	split := []qlmsec.QLMRoute{{Class: "c-m", InputTokens: 100, OutputTokens: 10,
		GPUs: []qlmsec.QLMShare{{GPU: "L4", Share: 0.75}, {GPU: "A100", Share: 0.25}}}}
	var many []engineReq
	for i := range 200 {
		r := short
		r.at = dataplane.Time(i) * 50 * dataplane.Millisecond
		many = append(many, r)
	}
	st := runRouted(t, PolicyFCFS, split, many)
	n := map[string]int{}
	for _, g := range st.Served {
		n[g]++
	}
	if n["L4"]+n["A100"] != 200 || n["L4"] < 130 || n["L4"] > 170 {
		t.Errorf("split route 0.75/0.25 over 200 requests: served %v", n)
	}
}

// runRouted serves reqs on an L4 and an A100 instance (the hand profile on both) under
// routes, and returns the policy's stats.
func runRouted(t *testing.T, pol string, routes []qlmsec.QLMRoute, reqs []engineReq) *Stats {
	t.Helper()
	a, l := handProfile(), handProfile()
	l.GPU = "L4"
	setup := Setup{Profiles: []formats.LLMProfile{a, l}, Instances: []Instance{{Name: "a100", GPU: "A100", Model: "m"}, {Name: "l4", GPU: "L4", Model: "m"}}, Routes: routes}
	dep, err := Build([]llmspec.LLMClass{oneClass("m", time.Hour)}, setup)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Registry().New(dep, dataplane.Config{Policy: pol}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	var at []dataplane.Time
	for _, r := range reqs {
		at = append(at, r.at)
	}
	done := 0
	s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: at}}, sim.Options{Duration: 20 * dataplane.Second,
		Attrs: func(_ dataplane.AppID, n int64) dataplane.Attrs {
			return dataplane.Attrs{InTokens: reqs[n].in, OutTokens: reqs[n].out}
		},
		OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
			if r.Outcome == dataplane.Completed {
				done++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if done != len(reqs) {
		t.Fatalf("%d of %d requests completed", done, len(reqs))
	}
	st := p.(*Policy).Stats()
	if len(st.Served) != len(reqs) {
		t.Fatalf("served recorded for %d of %d requests", len(st.Served), len(reqs))
	}
	return st
}

// TestRouteBadShare: a negative share is refused at attach, naming the route.
func TestRouteBadShare(t *testing.T) {
	a := handProfile()
	setup := Setup{Profiles: []formats.LLMProfile{a}, Instances: []Instance{{Name: "a100", GPU: "A100", Model: "m"}},
		Routes: []qlmsec.QLMRoute{{Class: "c-m", GPUs: []qlmsec.QLMShare{{GPU: "A100", Share: -1}}}}}
	dep, err := Build([]llmspec.LLMClass{oneClass("m", time.Hour)}, setup)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sim.New(dep, p, []sim.Source{&sim.Times{T: []dataplane.Time{0}}}, sim.Options{Duration: dataplane.Second})
	if err == nil || !strings.Contains(fmt.Sprint(err), "qlm: routes[0].gpus[0].share -1: want a finite share ≥ 0") {
		t.Errorf("err = %v", err)
	}
}
