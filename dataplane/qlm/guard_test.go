package qlm

import (
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/sim"
)

// TestFlatBatch: the decode knee is the largest batch whose step stays within 25% of one
// sequence's; a flat or single-point curve has none below the sequence cap.
func TestFlatBatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		d       pwl
		maxSeqs int
		want    int
	}{
		{"hand profile: +1 ms per sequence on 5 ms", pwl{{Tokens: 1, Us: 5000}, {Tokens: 4, Us: 8000}}, 256, 2},
		{"W_B mistral-7b A100: flat to 128, then linear", pwl{{Tokens: 1, Us: 11000}, {Tokens: 128, Us: 13000}, {Tokens: 256, Us: 25600}}, 256, 135},
		{"capped by max_seqs", pwl{{Tokens: 1, Us: 11000}, {Tokens: 128, Us: 13000}, {Tokens: 256, Us: 25600}}, 64, 64},
		{"single point: flat", pwl{{Tokens: 1, Us: 5000}}, 32, 32},
		{"flat curve", pwl{{Tokens: 1, Us: 100}, {Tokens: 64, Us: 100}}, 16, 16},
	} {
		if got := flatBatch(tc.d, tc.maxSeqs); got != tc.want {
			t.Errorf("%s: knee %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestGuardAdmission is the deadline guard of request pulling (admitKeepsDeadlines) on the
// hand profile (decode knee 2): it refuses a looser-SLO request only for a tighter-SLO
// running sequence it would make late, and, while the waiting groups are behind, only above
// the knee. The old guard refused in every row but the last: below the knee with the queue
// behind (a batch one wider costs 1 ms on 5 ms per token) and for a running request of the
// same SLO (batch behind batch: refusing only lowers throughput, which starved the batch
// class on the full W_B run).
func TestGuardAdmission(t *testing.T) {
	prof := handProfile()
	m := newLM(&prof)
	p := &Policy{class: []Class{
		{Name: "inter", Model: "m", Interactive: true, Out: llmspec.TokenProfile{Mean: 300, Std: 10, Max: 400}},
		{Name: "batch", Model: "m", Out: llmspec.TokenProfile{Mean: 1000, Std: 10, Max: 2000}},
	}}
	now := 100 * dataplane.Second
	inter, batch := 20*dataplane.Second, 600*dataplane.Second
	mk := func(id dataplane.ReqID, app dataplane.AppID, slo, left dataplane.Time) *seq {
		return &seq{ID: id, App: app, Prompt: 100, Deadline: now + left, Arrival: now + left - slo}
	}
	for _, tc := range []struct {
		name    string
		running []*seq
		floor   int // m.knee while the waiting groups are behind (qlmQueue.behind)
		want    bool
	}{
		// Alone 300 tokens take 1.54 s, in a batch of 2 ~1.88 s: late at 1.7 s.
		{"below the knee, queue behind: admitted", []*seq{mk(1, 0, inter, 1700*dataplane.Millisecond)}, m.knee, true},
		{"below the knee, queue keeping up: refused", []*seq{mk(1, 0, inter, 1700*dataplane.Millisecond)}, 0, false},
		// 1000 tokens alone take 5.3 s, in a batch of 4 ~9.2 s: late at 7 s.
		{"same SLO above the knee: admitted", []*seq{mk(1, 1, batch, 7*dataplane.Second), mk(2, 1, batch, 100*dataplane.Second), mk(3, 1, batch, 100*dataplane.Second)}, m.knee, true},
		// 300 tokens alone take 1.54 s, in a batch of 4 ~2.55 s: late at 2 s.
		{"tighter SLO above the knee: refused", []*seq{mk(1, 0, inter, 2*dataplane.Second), mk(2, 1, batch, 100*dataplane.Second), mk(3, 1, batch, 100*dataplane.Second)}, m.knee, false},
	} {
		in := &instance{floor: tc.floor}
		for _, s := range tc.running {
			in.Place(s)
		}
		h := mk(9, 1, batch, 500*dataplane.Second)
		if got := p.admitKeepsDeadlines(now, in, m, h); got != tc.want {
			t.Errorf("%s: admit %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestIdleInstanceSplitsStartedGroup: one class, instances running one sequence at a time;
// eight requests arrive together and form one group, which starts on i0. Its waiting members
// are still in the global queue (only started groups' running requests are pinned, QLM §5),
// so i1, idle with an empty virtual queue, takes the later half instead of idling while i0
// serves all eight in turn (the old pull skipped started groups: the makespan doubled).
func TestIdleInstanceSplitsStartedGroup(t *testing.T) {
	prof := handProfile()
	prof.Iteration.MaxSeqs = 1
	dep, err := Build([]llmspec.LLMClass{oneClass("m", time.Hour)}, Setup{Profiles: []formats.LLMProfile{prof},
		Instances: []Instance{{Name: "i0", GPU: "A100", Model: "m"}, {Name: "i1", GPU: "A100", Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	var ts []dataplane.Time
	var as []dataplane.Attrs
	for range 8 {
		ts = append(ts, 0)
		as = append(as, dataplane.Attrs{InTokens: 100, OutTokens: 100})
	}
	done, _, p := runSim(t, dep, PolicyQLM, [][]dataplane.Time{ts}, [][]dataplane.Attrs{as}, 60*dataplane.Second)
	if len(done) != 8 {
		t.Fatalf("%d of 8 requests finished", len(done))
	}
	var last dataplane.Time
	for _, d := range done {
		last = max(last, d)
	}
	// One request: a prefill and 99 decode steps of 5 ms (+ context) ≈ 0.5 s; eight in turn
	// on one instance ≈ 4.1 s, four per instance ≈ 2.1 s.
	if last > 2500*dataplane.Millisecond || p.stats.Pulls == 0 {
		t.Errorf("last completion at %v µs, %d pulls: i1 should take half of the started group", last, p.stats.Pulls)
	}
}

// TestGroupRetime: a group's deadline is its earliest waiting member's; pulling that member
// into the running batch moves the group's deadline to the next one's.
func TestGroupRetime(t *testing.T) {
	q := &qlmQueue{}
	a := &seq{ID: 1, Deadline: 10 * dataplane.Second}
	b := &seq{ID: 2, Deadline: 30 * dataplane.Second}
	g := &group{members: []*seq{a, b}, deadline: a.Deadline}
	ext(a).group, ext(b).group = g, g
	q.pop(&Policy{}, nil, a)
	if g.deadline != b.Deadline || !g.started {
		t.Errorf("after popping the first member: deadline %v, started %v; want %v, true", g.deadline, g.started, b.Deadline)
	}
}

// TestPlanWeightsRequests: one instance, two groups that cannot both make their deadlines: a
// batch group of 100 requests (drain 10 s, deadline 10.5 s) and one of a single request
// (drain 1 s, deadline 1.5 s). Per group the violations tie and the small group's lateness
// is larger, so the unweighted plan put the large group last and made 100 requests late;
// counted per request (SLOs are per request, QLM §2.3), the single request is the one late.
func TestPlanWeightsRequests(t *testing.T) {
	cost := func(w float64) []*GroupCost { return []*GroupCost{{WMean: w, WQ: w, CMean: w, CQ: w}} }
	pr := &PlanProblem{Instances: []PlanInstance{{Loaded: "m"}}, Groups: []PlanGroup{
		{ID: 0, Model: "m", Deadline: 10.5, Pinned: -1, Cost: cost(10), Weight: 100},
		{ID: 1, Model: "m", Deadline: 1.5, Pinned: -1, Cost: cost(1), Weight: 1},
	}}
	sol := SolvePlan(pr, PlanOptions{MaxBinaries: -1})
	if len(sol.Queues[0]) != 2 || sol.Queues[0][0] != 0 {
		t.Errorf("queue %v: want the 100-request group first", sol.Queues[0])
	}
}

// TestBehind: the throughput floor's trigger (qlmQueue.behind). One instance of the hand
// profile (Θ = 5000 tok/s) runs an interactive request; a batch group of n requests of 1000
// expected output tokens waits. It is behind when the RCT drain (n·1000/Θ) passes a waiting
// looser-SLO member's deadline; a group of the running request's own SLO never counts (the
// guard does not hold it back), and nothing running means no guard to relax.
func TestBehind(t *testing.T) {
	dep := tokenTimeSetup(t)
	pol, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.New(dep, pol, []sim.Source{&sim.Times{}, &sim.Times{}}, sim.Options{Duration: dataplane.Second}); err != nil {
		t.Fatal(err)
	}
	p := pol.(*Policy)
	q := p.q.(*qlmQueue)
	q.init(p)
	now := 100 * dataplane.Second
	in := p.inst[0]
	for _, tc := range []struct {
		name     string
		running  bool
		app      dataplane.AppID
		n        int
		deadline dataplane.Time // of every waiting member, from now
		want     bool
	}{
		{"batch group drains in time", true, 1, 10, 60 * dataplane.Second, false},
		{"batch group drains past its deadline", true, 1, 400, 60 * dataplane.Second, true},
		{"first member alone already late", true, 1, 1, 100 * dataplane.Millisecond, true},
		{"same SLO as the running request", true, 0, 400, 60 * dataplane.Second, false},
		{"nothing running", false, 1, 400, 60 * dataplane.Second, false},
	} {
		slo := 600 * dataplane.Second
		if tc.app == 0 {
			slo = 3 * dataplane.Second
		}
		g := &group{app: tc.app, model: "m", mu: p.class[tc.app].Out.Mean, sd: p.class[tc.app].Out.Std, deadline: now + tc.deadline}
		for i := range tc.n {
			g.members = append(g.members, &seq{ID: dataplane.ReqID(100 + i), App: tc.app, Deadline: now + tc.deadline, Arrival: now + tc.deadline - slo, Tag: &seqExt{group: g}})
		}
		q.vq[0] = []*group{g}
		in.Reset()
		if tc.running {
			in.Place(&seq{ID: 1, App: 0, Prompt: 100, Deadline: now + 2*dataplane.Second, Arrival: now - dataplane.Second})
		}
		if got := q.behind(p, now, in); got != tc.want {
			t.Errorf("%s: behind %v, want %v", tc.name, got, tc.want)
		}
	}
}
