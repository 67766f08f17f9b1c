package qlm

import (
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/sim"
)

// runSim runs policy pol on dep with requests arriving at times, attributes attrs, and
// returns each request's completion time and the policy.
func runSim(t *testing.T, dep *dataplane.Deployment, pol string, srcs [][]dataplane.Time, attrs [][]dataplane.Attrs, dur dataplane.Time) (map[dataplane.ReqID]dataplane.Time, map[dataplane.ReqID]*dataplane.Request, *Policy) {
	t.Helper()
	p, err := Registry().New(dep, dataplane.Config{Policy: pol}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	var ss []sim.Source
	for _, ts := range srcs {
		ss = append(ss, &sim.Times{T: ts})
	}
	done := map[dataplane.ReqID]dataplane.Time{}
	reqs := map[dataplane.ReqID]*dataplane.Request{}
	s, err := sim.New(dep, p, ss, sim.Options{Duration: dur,
		Attrs:    func(a dataplane.AppID, n int64) dataplane.Attrs { return attrs[a][n] },
		OnFinish: func(now dataplane.Time, r *dataplane.Request) { done[r.ID] = now; reqs[r.ID] = r }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return done, reqs, p.(*Policy)
}

// TestIdleInstancePulls is the stall of issue 13: instances that run one sequence at a
// time; A runs long on i0, B runs one token on i1, C's group is placed on i0 (tie on
// estimated drain) behind A. Its deadline is loose, so no violation forces a replan. Once
// i1 is idle with an empty virtual queue it must pull C (work-conserving request pulling,
// spec §2 "VQ changed → pulling/load balancing") instead of leaving C behind A's 400 tokens.
func TestIdleInstancePulls(t *testing.T) {
	prof := handProfile()
	prof.Iteration.MaxSeqs = 1
	dep, err := Build([]formats.LLMClass{oneClass("m", time.Minute)}, Setup{Profiles: []formats.LLMProfile{prof},
		Instances: []Instance{{Name: "i0", GPU: "A100", Model: "m"}, {Name: "i1", GPU: "A100", Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	attrs := [][]dataplane.Attrs{{{InTokens: 100, OutTokens: 400}, {InTokens: 100, OutTokens: 1}, {InTokens: 100, OutTokens: 2}}}
	done, _, p := runSim(t, dep, PolicyQLM, [][]dataplane.Time{{0, 0, 0}}, attrs, 10*dataplane.Second)
	if len(done) != 3 {
		t.Fatalf("%d of 3 requests finished", len(done))
	}
	// A alone takes 400 decode steps of ≥ 5 ms; C on an idle i1 takes a prefill and a step.
	if done[2] >= done[0] || done[2] > 100*dataplane.Millisecond {
		t.Errorf("C done at %v µs, A at %v µs: C waited behind A while i1 was idle", done[2], done[0])
	}
	if p.stats.Replans != 0 {
		t.Errorf("%d replans: the scenario should need none", p.stats.Replans)
	}
}
