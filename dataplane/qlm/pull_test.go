package qlm

import (
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
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

// TestIdleInstancePulls guards against an idle instance beside a queue: instances that run one sequence at a
// time; A runs long on i0, B runs one token on i1, C's group is placed on i0 (tie on
// estimated drain) behind A. Its deadline is loose, so no violation forces a replan. Once
// i1 is idle with an empty virtual queue it must pull C (work-conserving request pulling,
// QLM §5: virtual-queue changes trigger pulling and load balancing) instead of leaving C behind A's 400 tokens.
func TestIdleInstancePulls(t *testing.T) {
	prof := handProfile()
	prof.Iteration.MaxSeqs = 1
	dep, err := Build([]llmspec.LLMClass{oneClass("m", time.Minute)}, Setup{Profiles: []formats.LLMProfile{prof},
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

// tokenTimeSetup is one instance of the hand profile (decode step 5 ms + 1 ms per extra
// sequence) with an interactive class (3 s SLO, ~300 output tokens: 1.5 s alone, ~7.5 s in a
// batch of 21) and a batch class (10 min, ~1000 tokens).
func tokenTimeSetup(t *testing.T) *dataplane.Deployment {
	t.Helper()
	in := llmspec.TokenProfile{Mean: 100, Std: 10, Max: 200}
	cls := []llmspec.LLMClass{
		{Name: "inter", Model: "m", SLO: formats.Duration(3 * time.Second), Interactive: true, RateRPS: 1, InputTokens: in, OutputTokens: llmspec.TokenProfile{Mean: 300, Std: 10, Max: 400}},
		{Name: "batch", Model: "m", SLO: formats.Duration(10 * time.Minute), RateRPS: 1, InputTokens: in, OutputTokens: llmspec.TokenProfile{Mean: 1000, Std: 10, Max: 2000}},
	}
	dep, err := Build(cls, Setup{Profiles: []formats.LLMProfile{handProfile()}, Instances: []Instance{{Name: "i0", GPU: "A100", Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

func burst(n int, at dataplane.Time, a dataplane.Attrs) ([]dataplane.Time, []dataplane.Attrs) {
	var ts []dataplane.Time
	var as []dataplane.Attrs
	for range n {
		ts = append(ts, at)
		as = append(as, a)
	}
	return ts, as
}

// TestEvictForTokenTime: 20 batch requests fill the running batch, then an interactive one
// arrives. The batch fits in KV memory, so KV-space eviction never fires, but at 21
// sequences a decode step takes ~25 ms and 300 tokens miss the 3 s SLO; QLM evicts
// later-deadline sequences until the interactive one is on time (QLM §5 eviction).
func TestEvictForTokenTime(t *testing.T) {
	dep := tokenTimeSetup(t)
	bt, ba := burst(20, 0, dataplane.Attrs{InTokens: 100, OutTokens: 1000})
	done, reqs, p := runSim(t, dep, PolicyQLM, [][]dataplane.Time{{100 * dataplane.Millisecond}, bt},
		[][]dataplane.Attrs{{{InTokens: 100, OutTokens: 300}}, ba}, 300*dataplane.Second)
	if len(done) != 21 {
		t.Fatalf("%d of 21 requests finished", len(done))
	}
	for id, r := range reqs {
		if r.Outcome != dataplane.Completed {
			t.Errorf("request %d (app %d): outcome %v after %v µs", id, r.App, r.Outcome, done[id]-r.Arrival)
		}
	}
	if p.Stats().Evictions+p.Stats().KVSwaps == 0 {
		t.Error("no preemption: the interactive request cannot be on time in a batch of 21")
	}
}

// TestPullKeepsDeadlines: an interactive request runs alone, then 20 batch requests arrive.
// Pulling them all would make it late; QLM admits only as many as keep it on time.
func TestPullKeepsDeadlines(t *testing.T) {
	dep := tokenTimeSetup(t)
	bt, ba := burst(20, 100*dataplane.Millisecond, dataplane.Attrs{InTokens: 100, OutTokens: 1000})
	done, reqs, p := runSim(t, dep, PolicyQLM, [][]dataplane.Time{{0}, bt},
		[][]dataplane.Attrs{{{InTokens: 100, OutTokens: 300}}, ba}, 300*dataplane.Second)
	if len(done) != 21 {
		t.Fatalf("%d of 21 requests finished", len(done))
	}
	for id, r := range reqs {
		if r.Outcome != dataplane.Completed {
			t.Errorf("request %d (app %d): outcome %v after %v µs", id, r.App, r.Outcome, done[id]-r.Arrival)
		}
	}
	// Pulling all 20 and evicting for the interactive request preempts 40 times; the check
	// admits about 4, and evicts only if it outlives its expected output.
	if n := p.Stats().Evictions + p.Stats().KVSwaps; n > 5 {
		t.Errorf("%d preemptions: requests were pulled only to be evicted", n)
	}
}

// TestPullPastRefusedHead: the batch group heading the virtual queue is refused (pulling it
// would make the running interactive request late), and a tighter request queued behind it
// must not wait for that (head-of-line blocking, paper §1): pulling takes it past the head.
func TestPullPastRefusedHead(t *testing.T) {
	in := llmspec.TokenProfile{Mean: 100, Std: 10, Max: 200}
	cls := []llmspec.LLMClass{
		{Name: "inter", Model: "m", SLO: formats.Duration(3 * time.Second), Interactive: true, RateRPS: 1, InputTokens: in, OutputTokens: llmspec.TokenProfile{Mean: 300, Std: 10, Max: 400}},
		{Name: "batch", Model: "m", SLO: formats.Duration(10 * time.Minute), RateRPS: 1, InputTokens: in, OutputTokens: llmspec.TokenProfile{Mean: 1000, Std: 10, Max: 2000}},
		{Name: "tight", Model: "m", SLO: formats.Duration(1500 * time.Millisecond), Interactive: true, RateRPS: 1, InputTokens: in, OutputTokens: llmspec.TokenProfile{Mean: 100, Std: 10, Max: 200}},
		{Name: "doomed", Model: "m", SLO: formats.Duration(10 * time.Millisecond), Interactive: true, RateRPS: 1, InputTokens: in, OutputTokens: llmspec.TokenProfile{Mean: 100, Std: 10, Max: 200}},
	}
	dep, err := Build(cls, Setup{Profiles: []formats.LLMProfile{handProfile()}, Instances: []Instance{{Name: "i0", GPU: "A100", Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	// A doomed request's predicted violation re-plans at 60 ms; the tight one, at 100 ms,
	// joins the queue behind the batch group while re-plans are rate-limited (ours).
	bt, ba := burst(20, 70*dataplane.Millisecond, dataplane.Attrs{InTokens: 100, OutTokens: 1000})
	tight := dataplane.Attrs{InTokens: 100, OutTokens: 100}
	done, reqs, _ := runSim(t, dep, PolicyQLM, [][]dataplane.Time{{0}, bt, {100 * dataplane.Millisecond}, {60 * dataplane.Millisecond}},
		[][]dataplane.Attrs{{{InTokens: 100, OutTokens: 300}}, ba, {tight}, {tight}}, 300*dataplane.Second)
	if len(done) != 23 {
		t.Fatalf("%d of 23 requests finished", len(done))
	}
	for id, r := range reqs {
		if (r.App == 0 || r.App == 2) && r.Outcome != dataplane.Completed {
			t.Errorf("request %d (app %d): outcome %v after %v µs", id, r.App, r.Outcome, done[id]-r.Arrival)
		}
	}
}

// TestPriorityOrder: the request priority attribute (vLLM's, lower first) orders groups
// strictly (QLM App. A.3). One sequence at a time; B (priority 5) and C (priority 1) of the
// same class wait while A runs: C runs first, though B came first and would share its group.
func TestPriorityOrder(t *testing.T) {
	for _, grouping := range []string{"buckets", "kmeans"} {
		t.Run(grouping, func(t *testing.T) {
			prof := handProfile()
			prof.Iteration.MaxSeqs = 1
			dep, err := Build([]llmspec.LLMClass{oneClass("m", time.Minute)}, Setup{Profiles: []formats.LLMProfile{prof}, Grouping: grouping,
				Instances: []Instance{{Name: "i0", GPU: "A100", Model: "m"}}})
			if err != nil {
				t.Fatal(err)
			}
			attrs := [][]dataplane.Attrs{{{InTokens: 100, OutTokens: 50}, {InTokens: 100, OutTokens: 20, Priority: 5}, {InTokens: 100, OutTokens: 20, Priority: 1}}}
			done, _, _ := runSim(t, dep, PolicyQLM, [][]dataplane.Time{{0, dataplane.Millisecond, 2 * dataplane.Millisecond}}, attrs, 10*dataplane.Second)
			if len(done) != 3 {
				t.Fatalf("%d of 3 requests finished", len(done))
			}
			if done[2] >= done[1] {
				t.Errorf("priority 1 done at %d µs, priority 5 at %d µs: want the lower value first", done[2], done[1])
			}
		})
	}
}
