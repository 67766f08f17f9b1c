// Package policytest drives a dataplane engine by hand for policy unit tests that need what
// the simulator does not offer: withdrawing requests (Engine.Cancel) at chosen instants and
// retiring finished requests (Engine.Compact, then Forgetter.Forget) as a long-running
// driver does, while checking that the policy never dispatches a withdrawn request.
// Execution and transfer times are the nominal ones (no jitter), so a
// run is a deterministic function of its script. DecisionHasher holds a simulated run's
// decisions to a recorded hash, for the policies' decision-hash tests.
package policytest

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/plan-dev/plan/dataplane"
)

// Driver is a deterministic event loop around one engine.
type Driver struct {
	Engine *dataplane.Engine
	pol    dataplane.Policy
	q      evHeap
	seq    int64
	now    dataplane.Time
	// Forget, when set, makes Compact tell the policy (if it is a dataplane.Forgetter) of
	// every request the engine retired.
	Forget bool
	// cancelled holds the requests Cancel withdrew that are still in the engine's table.
	cancelled map[dataplane.ReqID]bool
	// Dispatched counts, per request, the batches that took it (dispatches and, for
	// policies that route hop by hop, each routed hop).
	Dispatched map[dataplane.ReqID]int
	// Finished counts, per request, how often the engine finished it (must be once).
	Finished map[dataplane.ReqID]int
	// Outcome is each request's final outcome and reason.
	Outcome map[dataplane.ReqID]string
	err     error
	h       hash.Hash64
	buf     []byte
}

type evItem struct {
	at  dataplane.Time
	seq int64
	ev  dataplane.Event
}

type evHeap []evItem

func (h evHeap) Len() int { return len(h) }
func (h evHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h evHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)   { *h = append(*h, x.(evItem)) }
func (h *evHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// New builds the engine for dep under pol with the driver as its effects.
func New(dep *dataplane.Deployment, pol dataplane.Policy) (*Driver, error) {
	d := &Driver{pol: pol, cancelled: map[dataplane.ReqID]bool{}, Dispatched: map[dataplane.ReqID]int{},
		Finished: map[dataplane.ReqID]int{}, Outcome: map[dataplane.ReqID]string{}, h: fnv.New64a()}
	e, err := dataplane.NewEngine(dep, pol, d)
	if err != nil {
		return nil, err
	}
	d.Engine = e
	e.Observe(d.observe)
	return d, nil
}

func (d *Driver) push(at dataplane.Time, ev dataplane.Event) {
	d.seq++
	heap.Push(&d.q, evItem{at, d.seq, ev})
}

// RunBatch implements dataplane.Effects.
func (d *Driver) RunBatch(now dataplane.Time, w dataplane.WorkerID, b dataplane.BatchID, hop int, _ dataplane.StageID, _ int, nominal dataplane.Time) {
	d.push(now+nominal, dataplane.Event{Kind: dataplane.EvBatchDone, Batch: b, Hop: int32(hop), Worker: w, Start: now, End: now + nominal})
}

// Transfer implements dataplane.Effects.
func (d *Driver) Transfer(now dataplane.Time, b dataplane.BatchID, hop int, _, _ dataplane.ServerID, _ int64, nominal dataplane.Time) {
	d.push(now+nominal, dataplane.Event{Kind: dataplane.EvTransferDone, Batch: b, Hop: int32(hop), Start: now, End: now + nominal})
}

// SetTimer implements dataplane.Effects.
func (d *Driver) SetTimer(at dataplane.Time, key int64) {
	d.push(at, dataplane.Event{Kind: dataplane.EvTimer, Key: key})
}

// Finish implements dataplane.Effects.
func (d *Driver) Finish(_ dataplane.Time, r *dataplane.Request) {
	d.Finished[r.ID]++
	d.Outcome[r.ID] = fmt.Sprintf("%v/%s", r.Outcome, r.Reason())
	delete(d.cancelled, r.ID)
}

// observe checks every dispatch: no request Cancel withdrew may be in it, and records the
// decision stream's hash.
func (d *Driver) observe(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
	d.buf = d.buf[:0]
	d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(now))
	d.buf = append(d.buf, byte(ev.Kind))
	d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(ev.Req))
	for _, x := range ds {
		d.buf = append(d.buf, byte(x.Kind))
		d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(x.Req))
		d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(x.At))
		d.buf = append(d.buf, x.Reason...)
		for _, r := range x.Reqs {
			d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(r))
		}
		for _, h := range x.Path {
			d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(h.Worker))
			d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(h.ResStart))
		}
		if x.Kind != dataplane.DDispatch {
			continue
		}
		for _, r := range x.Reqs {
			d.Dispatched[r]++
			if d.cancelled[r] && d.err == nil {
				d.err = fmt.Errorf("at %d µs (%v) the policy dispatched request %d after it was cancelled", now, ev.Kind, r)
			}
		}
	}
	d.h.Write(d.buf)
}

// Hash is the hash of every event the policy handled and every decision it made so far.
func (d *Driver) Hash() uint64 { return d.h.Sum64() }

// Now is the time of the last processed event.
func (d *Driver) Now() dataplane.Time { return d.now }

// RunUntil processes every event before t (at t, arrivals and cancels the caller makes next
// come first).
func (d *Driver) RunUntil(t dataplane.Time) error {
	for d.q.Len() > 0 && d.q[0].at < t {
		it := heap.Pop(&d.q).(evItem)
		d.now = it.at
		if err := d.Engine.Handle(it.at, it.ev); err != nil {
			return err
		}
		if d.err != nil {
			return d.err
		}
	}
	d.now = max(d.now, t)
	return nil
}

// Arrive admits a request of app at t.
func (d *Driver) Arrive(t dataplane.Time, app dataplane.AppID) (dataplane.ReqID, error) {
	if err := d.RunUntil(t); err != nil {
		return 0, err
	}
	id, err := d.Engine.Arrive(t, app, 0)
	if err == nil {
		err = d.err
	}
	return id, err
}

// Cancel withdraws request id at t (Engine.Cancel) and reports whether it was pending.
func (d *Driver) Cancel(t dataplane.Time, id dataplane.ReqID) (bool, error) {
	if err := d.RunUntil(t); err != nil {
		return false, err
	}
	ok, err := d.Engine.Cancel(t, id)
	if ok {
		d.cancelled[id] = true
	}
	if err == nil {
		err = d.err
	}
	return ok, err
}

// Compact retires finished requests (Engine.Compact) and, with Forget set, tells a
// Forgetter policy of each, in increasing ID order, as the engine contract says.
func (d *Driver) Compact() {
	before := d.Engine.RequestBase()
	d.Engine.Compact()
	f, ok := d.pol.(dataplane.Forgetter)
	if !d.Forget || !ok {
		return
	}
	for id := before; id < d.Engine.RequestBase(); id++ {
		f.Forget(id)
	}
}

// Drain processes events until every request finished (periodic ticks alone do not keep it
// going) or horizon passes, which is an error naming the requests left.
func (d *Driver) Drain(horizon dataplane.Time) error {
	for d.q.Len() > 0 {
		if d.unfinished() == 0 {
			return nil
		}
		if d.q[0].at > horizon {
			break
		}
		if err := d.RunUntil(d.q[0].at + 1); err != nil {
			return err
		}
	}
	if n := d.unfinished(); n > 0 {
		return fmt.Errorf("%d requests unfinished at %d µs", n, d.now)
	}
	return nil
}

func (d *Driver) unfinished() int64 {
	return int64(d.Engine.NextRequestID()) - d.Engine.Finished()
}
