package dyorc

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/sim"
)

// cancelDriver is a minimal discrete-event driver that, unlike sim, withdraws requests
// (Engine.Cancel) at given times and checks that no withdrawn request is dispatched again.
type cancelDriver struct {
	t         *testing.T
	e         *dataplane.Engine
	evs       []drvEvent
	seq       int
	finished  map[dataplane.ReqID]int
	cancelled map[dataplane.ReqID]bool
	// queued, held: cancels that found the request waiting, and inside a batch.
	queued, held int
}

type drvEvent struct {
	at  dataplane.Time
	seq int
	ev  dataplane.Event
	// kind: 0 an engine event, 1 an arrival of app ev.Stage, 2 a cancel of request ev.Req.
	kind int
}

func (d *cancelDriver) push(at dataplane.Time, kind int, ev dataplane.Event) {
	d.seq++
	x := drvEvent{at: at, seq: d.seq, ev: ev, kind: kind}
	i := sort.Search(len(d.evs), func(i int) bool { return d.evs[i].at > at })
	d.evs = append(d.evs, drvEvent{})
	copy(d.evs[i+1:], d.evs[i:])
	d.evs[i] = x
}

func (d *cancelDriver) RunBatch(now dataplane.Time, w dataplane.WorkerID, b dataplane.BatchID, hop int, _ dataplane.StageID, _ int, nominal dataplane.Time) {
	for _, id := range d.e.Batch(b).Reqs {
		if d.cancelled[id] {
			d.t.Errorf("request %d dispatched at %d after its cancel", id, now)
		}
	}
	d.push(now+nominal, 0, dataplane.Event{Kind: dataplane.EvBatchDone, Batch: b, Hop: int32(hop), Worker: w, Start: now, End: now + nominal})
}

func (d *cancelDriver) Transfer(now dataplane.Time, b dataplane.BatchID, hop int, _, _ dataplane.ServerID, _ int64, nominal dataplane.Time) {
	d.push(now+nominal, 0, dataplane.Event{Kind: dataplane.EvTransferDone, Batch: b, Hop: int32(hop), Start: now, End: now + nominal})
}

func (d *cancelDriver) SetTimer(at dataplane.Time, key int64) {
	d.push(at, 0, dataplane.Event{Kind: dataplane.EvTimer, Key: key})
}

func (d *cancelDriver) Finish(_ dataplane.Time, r *dataplane.Request) {
	d.finished[r.ID]++
	if r.Reason() == dataplane.DropCancelled {
		d.cancelled[r.ID] = true
	}
}

// runCancels runs pol on dep with arrivals (app, time) and withdraws the n-th arrival at
// cancelAt[n]; Compact (with the Forgetter contract) every compactEvery events if > 0.
func runCancels(t *testing.T, dep *dataplane.Deployment, pol dataplane.Policy, apps []dataplane.AppID, arr []dataplane.Time, cancelAt map[int]dataplane.Time, compactEvery int) (*dataplane.Engine, *cancelDriver) {
	t.Helper()
	d := &cancelDriver{t: t, finished: map[dataplane.ReqID]int{}, cancelled: map[dataplane.ReqID]bool{}}
	e, err := dataplane.NewEngine(dep, pol, d)
	if err != nil {
		t.Fatal(err)
	}
	d.e = e
	for i, at := range arr {
		d.push(at, 1, dataplane.Event{Stage: dataplane.StageID(apps[i])})
	}
	n, events := 0, 0
	for len(d.evs) > 0 {
		x := d.evs[0]
		d.evs = d.evs[1:]
		switch x.kind {
		case 1:
			id, err := e.Admit(x.at, dataplane.Arrival{App: dataplane.AppID(x.ev.Stage), Attrs: dataplane.Attrs{Trace: int64(n) + 1}})
			if err != nil {
				t.Fatal(err)
			}
			if at, ok := cancelAt[n]; ok {
				d.push(max(at, x.at), 2, dataplane.Event{Req: id})
			}
			n++
		case 2:
			id := x.ev.Req
			if id < e.RequestBase() || e.Req(id).Outcome != dataplane.Pending {
				break
			}
			if e.Req(id).InFlight() {
				d.held++
			} else {
				d.queued++
			}
			if _, err := e.Cancel(x.at, id); err != nil {
				t.Fatal(err)
			}
		default:
			if x.ev.Kind == dataplane.EvBatchDone && !e.BatchLost(x.ev.Batch) {
				b := e.Batch(x.ev.Batch)
				st := b.Hops[x.ev.Hop].Stage
				for _, id := range b.Reqs {
					q := e.Req(id)
					if res, ok := dep.Emulated(st, q, dataplane.EmulatedU(q, st)); ok {
						e.SetResult(id, res)
					}
				}
			}
			if err := e.Handle(x.at, x.ev); err != nil {
				t.Fatal(err)
			}
		}
		events++
		if compactEvery > 0 && events%compactEvery == 0 {
			compact(e, pol)
		}
		if n == len(arr) && e.Finished() == int64(e.NextRequestID()) {
			break
		}
	}
	if e.Finished() != int64(n) {
		t.Fatalf("%d of %d requests finished", e.Finished(), n)
	}
	for id, k := range d.finished {
		if k != 1 {
			t.Fatalf("request %d finished %d times", id, k)
		}
	}
	return e, d
}

// compact is Engine.Compact with the Forgetter contract: the policy forgets every request the
// engine retired, in increasing ID order (a second Forget of an ID is a no-op).
func compact(e *dataplane.Engine, pol dataplane.Policy) {
	base := e.RequestBase()
	e.Compact()
	if f, ok := pol.(dataplane.Forgetter); ok {
		for id := base; id < e.RequestBase(); id++ {
			f.Forget(id)
		}
	}
}

// stream is a steady stream of both apps of the small example plan for dur.
func stream(dep *dataplane.Deployment, gap, dur dataplane.Time) ([]dataplane.AppID, []dataplane.Time) {
	var apps []dataplane.AppID
	var arr []dataplane.Time
	for at, i := dataplane.Time(0), 0; at < dur; at, i = at+gap, i+1 {
		apps = append(apps, dataplane.AppID(i%len(dep.Apps)))
		arr = append(arr, at)
	}
	return apps, arr
}

func examplePlan(t *testing.T) *dataplane.Deployment {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "export", "dyorc", "plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, err := FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// TestCancel withdraws every third request at varied points of its workflow under every
// policy: a withdrawn request finishes once, as cancelled, whether it waited in a GPU's
// queue or ran in a batch, is never dispatched afterwards, leaves no task, reservation or
// state behind, and the others are served.
func TestCancel(t *testing.T) {
	dep := examplePlan(t)
	for _, sp := range Policies() {
		t.Run(sp.Name, func(t *testing.T) {
			pol, err := sp.New(dataplane.Config{Policy: sp.Name})
			if err != nil {
				t.Fatal(err)
			}
			apps, arr := stream(dep, 100*dataplane.Millisecond, 20*dataplane.Second)
			cancelAt := map[int]dataplane.Time{}
			for i := range arr {
				if i%3 == 0 {
					cancelAt[i] = arr[i] + dataplane.Time(i*7919%3000)*dataplane.Millisecond
				}
			}
			e, d := runCancels(t, dep, pol, apps, arr, cancelAt, 0)
			if d.queued == 0 || d.held == 0 {
				t.Fatalf("%d cancels of waiting requests, %d of running ones: want both", d.queued, d.held)
			}
			served := 0
			reqs := e.Requests()
			for i := range reqs {
				r := &reqs[i]
				if _, withdrawn := cancelAt[int(r.ID)]; r.Reason() == dataplane.DropCancelled && !withdrawn {
					t.Fatalf("request %d cancelled, never withdrawn", r.ID)
				}
				if r.Outcome == dataplane.Completed || r.Outcome == dataplane.Late {
					served++
				}
			}
			p := pol.(*Policy)
			if p.Tracked() != 0 {
				t.Fatalf("%d requests still tracked after the run", p.Tracked())
			}
			for g := range p.devs {
				if dv := &p.devs[g]; len(dv.queue)+len(dv.resv)+len(dv.order) != 0 {
					t.Fatalf("GPU %d keeps %d tasks, %d reservations, %d plan items", g, len(dv.queue), len(dv.resv), len(dv.order))
				}
			}
			if served < len(arr)/3 {
				t.Fatalf("%d of %d requests served", served, len(arr))
			}
			t.Logf("%d cancels of waiting requests, %d of running ones, %d served", d.queued, d.held, served)
		})
	}
}

// TestForget: whatever state a request leaves behind goes when the engine retires it.
func TestForget(t *testing.T) {
	dep := examplePlan(t)
	pol, _ := Registry().Lookup("dyorc")
	p, err := pol.New(dataplane.Config{Policy: "dyorc"})
	if err != nil {
		t.Fatal(err)
	}
	apps, arr := stream(dep, 100*dataplane.Millisecond, 5*dataplane.Second)
	e, _ := runCancels(t, dep, p, apps, arr, nil, 64)
	// A state the scheduler kept for a retired request (one finished outside its batches).
	d := p.(*Policy)
	d.reqs.set(e.RequestBase()-1, &reqState{})
	d.Forget(e.RequestBase() - 1)
	if d.Tracked() != 0 {
		t.Fatalf("%d requests tracked after Forget", d.Tracked())
	}
}

// TestOverloadGoodput guards against goodput collapse under overload: at 3× the example plan's rates
// DyOrc keeps at least 0.9 of its goodput at 1× (it fell to 12.9/s from 19.8/s, every queue
// growing past the SLO), and so does DyOrc read literally (see shed.go for the variants
// that do not yet).
func TestOverloadGoodput(t *testing.T) {
	dep := examplePlan(t)
	for _, name := range []string{"dyorc", "dyorc-literal"} {
		t.Run(name, func(t *testing.T) {
			var good [2]float64
			for i, load := range []float64{1, 3} {
				sp, _ := Registry().Lookup(name)
				pol, err := sp.New(dataplane.Config{Policy: name})
				if err != nil {
					t.Fatal(err)
				}
				srcs := make([]sim.Source, len(dep.Apps))
				for a := range dep.Apps {
					if srcs[a], err = (sim.ArrivalSpec{Kind: "poisson"}).New(dep.Apps[a].RateRPS*load, dep.Apps[a].Name, sim.PointSeed(1, load, a)); err != nil {
						t.Fatal(err)
					}
				}
				s, err := sim.New(dep, pol, srcs, sim.Options{Duration: 30 * dataplane.Second, Seed: sim.PointSeed(1, load, -1), CompactEvery: 1024})
				if err != nil {
					t.Fatal(err)
				}
				m, err := s.Run()
				if err != nil {
					t.Fatal(err)
				}
				good[i] = m.Total.GoodputRPS
			}
			t.Logf("goodput %.1f/s at 1x, %.1f/s at 3x", good[0], good[1])
			if good[0] <= 0 || good[1] < 0.9*good[0] {
				t.Fatalf("goodput %.1f/s at 3x, %.1f/s at 1x: want at least 0.9 of it", good[1], good[0])
			}
		})
	}
}
