package qlm

import (
	"sort"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/sim"
)

// stepDriver is a minimal discrete-event driver for cancel tests: it runs batches for their
// nominal time and timers at their time, and lets a test cancel a request between events.
type stepDriver struct {
	eng    *dataplane.Engine
	now    dataplane.Time
	evs    []timed
	seq    int
	starts map[dataplane.ReqID][]dataplane.Time // dispatch times of each request's batches
}

type timed struct {
	at  dataplane.Time
	seq int
	ev  dataplane.Event
}

func (d *stepDriver) push(at dataplane.Time, ev dataplane.Event) {
	d.seq++
	d.evs = append(d.evs, timed{at, d.seq, ev})
	sort.Slice(d.evs, func(i, j int) bool {
		if d.evs[i].at != d.evs[j].at {
			return d.evs[i].at < d.evs[j].at
		}
		return d.evs[i].seq < d.evs[j].seq
	})
}

func (d *stepDriver) RunBatch(now dataplane.Time, w dataplane.WorkerID, b dataplane.BatchID, hop int, _ dataplane.StageID, _ int, nominal dataplane.Time) {
	for _, r := range d.eng.Batch(b).Reqs {
		d.starts[r] = append(d.starts[r], now)
	}
	d.push(now+nominal, dataplane.Event{Kind: dataplane.EvBatchDone, Batch: b, Hop: int32(hop), Worker: w, Start: now, End: now + nominal})
}

func (d *stepDriver) Transfer(now dataplane.Time, b dataplane.BatchID, hop int, _, _ dataplane.ServerID, _ int64, nominal dataplane.Time) {
	d.push(now+nominal, dataplane.Event{Kind: dataplane.EvTransferDone, Batch: b, Hop: int32(hop), Start: now, End: now + nominal})
}

func (d *stepDriver) SetTimer(at dataplane.Time, key int64) {
	d.push(at, dataplane.Event{Kind: dataplane.EvTimer, Key: key})
}

func (d *stepDriver) Finish(dataplane.Time, *dataplane.Request) {}

// next handles the earliest event; false when none is left.
func (d *stepDriver) next(t *testing.T) (dataplane.Event, bool) {
	if len(d.evs) == 0 {
		return dataplane.Event{}, false
	}
	e := d.evs[0]
	d.evs = d.evs[1:]
	d.now = e.at
	if err := d.eng.Handle(e.at, e.ev); err != nil {
		t.Fatalf("at %d µs, %v: %v", e.at, e.ev.Kind, err)
	}
	return e.ev, true
}

// untilIdle handles events until only ticks are left or the horizon passes.
func (d *stepDriver) untilIdle(t *testing.T, horizon dataplane.Time) {
	for len(d.evs) > 0 && d.evs[0].at <= horizon && d.eng.Finished() < int64(d.eng.NextRequestID()) {
		d.next(t)
	}
}

// cancelDeployment: one instance whose KV cache holds two of the test's sequences at once
// (blocks of 16 over prompt 400 + output 50: 464 tokens each, 1,000 in all), so the third
// waits; outputs are deterministic (std 0) for the SHEPHERD-like baseline's p95.
func cancelDeployment(t *testing.T) *dataplane.Deployment {
	prof := handProfile()
	prof.KVCapacityTokens = 1000
	cls := []llmspec.LLMClass{{Name: "c", Model: "m", SLO: formats.Duration(time.Minute), RateRPS: 1,
		InputTokens: llmspec.TokenProfile{Mean: 400, Max: 1000}, OutputTokens: llmspec.TokenProfile{Mean: 50, Max: 50}}}
	dep, err := Build(cls, Setup{Profiles: []formats.LLMProfile{prof}, Instances: []Instance{{Name: "i0", GPU: "A100", Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// TestCancelWaitingAndRunning (every QLM-kind policy): of three sequences
// arriving together on an instance whose KV holds two, the waiting one and a running one are
// cancelled during the first decode: the waiting one is never dispatched, the running one
// is in no iteration that starts after its cancel, its KV blocks are freed when the iteration
// in flight ends (the instance's accounting holds only the survivor's), and the survivor
// completes.
func TestCancelWaitingAndRunning(t *testing.T) {
	dep := cancelDeployment(t)
	for _, ps := range Policies() {
		t.Run(ps.Name, func(t *testing.T) {
			pol, err := Registry().New(dep, dataplane.Config{Policy: ps.Name}, PolicyQLM)
			if err != nil {
				t.Fatal(err)
			}
			d := &stepDriver{starts: map[dataplane.ReqID][]dataplane.Time{}}
			eng, err := dataplane.NewEngine(dep, pol, d)
			if err != nil {
				t.Fatal(err)
			}
			d.eng = eng
			var ids []dataplane.ReqID
			for range 3 {
				id, err := eng.Admit(0, dataplane.Arrival{App: 0, Attrs: dataplane.Attrs{InTokens: 400, OutTokens: 50}})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			p := pol.(*Policy)
			in := p.inst[0]
			// Until the first decode iteration runs with two sequences.
			for !(in.Busy() && !in.IterPrefill() && len(in.Running()) == 2) {
				if _, ok := d.next(t); !ok {
					t.Fatal("no decode iteration of two sequences")
				}
			}
			var running, waiting []dataplane.ReqID
			for _, id := range ids {
				if s := p.seqs[id]; s != nil && s.KV > 0 {
					running = append(running, id)
				} else {
					waiting = append(waiting, id)
				}
			}
			if len(running) != 2 || len(waiting) != 1 {
				t.Fatalf("running %v waiting %v, want two and one", running, waiting)
			}
			gone, kept := running[0], running[1]
			at := d.now
			for _, id := range []dataplane.ReqID{waiting[0], gone} {
				if ok, err := eng.Cancel(at, id); err != nil || !ok {
					t.Fatalf("cancel %d: %v %v", id, ok, err)
				}
			}
			// The iteration in flight ends: the cancelled running sequence is gone and its
			// KV free.
			for {
				ev, ok := d.next(t)
				if !ok {
					t.Fatal("the iteration in flight never ended")
				}
				if ev.Kind == dataplane.EvBatchDone && !in.Busy() || in.Busy() && d.now > at {
					break
				}
			}
			if p.seqs[gone] != nil || p.seqs[waiting[0]] != nil {
				t.Errorf("the policy still holds a cancelled sequence")
			}
			sum := 0
			for _, s := range in.Running() {
				if s.ID == gone || s.ID == waiting[0] {
					t.Errorf("cancelled request %d still running", s.ID)
				}
				sum += s.KV
			}
			if in.KVUsed() != sum || sum == 0 {
				t.Errorf("KV used %d, the running sequences hold %d", in.KVUsed(), sum)
			}
			d.untilIdle(t, 10*(60*dataplane.Second))
			for _, id := range []dataplane.ReqID{waiting[0], gone} {
				r := eng.Req(id)
				if r.Outcome != dataplane.Dropped || r.Reason() != dataplane.DropCancelled {
					t.Errorf("request %d: %v %q, want dropped as cancelled", id, r.Outcome, r.Reason())
				}
			}
			if n := len(d.starts[waiting[0]]); n != 0 {
				t.Errorf("the cancelled waiting request ran %d iterations", n)
			}
			for _, s := range d.starts[gone] {
				if s > at {
					t.Errorf("the cancelled running request ran an iteration at %d µs, after its cancel at %d", s, at)
				}
			}
			if o := eng.Req(kept).Outcome; o != dataplane.Completed {
				t.Errorf("the other request: %v, want completed", o)
			}
			if in.KVUsed() != 0 || p.stats.Cancelled != 2 {
				t.Errorf("at the end: KV used %d, %d cancelled", in.KVUsed(), p.stats.Cancelled)
			}
		})
	}
}

// TestTooLargeDroppedAtArrival: a request whose prompt and output exceed
// every instance's KV cache is dropped at arrival as too-large, by every policy, and the
// next request is served.
func TestTooLargeDroppedAtArrival(t *testing.T) {
	dep := cancelDeployment(t)
	for _, ps := range Policies() {
		t.Run(ps.Name, func(t *testing.T) {
			pol, err := Registry().New(dep, dataplane.Config{Policy: ps.Name}, PolicyQLM)
			if err != nil {
				t.Fatal(err)
			}
			d := &stepDriver{starts: map[dataplane.ReqID][]dataplane.Time{}}
			eng, err := dataplane.NewEngine(dep, pol, d)
			if err != nil {
				t.Fatal(err)
			}
			d.eng = eng
			big, err := eng.Admit(0, dataplane.Arrival{App: 0, Attrs: dataplane.Attrs{InTokens: 990, OutTokens: 20}})
			if err != nil {
				t.Fatal(err)
			}
			small, err := eng.Admit(0, dataplane.Arrival{App: 0, Attrs: dataplane.Attrs{InTokens: 400, OutTokens: 5}})
			if err != nil {
				t.Fatal(err)
			}
			if r := eng.Req(big); r.Outcome != dataplane.Dropped || r.Reason() != DropTooLarge {
				t.Errorf("the large request: %v %q, want dropped as %s at arrival", r.Outcome, r.Reason(), DropTooLarge)
			}
			d.untilIdle(t, 10*(60*dataplane.Second))
			if o := eng.Req(small).Outcome; o != dataplane.Completed {
				t.Errorf("the next request: %v, want completed", o)
			}
		})
	}
}

// TestLimits: the front end's intake limits are the largest KV cache of the class's model in
// whole blocks, and the class's maxima.
func TestLimits(t *testing.T) {
	ls, err := Limits(cancelDeployment(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0] != (Limit{Model: "m", KVTokens: 992, MaxPrompt: 1000, MaxOutput: 50}) {
		t.Errorf("limits %+v", ls)
	}
}

// TestForgetBoundsState: a run that compacts its engine leaves the policy's per-request
// tables holding only requests in flight.
func TestForgetBoundsState(t *testing.T) {
	dep := cancelDeployment(t)
	pol, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	d := &stepDriver{starts: map[dataplane.ReqID][]dataplane.Time{}}
	eng, err := dataplane.NewEngine(dep, pol, d)
	if err != nil {
		t.Fatal(err)
	}
	d.eng = eng
	for k := range 50 {
		if _, err := eng.Admit(d.now, dataplane.Arrival{App: 0, Attrs: dataplane.Attrs{InTokens: 100, OutTokens: 3}}); err != nil {
			t.Fatal(err)
		}
		d.untilIdle(t, d.now+(60*dataplane.Second))
		if k%10 == 9 {
			// What Engine.Compact does for a Forgetter (the contract; calling it twice is
			// harmless).
			base := eng.RequestBase()
			eng.Compact()
			for id := base; id < eng.RequestBase(); id++ {
				pol.(dataplane.Forgetter).Forget(id)
			}
		}
	}
	p := pol.(*Policy)
	if eng.Finished() != 50 {
		t.Fatalf("%d of 50 finished", eng.Finished())
	}
	if n := len(p.seqs) + len(p.stats.TTFT) + len(p.stats.Predicted); n != 0 {
		t.Errorf("after compaction the policy still holds %d per-request entries", n)
	}
}

// TestDropLate (policy parameter drop_late): under 3× overload every policy
// drops, with reason deadline, requests that can no longer meet their deadline (hopeless at
// arrival, or expired while waiting) instead of serving them late: each request still
// finishes once, no other drop happens, no policy serves more requests late than without
// the parameter, and the baselines that queue past deadlines drop some. Without the
// parameter nothing is dropped (the paper's behaviour).
func TestDropLate(t *testing.T) {
	cls, profs := bundled(t)
	dep, err := Build(cls, Setup{Profiles: profs, Instances: []Instance{{Name: "i0", GPU: "A100", Model: "mistral-7b"}, {Name: "i1", GPU: "A100", Model: "vicuna-13b"}}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, pol string, on bool) (late, dropped int) {
		cfg := dataplane.Config{Policy: pol, Params: map[string]string{"admit": "all"}}
		if on {
			cfg.Params["drop_late"] = "true"
		}
		p, err := Registry().New(dep, cfg, PolicyQLM)
		if err != nil {
			t.Fatal(err)
		}
		var srcs []sim.Source
		for a := range dep.Apps {
			spec, _ := sim.ParseArrival("poisson")
			src, err := spec.New(dep.Apps[a].RateRPS*3, dep.Apps[a].Name, uint64(a+7))
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, src)
		}
		seen := map[dataplane.ReqID]int{}
		s, err := sim.New(dep, p, srcs, sim.Options{Duration: 20 * dataplane.Second, Seed: 3,
			OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
				seen[r.ID]++
				switch {
				case r.Outcome == dataplane.Late:
					late++
				case r.Outcome == dataplane.Dropped && r.Reason() == dataplane.DropDeadline && on:
					dropped++
				case r.Outcome == dataplane.Dropped:
					t.Errorf("drop_late=%v: request %d dropped: %s", on, r.ID, r.Reason())
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		if n := s.Engine.HeldRequests(); n == 0 || len(seen) != n {
			t.Fatalf("%d requests, %d finished", n, len(seen))
		}
		for id, c := range seen {
			if c != 1 {
				t.Errorf("request %d finished %d times", id, c)
			}
		}
		return late, dropped
	}
	for _, ps := range Policies() {
		t.Run(ps.Name, func(t *testing.T) {
			lateOff, _ := run(t, ps.Name, false)
			lateOn, dropped := run(t, ps.Name, true)
			t.Logf("late %d without drop_late; with it %d late, %d dropped for their deadline", lateOff, lateOn, dropped)
			if lateOn > lateOff {
				t.Errorf("drop_late served %d requests late, %d without it", lateOn, lateOff)
			}
			if ps.Name == PolicyFCFS && dropped == 0 {
				t.Errorf("vLLM-FCFS at 3x dropped nothing for its deadline (%d late without drop_late)", lateOff)
			}
		})
	}
}
