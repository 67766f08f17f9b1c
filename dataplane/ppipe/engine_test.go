package ppipe

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

func newEngine(t *testing.T, plan string, pol dataplane.Policy) (*dataplane.Engine, *dataplane.Recorder) {
	t.Helper()
	rec := &dataplane.Recorder{}
	e, err := dataplane.NewEngine(loadFixture(t, plan), pol, rec)
	if err != nil {
		t.Fatal(err)
	}
	return e, rec
}

func mustArrive(t *testing.T, e *dataplane.Engine, now dataplane.Time) dataplane.ReqID {
	t.Helper()
	id, err := e.Arrive(now, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func runs(fx []dataplane.Effect) []dataplane.Effect {
	var out []dataplane.Effect
	for _, f := range fx {
		if f.Kind == dataplane.FxRunBatch {
			out = append(out, f)
		}
	}
	return out
}

// TestFeedbackCorrection drives the one-GPU plan by hand: the first batch runs 3 ms longer
// than profiled, and the dispatcher must shift the reservation queued behind it, so the next
// batch is reserved after the corrected end, not the profiled one. An early finish with
// nothing reserved behind frees the GPU at once.
func TestFeedbackCorrection(t *testing.T) {
	p := NewPPipe(PPipeOptions{Penalty: true, Admission: true})
	e, rec := newEngine(t, "one-gpu.json", p)
	mustArrive(t, e, 0)
	mustArrive(t, e, 0) // {r0, r1} reserved [0, 10 ms)
	mustArrive(t, e, 1000)
	mustArrive(t, e, 1000) // {r2, r3} reserved [10, 20 ms)
	if got := p.res.iv[0].bu; got != 20000 {
		t.Fatalf("busy-until %d, want 20000", got)
	}
	r := runs(rec.Take())
	if len(r) != 1 || r[0].Batch != 0 || r[0].Nominal != 10000 {
		t.Fatalf("effects: %v", r)
	}
	// The batch actually ends at 13 ms: later reservations shift by +3 ms.
	if err := e.Handle(13000, dataplane.Event{Kind: dataplane.EvBatchDone, Batch: 0, Worker: 0, Start: 0, End: 13000}); err != nil {
		t.Fatal(err)
	}
	if got := p.res.iv[0].bu; got != 23000 {
		t.Fatalf("after a 3 ms overrun busy-until %d, want 23000", got)
	}
	fx := rec.Take()
	if r := runs(fx); len(r) != 1 || r[0].Batch != 1 || r[0].Now != 13000 {
		t.Fatalf("the second batch must start when the first really ended: %v", fx)
	}
	mustArrive(t, e, 14000)
	mustArrive(t, e, 14000)
	if got := e.Batches()[2].Hops[0].ResStart; got != 23000 {
		t.Fatalf("third batch reserved at %d, want 23000 (corrected)", got)
	}
	// The second batch ends early (at 20 ms instead of 23): a later reservation exists, so
	// it shifts back by 3 ms, and never before now.
	if err := e.Handle(20000, dataplane.Event{Kind: dataplane.EvBatchDone, Batch: 1, Worker: 0, Start: 13000, End: 20000}); err != nil {
		t.Fatal(err)
	}
	if got := p.res.iv[0].bu; got != 30000 {
		t.Fatalf("after an early finish busy-until %d, want 30000", got)
	}
	// The third batch ends early with nothing behind it: the GPU is free from its end.
	if err := e.Handle(26000, dataplane.Event{Kind: dataplane.EvBatchDone, Batch: 2, Worker: 0, Start: 20000, End: 26000}); err != nil {
		t.Fatal(err)
	}
	if got := p.res.iv[0].bu; got != 26000 {
		t.Fatalf("busy-until %d, want 26000", got)
	}
	for _, r := range e.Requests() {
		if r.Outcome != dataplane.Completed {
			t.Errorf("request %d: %v", r.ID, r.Outcome)
		}
	}
}

func TestIntervalReservations(t *testing.T) {
	var r resources
	r.init(2, true)
	r.book(0, 0, 10)
	r.book(0, 20, 30)
	r.book(1, 10, 15)
	cases := []struct {
		t, dur, want dataplane.Time
	}{
		{5, 5, 10},  // fits the gap [10,20)
		{5, 15, 30}, // too long for the gap
		{12, 8, 12}, // exactly fills [12,20)
		{31, 3, 31},
	}
	for _, c := range cases {
		if got := r.earliest1(0, c.t, c.dur); got != c.want {
			t.Errorf("earliest1(%d, %d) = %d, want %d", c.t, c.dur, got, c.want)
		}
	}
	if got := r.earliest2(0, 1, 5, 5); got != 15 {
		t.Errorf("earliest2(5,5) = %d, want 15", got)
	}
	if got := r.earliest2(0, 1, 12, 8); got != 30 {
		t.Errorf("earliest2(12,8) = %d, want 30", got)
	}
	// Feedback: [0,10) really ended at 12, shifting [20,30) to [22,32).
	if !r.correct(0, 12, 12) || len(r.list(0)) != 1 || r.list(0)[0] != (ival{22, 32}) || r.iv[0].bu != 32 {
		t.Errorf("after correction: %v, busy-until %d", r.list(0), r.iv[0].bu)
	}
	// The last one ends early: the resource is free from then.
	if !r.correct(0, 25, 25) || len(r.list(0)) != 0 || r.iv[0].bu != 25 {
		t.Errorf("after early end: %v, busy-until %d", r.list(0), r.iv[0].bu)
	}
	// On time: nothing changes.
	if r.correct(1, 15, 15) || r.iv[1].bu != 15 {
		t.Errorf("on-time report changed the table: busy-until %d", r.iv[1].bu)
	}
}

// badPolicy makes one invalid decision per arrival, chosen by the test.
type badPolicy struct {
	v      dataplane.View
	decide func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions)
	ticks  int
	every  dataplane.Time
}

func (p *badPolicy) Name() string                  { return "bad" }
func (p *badPolicy) Attach(v dataplane.View) error { p.v = v; return nil }
func (p *badPolicy) TickEvery() dataplane.Time     { return p.every }
func (p *badPolicy) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	if ev.Kind == dataplane.EvTick {
		p.ticks++
		return
	}
	if p.decide != nil {
		p.decide(p.v, ev, out)
	}
}

func TestEngineRejectsInvalidDecisions(t *testing.T) {
	cases := []struct {
		name   string
		plan   string
		decide func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions)
		want   string
	}{
		{"worker of another stage", "nic.json", func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions) {
			out.Dispatch(0, []dataplane.ReqID{ev.Req}, []dataplane.PathHop{{Stage: 0, Worker: 2}}) // worker 2 is the L4 of stage 1
		}, "does not serve stage"},
		{"skipped stage", "nic.json", func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions) {
			out.Dispatch(0, []dataplane.ReqID{ev.Req}, []dataplane.PathHop{{Stage: 1, Worker: 2}, {Stage: 1, Worker: 2}})
		}, "does not follow"},
		{"drop in flight", "one-gpu.json", func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions) {
			out.Dispatch(0, []dataplane.ReqID{ev.Req}, []dataplane.PathHop{{Stage: 0, Worker: 0}})
			out.Drop(ev.Req, 0, "test", 0)
		}, "in flight"},
		{"timer in the past", "one-gpu.json", func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions) {
			out.SetTimer(-1, 1)
		}, "before now"},
		{"empty batch", "one-gpu.json", func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions) {
			out.Dispatch(0, nil, []dataplane.PathHop{{Stage: 0, Worker: 0}})
		}, "dispatch with 0 requests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newEngine(t, c.plan, &badPolicy{decide: func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions) {
				if ev.Kind == dataplane.EvArrival {
					c.decide(v, ev, out)
				}
			}})
			_, err := e.Arrive(5, 0, 0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestTicksAndStaleTimers(t *testing.T) {
	p := &badPolicy{every: dataplane.Second}
	e, rec := newEngine(t, "one-gpu.json", p)
	fx := rec.Take()
	if len(fx) != 1 || fx[0].Kind != dataplane.FxSetTimer || fx[0].At != 0 {
		t.Fatalf("first tick not armed at 0: %v", fx)
	}
	key := fx[0].Key
	for i := 0; i < 3; i++ {
		if err := e.Handle(dataplane.Time(i)*dataplane.Second, dataplane.Event{Kind: dataplane.EvTimer, Key: key}); err != nil {
			t.Fatal(err)
		}
		fx := rec.Take()
		if len(fx) != 1 || fx[0].At != dataplane.Time(i+1)*dataplane.Second {
			t.Fatalf("tick %d re-armed as %v", i, fx)
		}
	}
	if p.ticks != 3 {
		t.Fatalf("%d ticks, want 3", p.ticks)
	}
	// A policy timer replaced before it fires: the old token is ignored.
	p.decide = func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions) {
		if ev.Kind == dataplane.EvArrival {
			out.SetTimer(v.Req(ev.Req).Arrival+100, 7)
		}
	}
	fired := 0
	p2 := p.decide
	p.decide = func(v dataplane.View, ev *dataplane.Event, out *dataplane.Decisions) {
		if ev.Kind == dataplane.EvTimer {
			fired++
		}
		p2(v, ev, out)
	}
	mustArrive(t, e, 10)
	mustArrive(t, e, 20)
	var tokens []int64
	for _, f := range rec.Take() {
		if f.Kind == dataplane.FxSetTimer {
			tokens = append(tokens, f.Key)
		}
	}
	for _, tok := range tokens {
		if err := e.Handle(200, dataplane.Event{Kind: dataplane.EvTimer, Key: tok}); err != nil {
			t.Fatal(err)
		}
	}
	if fired != 1 {
		t.Fatalf("policy saw %d timers, want 1 (the stale one is dropped)", fired)
	}
}

func TestRegistry(t *testing.T) {
	if _, err := NewPolicy(dataplane.Config{Policy: "no-such"}); err == nil || !strings.Contains(err.Error(), "ppipe") {
		t.Fatalf("unknown policy error should list the registered ones: %v", err)
	}
	if _, err := NewPolicy(dataplane.Config{Policy: "ppipe", Params: map[string]string{"interval": "maybe"}}); err == nil {
		t.Fatal("bad boolean parameter accepted")
	}
	for _, name := range []string{"ppipe", "ppipe-paper", "reactive"} {
		p, err := NewPolicy(dataplane.Config{Policy: name})
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() == "" {
			t.Fatalf("%s: empty name", name)
		}
	}
	if o, err := dataplane.NewOrder("", "edf"); err != nil || o.Name() != "edf" {
		t.Fatalf("default order: %v %v", o, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("duplicate registration did not panic")
		}
	}()
	dataplane.NewRegistry(append(Policies(), Policies()[0])...)
}

func TestFromPlanPacking(t *testing.T) {
	d := loadFixture(t, "mixed.json")
	// Stage m3/p0/s1 runs on 4 half-L4 slices: two physical GPUs, two slices each.
	var st *dataplane.Stage
	for i := range d.Stages {
		if d.Stages[i].Name == "m3/p0/s1" {
			st = &d.Stages[i]
		}
	}
	if st == nil || len(st.Pool) != 4 {
		t.Fatalf("stage m3/p0/s1: %+v", st)
	}
	gpus := map[int]int{}
	for _, w := range st.Pool {
		gpus[d.Topo.Workers[w].GPU]++
		if d.Topo.Workers[w].VGPU != 2 {
			t.Fatalf("worker %s: vgpu %d", d.Topo.Workers[w].Name, d.Topo.Workers[w].VGPU)
		}
	}
	if len(gpus) != 2 {
		t.Fatalf("4 half slices on %d GPUs, want 2", len(gpus))
	}
	// Latencies below the planned batch come from the profile, the planned one from the plan.
	p0 := &d.Stages[d.Apps[0].Pipelines[0][0]]
	if p0.Lat(2) != 12600 || p0.Lat(1) != 9000 {
		t.Fatalf("P4 stage latencies %v", p0.LatUs)
	}
	if p0.Xfer(2) != 800 {
		t.Fatalf("transfer of 2 = %d, want the plan's 800", p0.Xfer(2))
	}
}
