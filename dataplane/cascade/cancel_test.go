package cascade_test

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/sim"
)

// cancelDriver is a minimal discrete-event driver that, unlike sim, withdraws requests
// (Engine.Cancel) at given times, and checks the policy never dispatches a withdrawn one.
type cancelDriver struct {
	t        *testing.T
	dep      *dataplane.Deployment
	e        *dataplane.Engine
	evs      []drvEvent
	seq      int
	finished map[dataplane.ReqID]int
	// cancelled: withdrawn requests the engine already finished (EvCancel sent).
	cancelled map[dataplane.ReqID]bool
	// queued, held: cancels that found the request waiting, and inside a batch.
	queued, held int
	// compactEvery: Engine.Compact after that many events (0: never).
	compactEvery, events int
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
	i := sort.Search(len(d.evs), func(i int) bool {
		return d.evs[i].at > at || d.evs[i].at == at && d.evs[i].seq > x.seq
	})
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

// runCancels runs pol on dep with arrivals of app 0 at arr and cancels of the n-th arrival
// (0-based) at cancelAt[n], until every request finished; it returns the engine.
func runCancels(t *testing.T, dep *dataplane.Deployment, pol dataplane.Policy, arr []dataplane.Time, cancelAt map[int]dataplane.Time, compactEvery int) (*dataplane.Engine, *cancelDriver) {
	t.Helper()
	d := &cancelDriver{t: t, dep: dep, finished: map[dataplane.ReqID]int{}, cancelled: map[dataplane.ReqID]bool{}, compactEvery: compactEvery}
	e, err := dataplane.NewEngine(dep, pol, d)
	if err != nil {
		t.Fatal(err)
	}
	d.e = e
	for _, at := range arr {
		d.push(at, 1, dataplane.Event{})
	}
	ids := map[int]dataplane.ReqID{}
	n := 0
	for len(d.evs) > 0 {
		x := d.evs[0]
		d.evs = d.evs[1:]
		switch x.kind {
		case 1:
			id, err := e.Admit(x.at, dataplane.Arrival{App: 0, Attrs: dataplane.Attrs{Trace: int64(n) + 1}})
			if err != nil {
				t.Fatal(err)
			}
			if at, ok := cancelAt[n]; ok {
				ids[n] = id
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
			if x.ev.Kind == dataplane.EvBatchDone {
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
		d.events++
		if d.compactEvery > 0 && d.events%d.compactEvery == 0 {
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
// engine retired, in increasing ID order (a second Forget of an ID, should the engine make
// it too, is a no-op).
func compact(e *dataplane.Engine, pol dataplane.Policy) {
	base := e.RequestBase()
	e.Compact()
	if f, ok := pol.(dataplane.Forgetter); ok {
		for id := base; id < e.RequestBase(); id++ {
			f.Forget(id)
		}
	}
}

// TestCancel withdraws every third request of a steady stream at random points of its life
// under every policy of the data plane: a withdrawn request finishes once, as cancelled,
// whether it waited in a queue or ran in a batch, and is never dispatched afterwards; the
// others are served as usual.
func TestCancel(t *testing.T) {
	dep, err := dpc.FromPlan(examplePlan(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{dpc.PolicyGears, dpc.PolicyNoSwitch, dpc.PolicyCocktail} {
		t.Run(name, func(t *testing.T) {
			pol, err := dpc.Registry().New(dep, dataplane.Config{Policy: name}, dpc.PolicyGears)
			if err != nil {
				t.Fatal(err)
			}
			var arr []dataplane.Time
			cancelAt := map[int]dataplane.Time{}
			for i := range 3000 {
				at := dataplane.Time(i) * 500 // 2,000/s for 1.5 s
				arr = append(arr, at)
				if i%3 == 0 {
					cancelAt[i] = at + dataplane.Time(i*7919%40)*dataplane.Millisecond
				}
			}
			e, d := runCancels(t, dep, pol, arr, cancelAt, 0)
			if d.queued == 0 || d.held == 0 {
				t.Fatalf("%d cancels of waiting requests, %d of running ones: want both", d.queued, d.held)
			}
			served := 0
			reqs := e.Requests()
			for i := range reqs {
				r := &reqs[i]
				_, withdrawn := cancelAt[int(r.ID)]
				switch {
				case r.Reason() == dataplane.DropCancelled && !withdrawn:
					t.Fatalf("request %d cancelled but never withdrawn", r.ID)
				case withdrawn && r.Outcome != dataplane.Dropped && r.Dispatch > cancelAt[int(r.ID)]:
					t.Fatalf("request %d withdrawn at %d, dispatched at %d and %v", r.ID, cancelAt[int(r.ID)], r.Dispatch, r.Outcome)
				case withdrawn && r.Done > cancelAt[int(r.ID)] && r.Reason() != dataplane.DropCancelled:
					// Withdrawn while it waited or ran: whatever its batch said, the client
					// left, so it ends cancelled, never answered.
					t.Fatalf("request %d withdrawn at %d, finished at %d as %v (%v)", r.ID, cancelAt[int(r.ID)], r.Done, r.Outcome, r.Reason())
				case r.Outcome == dataplane.Completed || r.Outcome == dataplane.Late:
					served++
				}
			}
			if served < 1000 {
				t.Fatalf("%d requests served: want the 2,000 not withdrawn, less those done before", served)
			}
			t.Logf("%d cancels of waiting requests, %d of running ones, %d served", d.queued, d.held, served)
		})
	}
}

// TestForget runs a long stream with the engine compacting its tables: the policy's
// per-request records follow what is in flight, not how many requests have passed.
func TestForget(t *testing.T) {
	dep, err := dpc.FromPlan(examplePlan(t))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := dpc.Registry().New(dep, dataplane.Config{Policy: dpc.PolicyGears}, dpc.PolicyGears)
	if err != nil {
		t.Fatal(err)
	}
	var arr []dataplane.Time
	for i := range 20000 {
		arr = append(arr, dataplane.Time(i)*250) // 4,000/s for 5 s
	}
	e, _ := runCancels(t, dep, pol, arr, nil, 512)
	compact(e, pol)
	if n := dpc.GearRecords(pol.(*dpc.Policy)); n > 2000 {
		t.Fatalf("%d gear records after 20,000 requests, the engine holds %d: the policy does not forget", n, e.HeldRequests())
	}
}

// TestOverloadGoodput guards against goodput collapse under overload: at 3× the plan's rate
// CascadeServe keeps at least 0.9 of its goodput at 1× (it collapsed to 0.0003 of it: every
// queue grew past the SLO). The cascade-noswitch ablation sheds the same way.
func TestOverloadGoodput(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "cascade", "golden-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, err := dpc.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{dpc.PolicyGears, dpc.PolicyNoSwitch} {
		t.Run(name, func(t *testing.T) {
			var good [2]float64
			for i, load := range []float64{1, 3} {
				pol, err := dpc.Registry().New(dep, dataplane.Config{Policy: name}, dpc.PolicyGears)
				if err != nil {
					t.Fatal(err)
				}
				spec, _ := sim.ParseArrival("poisson")
				src, err := spec.New(dep.Apps[0].RateRPS*load, dep.Apps[0].Name, 1)
				if err != nil {
					t.Fatal(err)
				}
				s, err := sim.New(dep, pol, []sim.Source{src}, sim.Options{Duration: 2 * dataplane.Second, Seed: 1, CompactEvery: 4096})
				if err != nil {
					t.Fatal(err)
				}
				m, err := s.Run()
				if err != nil {
					t.Fatal(err)
				}
				good[i] = m.Total.GoodputRPS
			}
			t.Logf("goodput %.0f/s at 1x, %.0f/s at 3x", good[0], good[1])
			if good[0] <= 0 || good[1] < 0.9*good[0] {
				t.Fatalf("goodput %.1f/s at 3x, %.1f/s at 1x: want at least 0.9 of it", good[1], good[0])
			}
		})
	}
}
