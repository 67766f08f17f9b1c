package ppipe

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// Reactive is the ablation baseline of PPipe (PPipe §7.4; the "SLA-aware" balancer of the
// authors' artifact): no reservations. Stage 0 of every pipeline of an app forms one pool;
// each later stage is its own pool with its own deadline-ordered queue; requests are
// re-batched at every stage and outputs leave through the sender's NIC in FIFO order, so
// contention and stage queuing show up as downstream drops.
type Reactive struct {
	v     dataplane.View
	dep   *dataplane.Deployment
	order dataplane.Order
	pools []rpool
	// poolOf maps a stage to its pool.
	poolOf []int
	// worker state
	estEnd   []dataplane.Time         // nominal end of the worker's queued work
	slack    []dataplane.Time         // Σ planned latency + transfer downstream of the worker's stage
	examined dataplane.IDTable[int32] // request → 1 + the pool whose head it was when a timer was set
	scratch  []dataplane.ReqID
	buf      []dataplane.ReqID
	path     [1]dataplane.PathHop
}

type rpool struct {
	q       *dataplane.ReqQueue
	workers []dataplane.WorkerID
	timer   bool
}

// NewReactive makes the baseline.
func NewReactive(order string) (*Reactive, error) {
	o, err := dataplane.NewOrder(order, "edf")
	if err != nil {
		return nil, err
	}
	return &Reactive{order: o}, nil
}

// Name implements Policy.
func (r *Reactive) Name() string { return "reactive" }

// OnWorkerFailure implements dataplane.FailureAware (FailDrop, as PPipe).
func (r *Reactive) OnWorkerFailure() dataplane.FailureMode { return dataplane.FailDrop }

// Attach implements Policy.
func (r *Reactive) Attach(v dataplane.View) error {
	r.v = v
	r.dep = v.Deployment()
	r.poolOf = make([]int, len(r.dep.Stages))
	for i := range r.poolOf {
		r.poolOf[i] = -1
	}
	nw := len(r.dep.Topo.Workers)
	r.estEnd = make([]dataplane.Time, nw)
	r.slack = make([]dataplane.Time, nw)
	for ai := range r.dep.Apps {
		a := &r.dep.Apps[ai]
		head := len(r.pools)
		r.pools = append(r.pools, rpool{q: dataplane.NewReqQueue(v, r.order)})
		for _, chain := range a.Pipelines {
			for d, sid := range chain {
				pi := head
				if d > 0 {
					pi = len(r.pools)
					r.pools = append(r.pools, rpool{q: dataplane.NewReqQueue(v, r.order)})
				}
				r.poolOf[sid] = pi
				st := &r.dep.Stages[sid]
				var slack dataplane.Time
				for _, ds := range chain[d+1:] {
					s2 := &r.dep.Stages[ds]
					slack += s2.Lat(s2.Batch) + s2.Xfer(s2.Batch)
				}
				for _, w := range st.Pool {
					r.slack[w] = slack
					r.pools[pi].workers = append(r.pools[pi].workers, w)
				}
			}
		}
	}
	return nil
}

// Handle implements Policy.
func (r *Reactive) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	switch ev.Kind {
	case dataplane.EvArrival:
		req := r.v.Req(ev.Req)
		a := &r.dep.Apps[req.App]
		if len(a.Entry) == 0 {
			out.Drop(ev.Req, dataplane.NoStage, dataplane.DropNoPath, 0)
			return
		}
		pi := r.poolOf[a.Entry[0]]
		r.pools[pi].q.Push(ev.Req)
		r.trigger(pi, now, out)
	case dataplane.EvStageArrival:
		pi := r.poolOf[ev.Stage]
		for _, id := range r.v.Arrived(ev) {
			if r.v.Req(id).CancelRequested {
				// Withdrawn while the last stage's batch held it: it goes no further.
				out.Drop(id, ev.Stage, dataplane.DropCancelled, 0)
				continue
			}
			r.pools[pi].q.Push(id)
		}
		r.trigger(pi, now, out)
	case dataplane.EvTimer:
		r.pools[ev.Key].timer = false
		r.trigger(int(ev.Key), now, out)
	case dataplane.EvBatchDone:
		b := r.v.Batch(ev.Batch)
		h := &b.Hops[ev.Hop]
		if delta := (ev.End - ev.Start) - h.Nominal; delta != 0 {
			r.estEnd[ev.Worker] = max(r.estEnd[ev.Worker]+delta, now)
		}
		if r.v.WorkerIdle(ev.Worker) {
			r.estEnd[ev.Worker] = ev.End
		}
	case dataplane.EvCancel:
		r.cancel(now, ev.Req, out)
	}
}

func (r *Reactive) examinedAt(id dataplane.ReqID) int32 { return r.examined.At(id) }

func (r *Reactive) setExamined(id dataplane.ReqID, pool int) { r.examined.Set(id, int32(pool+1)) }

// cancel forgets withdrawn request id (EvCancel): it leaves the pool queue holding it, and
// that pool is triggered again when it was the head (the head's deadline set the timer). A
// request a batch held is in no queue: the engine discarded its result, so it never
// reaches the next pool.
func (r *Reactive) cancel(now dataplane.Time, id dataplane.ReqID, out *dataplane.Decisions) {
	r.examined.Unset(id)
	for pi := range r.pools {
		q := r.pools[pi].q
		head := q.Len() > 0 && q.Front() == id
		var ok bool
		if ok, r.scratch = removeQueued(q, id, r.scratch); ok {
			if head {
				r.trigger(pi, now, out)
			}
			return
		}
	}
}

// Forget implements dataplane.Forgetter: the examined mark of a retired request goes.
func (r *Reactive) Forget(id dataplane.ReqID) { r.examined.Forget(id) }

func (r *Reactive) trigger(pi int, now dataplane.Time, out *dataplane.Decisions) {
	p := &r.pools[pi]
	for {
		// The worker whose queued work ends first (ties: pool order).
		var w dataplane.WorkerID = dataplane.NoWorker
		start := dataplane.Never
		for _, c := range p.workers {
			if s := max(r.estEnd[c], now); s < start {
				start, w = s, c
			}
		}
		if w == dataplane.NoWorker {
			for p.q.Len() > 0 {
				out.Drop(p.q.PopFront(), dataplane.NoStage, dataplane.DropNoPath, 0)
			}
			return
		}
		st := &r.dep.Stages[r.dep.Topo.Workers[w].Stage]
		sid := r.dep.Topo.Workers[w].Stage
		bs := st.Batch
		lo := int(math.Round(0.95 * float64(bs)))
		b := 0
		for p.q.Len() > 0 {
			hid := p.q.Front()
			h := r.v.Req(hid)
			budget := h.Deadline - r.slack[w] - start
			b = 0
			for c := bs; c >= 1; c-- {
				if st.Lat(c)+st.Xfer(c) <= budget {
					b = c
					break
				}
			}
			if b == 0 {
				out.Drop(p.q.PopFront(), sid, dataplane.DropDeadline, 0)
				continue
			}
			if b < lo && r.examinedAt(hid) != int32(pi+1) {
				out.Drop(p.q.PopFront(), sid, dataplane.DropAdmission, 0)
				continue
			}
			break
		}
		if p.q.Len() == 0 {
			if p.timer {
				out.CancelTimer(int64(pi))
				p.timer = false
			}
			return
		}
		hid := p.q.Front()
		n := p.q.Len()
		at := dataplane.Time(0)
		if n < b {
			at = r.v.Req(hid).Deadline - r.slack[w] - st.Lat(n+1) + 1
		}
		if n >= b || at <= now {
			b = min(b, n)
			r.buf = append(r.buf[:0], p.q.FrontN(b)...)
			p.q.Drop(b)
			r.path[0] = dataplane.PathHop{Stage: sid, Worker: w}
			out.Dispatch(r.v.Req(hid).App, r.buf, r.path[:])
			r.estEnd[w] = start + st.Lat(b)
			continue
		}
		r.setExamined(hid, pi)
		out.SetTimer(at, int64(pi))
		p.timer = true
		return
	}
}

// reactivePolicy is the registry entry of the reactive baseline.
var reactivePolicy = dataplane.PolicySpec{
	Name: "reactive", Doc: "PPipe's reactive per-pool baseline: no reservations, re-batching at every stage (ablation)",
	Serves: []string{Kind},
	New: func(cfg dataplane.Config) (dataplane.Policy, error) {
		if err := cfg.CheckKnown("reactive"); err != nil {
			return nil, err
		}
		return NewReactive(cfg.Order)
	},
}
