package sim

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// fifoPolicy is a minimal policy that handles EvCancel: requests wait in one FIFO and go, up
// to the stage's batch size, along the first pipeline on its first workers whenever the
// entry worker is idle. The simulator's cancel tests run it so that they do not depend on
// any system's policy.
type fifoPolicy struct {
	v    dataplane.View
	path []dataplane.PathHop
	max  int
	q    []dataplane.ReqID
}

func (p *fifoPolicy) Name() string { return "fifo-test" }
func (p *fifoPolicy) Attach(v dataplane.View) error {
	p.v = v
	d := v.Deployment()
	for _, s := range d.Apps[0].Pipelines[0] {
		p.path = append(p.path, dataplane.PathHop{Stage: s, Worker: d.Stages[s].Pool[0]})
	}
	p.max = d.Stages[p.path[0].Stage].Batch
	return nil
}

func (p *fifoPolicy) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	switch ev.Kind {
	case dataplane.EvArrival:
		p.q = append(p.q, ev.Req)
	case dataplane.EvCancel:
		p.q = slices.DeleteFunc(p.q, func(r dataplane.ReqID) bool { return r == ev.Req })
	}
	if len(p.q) > 0 && p.v.WorkerIdle(p.path[0].Worker) {
		n := min(len(p.q), p.max)
		out.Dispatch(0, p.q[:n], p.path)
		p.q = p.q[n:]
	}
}

func runCancels(t *testing.T, opts Options) (*Sim, *Metrics) {
	t.Helper()
	dep := loadDep(t, "mixed.json")
	spec, err := ParseArrival("poisson")
	if err != nil {
		t.Fatal(err)
	}
	src, err := spec.New(dep.Apps[0].RateRPS*0.8, dep.Apps[0].Name, 3)
	if err != nil {
		t.Fatal(err)
	}
	opts.Duration, opts.Seed, opts.Jitter = dataplane.Second, 5, 0.05
	s, err := New(dep, &fifoPolicy{}, []Source{src}, opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

// TestCancelFraction: Options.CancelFraction withdraws a seeded share of the requests, some
// queued and some in flight; reports count them as cancelled, apart from drops and never as
// completed, with attainment's formula unchanged; the same seed cancels the same requests.
func TestCancelFraction(t *testing.T) {
	s, m := runCancels(t, Options{CancelFraction: 0.3})
	tot := m.Total
	if tot.Cancelled == 0 || tot.Requests == 0 {
		t.Fatalf("no request cancelled: %+v", tot)
	}
	if got := tot.Completed + tot.Late + tot.Dropped + tot.Cancelled; got != tot.Requests {
		t.Fatalf("completed+late+dropped+cancelled = %d, want the %d requests", got, tot.Requests)
	}
	if want := round6(float64(tot.Completed) / float64(tot.Requests)); tot.Attainment != want {
		t.Fatalf("attainment %g, want completed/requests = %g", tot.Attainment, want)
	}
	for _, d := range tot.Drops {
		if d.Reason == string(dataplane.DropCancelled) {
			t.Fatalf("cancels counted among the drops: %+v", tot.Drops)
		}
	}
	var held, cancelled int64
	for _, r := range s.Engine.Requests() {
		if r.Reason() == dataplane.DropCancelled {
			cancelled++
			if r.Dispatch != dataplane.Never {
				held++ // withdrawn in flight: finished when its batch ended
			}
			if r.Done < r.Arrival || r.Done > r.Deadline+dataplane.Second {
				t.Fatalf("request %d cancelled at %d (arrived %d, deadline %d)", r.ID, r.Done, r.Arrival, r.Deadline)
			}
		}
	}
	if cancelled != tot.Cancelled || held == 0 || held == cancelled {
		t.Fatalf("%d cancelled (%d of them in flight), report says %d: want both kinds", cancelled, held, tot.Cancelled)
	}
	if share := float64(cancelled) / float64(tot.Requests); share < 0.1 || share > 0.3 {
		t.Fatalf("cancelled share %g: want about 0.3 less those finished first", share)
	}
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"cancelled":`) {
		t.Fatalf("JSON report has no cancelled count: %s", js)
	}
	_, again := runCancels(t, Options{CancelFraction: 0.3})
	if !jsonEqual(t, again, m) {
		t.Fatal("the same seed cancelled differently")
	}
	_, none := runCancels(t, Options{})
	js0, _ := json.Marshal(none)
	if none.Total.Cancelled != 0 || strings.Contains(string(js0), "cancelled") {
		t.Fatalf("a run without cancels reports cancels: %s", js0)
	}
}

func jsonEqual(t *testing.T, a, b *Metrics) bool {
	t.Helper()
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestExplicitCancels: Options.Cancels withdraws the named requests at the given times; a
// cancel of a request that finished first, or never arrives, changes nothing.
func TestExplicitCancels(t *testing.T) {
	base, _ := runCancels(t, Options{})
	at := base.Engine.Req(0).Arrival // dispatched at once: in flight when cancelled
	s, m := runCancels(t, Options{Cancels: []Cancel{{At: at - 1, Req: 2}, {At: at, Req: 0},
		{At: 900 * dataplane.Millisecond, Req: 1}, {At: 2 * dataplane.Second, Req: 1 << 30}}})
	r0 := s.Engine.Req(0)
	if r0.Outcome != dataplane.Dropped || r0.Reason() != dataplane.DropCancelled || r0.Dispatch != at {
		t.Fatalf("request 0: %v %s dispatched at %d, want cancelled in flight", r0.Outcome, r0.Reason(), r0.Dispatch)
	}
	if r2 := s.Engine.Req(2); r2.Reason() == dataplane.DropCancelled {
		t.Fatalf("request 2 cancelled before it arrived")
	}
	if r1 := s.Engine.Req(1); r1.Reason() == dataplane.DropCancelled {
		t.Fatalf("request 1 finished long before its cancel and was still cancelled")
	}
	if m.Total.Cancelled != 1 {
		t.Fatalf("%d cancelled, want 1", m.Total.Cancelled)
	}
}

// TestCancelOptionsChecked: a bad fraction or cancel is refused up front.
func TestCancelOptionsChecked(t *testing.T) {
	dep := loadDep(t, "mixed.json")
	for _, o := range []Options{{CancelFraction: -0.1}, {CancelFraction: 1.5}, {Cancels: []Cancel{{At: -1}}}} {
		if _, err := New(dep, &fifoPolicy{}, []Source{nil}, o); err == nil || !strings.Contains(err.Error(), "cancel") {
			t.Errorf("%+v: %v, want an error naming the cancel", o, err)
		}
	}
}
