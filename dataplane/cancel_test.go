package dataplane

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// scripted is a test policy: every event is logged ("arrival 0", "cancel 1", "batch-done",
// "stage-arrival 2 [0 1]") and handed to on, which decides.
type scripted struct {
	v   View
	log []string
	on  func(p *scripted, now Time, ev *Event, out *Decisions)
	// forgot lists the IDs Forget got.
	forgot []ReqID
}

func (p *scripted) Name() string                   { return "scripted" }
func (p *scripted) Attach(v View) error            { p.v = v; return nil }
func (p *scripted) OnWorkerFailure() FailureMode   { return FailDrop }
func (p *scripted) Forget(id ReqID)                { p.forgot = append(p.forgot, id) }
func (p *scripted) events(kind EventKind) []string { return filterLog(p.log, kind.String()) }

func (p *scripted) Handle(now Time, ev *Event, out *Decisions) {
	switch ev.Kind {
	case EvArrival, EvCancel:
		p.log = append(p.log, fmt.Sprintf("%v %d", ev.Kind, ev.Req))
	case EvStageArrival:
		p.log = append(p.log, fmt.Sprintf("%v %d %v", ev.Kind, ev.Stage, p.v.Arrived(ev)))
	default:
		p.log = append(p.log, ev.Kind.String())
	}
	if p.on != nil {
		p.on(p, now, ev, out)
	}
}

func filterLog(log []string, prefix string) []string {
	var out []string
	for _, l := range log {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// testDep builds a one-server deployment of one application whose stages follow next
// (stage i → next[i]), one worker per stage, 1 ms per batch, 0.1 ms transfers.
func testDep(next [][]StageID, mod func(st []Stage)) *Deployment {
	d := &Deployment{Kind: "test", Apps: []App{{Name: "a", SLO: Second, Entry: []StageID{0}}},
		Topo: Topology{Servers: []Server{{Name: "s", UpMbps: 1000, DownMbps: 1000}}}}
	for i, n := range next {
		d.Topo.GPUs = append(d.Topo.GPUs, GPU{Type: "t"})
		d.Topo.Workers = append(d.Topo.Workers, Worker{Name: fmt.Sprint("w", i), GPU: i, VGPU: 1, Stage: StageID(i)})
		d.Stages = append(d.Stages, Stage{Name: fmt.Sprint("s", i), Next: n, Pool: []WorkerID{WorkerID(i)}, Batch: 4,
			LatUs: []Time{0, 1000, 1000, 1000, 1000}, XferPerSampleUs: 100, Pipeline: -1})
	}
	if mod != nil {
		mod(d.Stages)
	}
	return d
}

// dispatchAll sends reqs along stages (one hop each, on the stage's worker).
func dispatchAll(out *Decisions, reqs []ReqID, stages ...StageID) {
	var path []PathHop
	for _, s := range stages {
		path = append(path, PathHop{Stage: s, Worker: WorkerID(s)})
	}
	out.Dispatch(0, reqs, path)
}

// cancelRig is an engine under a scripted policy with a recorder, driven by hand.
type cancelRig struct {
	t   *testing.T
	e   *Engine
	p   *scripted
	rec *Recorder
	obs []string
}

func newRig(t *testing.T, d *Deployment, on func(p *scripted, now Time, ev *Event, out *Decisions)) *cancelRig {
	t.Helper()
	r := &cancelRig{t: t, p: &scripted{on: on}, rec: &Recorder{}}
	e, err := NewEngine(d, r.p, r.rec)
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(func(now Time, ev *Event, _ []Decision) {
		r.obs = append(r.obs, fmt.Sprintf("%v %d", ev.Kind, ev.Req))
	})
	r.e = e
	return r
}

// drive delivers the completions the engine asked for (runs and transfers, in order) until
// none is owed or stop says so, and returns the time of the last one.
func (r *cancelRig) drive(now Time, stop func() bool) Time {
	r.t.Helper()
	for stop == nil || !stop() {
		var next *Effect
		for _, f := range r.rec.Effects {
			if f.Kind == FxRunBatch || f.Kind == FxTransfer {
				f := f
				next = &f
				break
			}
		}
		if next == nil {
			return now
		}
		r.rec.Effects = slices.DeleteFunc(r.rec.Effects, func(f Effect) bool { return f == *next })
		now = max(now, next.Now) + next.Nominal
		ev := Event{Kind: EvTransferDone, Batch: next.Batch, Hop: int32(next.Hop), Start: next.Now, End: now}
		if next.Kind == FxRunBatch {
			ev.Kind, ev.Worker = EvBatchDone, next.Worker
		}
		if err := r.e.Handle(now, ev); err != nil {
			r.t.Fatal(err)
		}
	}
	return now
}

func (r *cancelRig) finishes() map[ReqID][]string {
	out := map[ReqID][]string{}
	for _, f := range r.rec.Effects {
		if f.Kind == FxFinish {
			out[f.Req] = append(out[f.Req], fmt.Sprintf("%v %s", f.Outcome, f.Reason))
		}
	}
	return out
}

// TestCancelHeld: a request cancelled while a batch holds it finishes as cancelled, once,
// when the last batch holding it ends (sink, Manual stage, routed stage, a path ending before
// its application, a DAG fan-out's second branch, a batch lost to a failed worker), its
// result discarded; the policy gets exactly one EvCancel, before the event that ended the
// batch, and never sees it arrive at a stage; the other requests of the batch go on.
func TestCancelHeld(t *testing.T) {
	chain := [][]StageID{{1}, nil}
	cases := []struct {
		name string
		next [][]StageID
		mod  func([]Stage)
		// on decides; the rig arrives requests 0 and 1 at t=0, the policy dispatches them
		// together on the second arrival, and request 0 is cancelled at t=10 µs.
		on func(p *scripted, now Time, ev *Event, out *Decisions)
		// fail: worker 0 fails at t=20 µs instead of the batches running.
		fail bool
		// want: request 1's outcome; order: the event kinds the policy saw after the cancel.
		want  string
		order []string
	}{
		{name: "sink", next: [][]StageID{nil},
			on: dispatchOnSecond(0), want: "completed ", order: []string{"cancel 0", "batch-done"}},
		{name: "chain-one-batch", next: chain,
			on: dispatchOnSecond(0, 1), want: "completed ", order: []string{"batch-done", "transfer-done", "cancel 0", "batch-done"}},
		{name: "manual", next: [][]StageID{nil}, mod: func(s []Stage) { s[0].Manual = true },
			on: func(p *scripted, now Time, ev *Event, out *Decisions) {
				dispatchOnSecond(0)(p, now, ev, out)
				if ev.Kind == EvBatchDone {
					for _, r := range p.v.Batch(ev.Batch).Reqs {
						if p.v.Req(r).Outcome == Pending {
							out.Complete(r, 0)
						}
					}
				}
			}, want: "completed ", order: []string{"cancel 0", "batch-done"}},
		{name: "routed-exit", next: chain, mod: func(s []Stage) { s[0].Routed = true },
			on: dispatchOnSecond(0), want: "completed ", order: []string{"cancel 0", "batch-done"}},
		{name: "path-ends-early", next: chain,
			on: func(p *scripted, now Time, ev *Event, out *Decisions) {
				dispatchOnSecond(0)(p, now, ev, out)
				if ev.Kind == EvStageArrival {
					dispatchAll(out, p.v.Arrived(ev), 1)
				}
			}, want: "completed ", order: []string{"batch-done", "cancel 0", "transfer-done", "stage-arrival 1 [1]", "batch-done"}},
		{name: "dag-fan-out", next: [][]StageID{{1, 2}, nil, nil},
			on: func(p *scripted, now Time, ev *Event, out *Decisions) {
				if ev.Kind == EvArrival && ev.Req == 1 {
					dispatchAll(out, []ReqID{0, 1}, 0)
				}
				if ev.Kind == EvStageArrival {
					dispatchAll(out, p.v.Arrived(ev), ev.Stage)
				}
			}, want: "completed ", order: []string{"batch-done", "cancel 0", "batch-done"}},
		{name: "lost-batch", next: [][]StageID{nil}, fail: true,
			on: dispatchOnSecond(0), want: "dropped worker-failed", order: []string{"cancel 0", "worker-down"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := testDep(c.next, c.mod)
			r := newRig(t, d, c.on)
			for range 2 {
				if _, err := r.e.Arrive(0, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			var now Time
			if c.name == "dag-fan-out" {
				// Until both branches are dispatched: request 0 is held twice.
				now = r.drive(0, func() bool { return r.e.Req(0).held == 2 })
			}
			if c.name == "routed-exit" {
				r.e.SetResult(0, Result{Exit: true})
				r.e.SetResult(1, Result{Exit: true})
			}
			now += 10
			if ok, err := r.e.Cancel(now, 0); !ok || err != nil {
				t.Fatalf("Cancel of a held request: %v, %v", ok, err)
			}
			if !r.e.Req(0).CancelRequested || r.e.Req(0).Outcome != Pending {
				t.Fatalf("a held request is marked, not finished: %+v", *r.e.Req(0))
			}
			if ok, _ := r.e.Cancel(now, 0); ok {
				t.Fatal("a second Cancel withdrew the request again")
			}
			n := len(r.p.log)
			if c.fail {
				if err := r.e.Handle(now, Event{Kind: EvWorkerDown, Worker: 0}); err != nil {
					t.Fatal(err)
				}
			}
			r.drive(now, nil)
			fin := r.finishes()
			if got := fin[0]; len(got) != 1 || got[0] != "dropped cancelled" {
				t.Errorf("request 0 finished %v, want once as dropped cancelled", got)
			}
			if got := fin[1]; len(got) != 1 || got[0] != c.want {
				t.Errorf("request 1 finished %v, want once as %q", got, c.want)
			}
			if got := r.p.log[n:]; !slices.Equal(got, c.order) {
				t.Errorf("policy saw %q after the cancel, want %q", got, c.order)
			}
			if got := r.p.events(EvCancel); len(got) != 1 {
				t.Errorf("EvCancel delivered %d times: %v", len(got), got)
			}
			if got := filterLog(r.obs, "cancel"); len(got) != 1 {
				t.Errorf("the Observe hook saw %d EvCancel, want 1", len(got))
			}
			if q := r.e.Req(0); q.Done < now || q.InFlight() {
				t.Errorf("request 0 done at %d, in flight %v", q.Done, q.InFlight())
			}
			if r.e.Finished() != 2 {
				t.Errorf("%d requests finished, want 2", r.e.Finished())
			}
		})
	}
}

// dispatchOnSecond dispatches requests 0 and 1 along stages when request 1 arrives.
func dispatchOnSecond(stages ...StageID) func(p *scripted, now Time, ev *Event, out *Decisions) {
	return func(p *scripted, now Time, ev *Event, out *Decisions) {
		if ev.Kind == EvArrival && ev.Req == 1 {
			dispatchAll(out, []ReqID{0, 1}, stages...)
		}
	}
}

// TestCancelQueuedAndFinished: a request no batch holds is finished at once with one
// EvCancel; cancelling a finished, cancelled, unknown or forgotten request changes nothing.
func TestCancelQueuedAndFinished(t *testing.T) {
	r := newRig(t, testDep([][]StageID{nil}, nil), func(p *scripted, now Time, ev *Event, out *Decisions) {
		if ev.Kind == EvArrival && ev.Req == 1 {
			dispatchAll(out, []ReqID{1}, 0)
		}
	})
	for range 3 {
		if _, err := r.e.Arrive(0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := r.e.Cancel(5, 0); !ok || err != nil {
		t.Fatalf("Cancel of a queued request: %v, %v", ok, err)
	}
	if got := r.finishes()[0]; !slices.Equal(got, []string{"dropped cancelled"}) {
		t.Fatalf("queued request finished %v at once, want dropped cancelled", got)
	}
	r.drive(5, nil) // request 1 completes
	for _, id := range []ReqID{0, 1, 3, -1} {
		if ok, err := r.e.Cancel(2000, id); ok || err != nil {
			t.Errorf("Cancel(%d) of a finished or unknown request: %v, %v", id, ok, err)
		}
	}
	if got := r.p.events(EvCancel); !slices.Equal(got, []string{"cancel 0"}) {
		t.Errorf("EvCancel: %v, want one for request 0", got)
	}
	if r.e.Req(1).Outcome != Completed {
		t.Errorf("request 1: %v", r.e.Req(1).Outcome)
	}
	if ok, _ := r.e.Cancel(2000, 2); !ok {
		t.Fatal("queued request 2 not withdrawn")
	}
	r.e.Compact()
	if !slices.Equal(r.p.forgot, []ReqID{0, 1, 2}) {
		t.Errorf("Compact forgot %v, want [0 1 2] in order", r.p.forgot)
	}
	if ok, err := r.e.Cancel(3000, 1); ok || err != nil {
		t.Errorf("Cancel of a forgotten request: %v, %v", ok, err)
	}
}

// TestCompactForgetsInOrder: Compact tells a Forgetter about every request it retires, in
// increasing ID order, and about no request still pending or held.
func TestCompactForgetsInOrder(t *testing.T) {
	r := newRig(t, testDep([][]StageID{nil}, nil), func(p *scripted, now Time, ev *Event, out *Decisions) {
		if ev.Kind == EvArrival && ev.Req%2 == 1 {
			dispatchAll(out, []ReqID{ev.Req - 1, ev.Req}, 0)
		}
	})
	var now Time
	arrive := func(i int, drive bool) {
		now = max(now, Time(i)*3000)
		if _, err := r.e.Arrive(now, 0, 0); err != nil {
			t.Fatal(err)
		}
		if drive {
			now = r.drive(now, nil)
		}
	}
	for i := range 8 {
		// Requests 6 and 7 stay in flight: Compact keeps them.
		arrive(i, i < 7)
	}
	// The three batches that ran were flagged closed as they ended (Compact retires them
	// without reading their records); the fourth, still running, was not.
	if got := r.e.closedSeen; !slices.Equal(got, []bool{true, true, true, false}) {
		t.Fatalf("closedSeen %v, want the three ended batches flagged", got)
	}
	checkClosedSeen(t, r.e)
	r.e.Compact()
	if want := []ReqID{0, 1, 2, 3, 4, 5}; !slices.Equal(r.p.forgot, want) {
		t.Fatalf("forgot %v, want %v", r.p.forgot, want)
	}
	if r.e.RequestBase() != 6 {
		t.Fatalf("request base %d, want 6", r.e.RequestBase())
	}
	now = r.drive(now, nil)
	arrive(8, false)
	arrive(9, true)
	r.e.Compact()
	if want := []ReqID{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(r.p.forgot, want) {
		t.Fatalf("forgot %v, want %v", r.p.forgot, want)
	}
}

// checkClosedSeen fails t when a batch flagged closed (Engine.closedSeen) is not closed:
// Compact would retire it with hops or transfers still owed.
func checkClosedSeen(t *testing.T, e *Engine) {
	t.Helper()
	if len(e.closedSeen) != len(e.batches) {
		t.Fatalf("closedSeen has %d flags for %d batches", len(e.closedSeen), len(e.batches))
	}
	for i, seen := range e.closedSeen {
		if seen && !e.batchClosed(&e.batches[i]) {
			t.Fatalf("batch %d flagged closed but not closed", e.batchBase+BatchID(i))
		}
	}
}

// bytesRNG hands out a fuzz input's bytes (0 once they run out).
type bytesRNG struct{ b []byte }

func (r *bytesRNG) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x
}

// fuzzPolicy is a valid but arbitrary policy: it queues requests at the stage they reach,
// dispatches, drops and (at a Manual stage) completes or re-runs them as its input bytes
// say, skips requests that are finished or in flight, and forgets withdrawn ones at
// EvCancel.
type fuzzPolicy struct {
	scripted
	rng    *bytesRNG
	queues [][]ReqID
}

// Forget drops a retired request from the queues too: a request finished elsewhere (a DAG's
// other sink, a drop) may still sit in a stage's queue when the engine compacts it, and its
// ID must not be read after that.
func (p *fuzzPolicy) Forget(id ReqID) {
	p.scripted.Forget(id)
	for s := range p.queues {
		p.queues[s] = slices.DeleteFunc(p.queues[s], func(r ReqID) bool { return r == id })
	}
}

func (p *fuzzPolicy) handle(now Time, ev *Event, out *Decisions) {
	d := p.v.Deployment()
	if p.queues == nil {
		p.queues = make([][]ReqID, len(d.Stages))
	}
	switch ev.Kind {
	case EvArrival:
		p.queues[0] = append(p.queues[0], ev.Req)
	case EvStageArrival:
		p.queues[ev.Stage] = append(p.queues[ev.Stage], p.v.Arrived(ev)...)
	case EvCancel:
		for s := range p.queues {
			p.queues[s] = slices.DeleteFunc(p.queues[s], func(r ReqID) bool { return r == ev.Req })
		}
	case EvBatchDone:
		b := p.v.Batch(ev.Batch)
		if h := b.Hops[ev.Hop]; d.Stages[h.Stage].Manual {
			for _, r := range b.Reqs {
				if q := p.v.Req(r); q.Outcome == Pending && !q.InFlight() {
					if p.rng.next()%2 == 0 {
						out.Complete(r, h.Stage)
					} else {
						p.queues[h.Stage] = append(p.queues[h.Stage], r)
					}
				}
			}
		}
	}
	// Decisions apply after Handle returns, so within one call a request a DAG holds at two
	// stages must not be dropped twice, nor dropped once dispatched on another branch.
	decided, dropped := map[ReqID]bool{}, map[ReqID]bool{}
	for s := range p.queues {
		// Only pending requests no batch holds can be dispatched or dropped (a DAG's
		// branches dispatch their own copies: the stage's queue holds each once).
		var ready []ReqID
		for _, r := range p.queues[s] {
			if q := p.v.Req(r); q.Outcome == Pending && !dropped[r] && (!q.InFlight() || len(d.Stages[0].Next) > 1 && s > 0) {
				ready = append(ready, r)
			}
		}
		p.queues[s] = ready
		switch op := p.rng.next(); {
		case len(ready) == 0:
		case op%4 == 0:
			if !p.v.Req(ready[0]).InFlight() && !decided[ready[0]] {
				out.Drop(ready[0], StageID(s), "fuzz", 0)
				decided[ready[0]], dropped[ready[0]] = true, true
				p.queues[s] = ready[1:]
			}
		case op%4 != 3:
			n := min(len(ready), 1+int(op/4)%4)
			path := []StageID{StageID(s)}
			if s == 0 && len(d.Stages) == 2 && op%4 == 2 {
				path = append(path, 1) // the whole chain in one batch
			}
			dispatchAll(out, ready[:n], path...)
			for _, r := range ready[:n] {
				decided[r] = true
			}
			p.queues[s] = ready[n:]
		}
	}
}

// FuzzEngineCancel drives the engine under fuzzPolicy on five shapes (one stage, a chain,
// a Manual stage, a routed stage with early exits, a DAG fan-out) with arbitrary arrivals,
// cancels, completion orders, compactions and a worker failure, then withdraws every request
// left and drains: every request finishes exactly once, a withdrawn one as cancelled with one
// EvCancel, no other gets EvCancel, Forget sees each retired request once in ID order, and
// the engine never refuses the policy's decisions, and no batch is flagged closed early.
func FuzzEngineCancel(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 1, 2, 2, 2, 3, 2, 2})
	f.Add(uint8(1), []byte{0, 0, 0, 6, 1, 2, 2, 2, 2, 2, 3, 250, 2, 2})
	f.Add(uint8(2), []byte{0, 0, 5, 9, 2, 1, 2, 2, 2, 7, 2, 2, 3})
	f.Add(uint8(3), []byte{0, 4, 0, 13, 2, 1, 2, 2, 2, 2})
	f.Add(uint8(4), []byte{0, 0, 0, 2, 5, 2, 2, 1, 2, 2, 2, 2, 3, 2, 2, 2})
	shapes := []struct {
		next [][]StageID
		mod  func([]Stage)
	}{
		{[][]StageID{nil}, nil},
		{[][]StageID{{1}, nil}, nil},
		{[][]StageID{nil}, func(s []Stage) { s[0].Manual = true }},
		{[][]StageID{{1}, nil}, func(s []Stage) { s[0].Routed = true }},
		{[][]StageID{{1, 2}, nil, nil}, nil},
	}
	f.Fuzz(func(t *testing.T, shape uint8, prog []byte) {
		sh := shapes[int(shape)%len(shapes)]
		d := testDep(sh.next, sh.mod)
		rng := &bytesRNG{b: prog}
		fp := &fuzzPolicy{rng: rng}
		fp.on = func(_ *scripted, now Time, ev *Event, out *Decisions) { fp.handle(now, ev, out) }
		rec := &Recorder{}
		e, err := NewEngine(d, fp, rec)
		if err != nil {
			t.Fatal(err)
		}
		fp.v = e.View()
		var now Time
		var n int
		withdrawn := map[ReqID]bool{}
		deliver := func(i int) {
			var owed []int
			for j, x := range rec.Effects {
				if x.Kind == FxRunBatch || x.Kind == FxTransfer {
					owed = append(owed, j)
				}
			}
			if len(owed) == 0 {
				return
			}
			x := rec.Effects[owed[i%len(owed)]]
			rec.Effects = slices.Delete(rec.Effects, owed[i%len(owed)], owed[i%len(owed)]+1)
			now = max(now, x.Now+x.Nominal)
			ev := Event{Kind: EvTransferDone, Batch: x.Batch, Hop: int32(x.Hop), Start: x.Now, End: now}
			if x.Kind == FxRunBatch {
				ev.Kind, ev.Worker = EvBatchDone, x.Worker
				if !e.BatchLost(x.Batch) {
					for _, r := range e.Batch(x.Batch).Reqs {
						e.SetResult(r, Result{Exit: rng.next()%3 == 0})
					}
				}
			}
			if err := e.Handle(now, ev); err != nil {
				t.Fatal(err)
			}
		}
		cancel := func(id ReqID) {
			ok, err := e.Cancel(now, id)
			if err != nil {
				t.Fatal(err)
			}
			withdrawn[id] = withdrawn[id] || ok
		}
		failed := false
		for steps := 0; len(rng.b) > 0 && steps < 300; steps++ {
			switch op := rng.next(); {
			case op == 250 && !failed:
				failed = true
				if err := e.Handle(now, Event{Kind: EvWorkerDown, Worker: 0}); err != nil {
					t.Fatal(err)
				}
			case op%4 == 0:
				now += Time(rng.next())
				if _, err := e.Arrive(now, 0, 0); err != nil {
					t.Fatal(err)
				}
				n++
			case op%4 == 1:
				cancel(ReqID(int(rng.next()) % (n + 1)))
			case op%4 == 2:
				deliver(int(rng.next()))
			default:
				e.Compact()
			}
			checkClosedSeen(t, e)
		}
		// Withdraw what is left and drain.
		for id := e.RequestBase(); int(id) < n; id++ {
			cancel(id)
		}
		for i := 0; slices.ContainsFunc(rec.Effects, func(x Effect) bool { return x.Kind == FxRunBatch || x.Kind == FxTransfer }); i++ {
			deliver(0)
			if i > 10000 {
				t.Fatal("the run does not drain")
			}
		}
		e.Compact()
		fin := map[ReqID][]Effect{}
		for _, x := range rec.Effects {
			if x.Kind == FxFinish {
				fin[x.Req] = append(fin[x.Req], x)
			}
		}
		evc := map[string]int{}
		for _, l := range fp.events(EvCancel) {
			evc[l]++
		}
		for id := ReqID(0); int(id) < n; id++ {
			fs := fin[id]
			if len(fs) != 1 {
				t.Fatalf("request %d finished %d times: %v", id, len(fs), fs)
			}
			cancelled := fs[0].Reason == DropCancelled
			if cancelled != withdrawn[id] {
				t.Fatalf("request %d finished %v (%s), withdrawn %v", id, fs[0].Outcome, fs[0].Reason, withdrawn[id])
			}
			if got := evc[fmt.Sprintf("cancel %d", id)]; got != map[bool]int{true: 1}[cancelled] {
				t.Fatalf("request %d (withdrawn %v) got %d EvCancel", id, withdrawn[id], got)
			}
		}
		// Everything finished and every batch closed: the last Compact retired all.
		for i, id := range fp.forgot {
			if id != ReqID(i) {
				t.Fatalf("Forget saw %v: want 0 to %d once each, in order", fp.forgot, n-1)
			}
		}
		if len(fp.forgot) != n {
			t.Fatalf("Forget saw %d requests of %d", len(fp.forgot), n)
		}
	})
}
