package ppipe

import (
	"fmt"
	"maps"
	"math"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/params"
)

// PPipeOptions configures the reservation dispatcher (PPipe §5.4, A.3). The json tags are
// the --param keys (params.Decode); the policy "ppipe" defaults to busy-until with both
// refinements on, "ppipe-paper" to both off.
type PPipeOptions struct {
	// Interval selects interval-mode reservations (gap filling) on every worker and NIC
	// instead of busy-until. Without it the NICs of a server that serves more than one
	// stage fill gaps all the same (sharedNICs): busy-until there starves the stage whose
	// transfers lie nearer ahead.
	Interval bool `json:"interval"`
	// Penalty is the step-1 refinement of the authors' artifact: a batch-1 pipeline that would
	// miss the head's deadline gets +SLO added to its wait.
	Penalty bool `json:"penalty"`
	// Admission is the artifact's admission refinement: the first time a request is at the
	// head, a batch of at least round(0.95·bs) must fit its deadline, else it is dropped —
	// where the pipeline step 1 picked is busy (its probe at bs waits). On an idle pipeline
	// the shortfall is the request's own time in the queue (it waited behind a head that
	// formed a batch, then left on another pipeline), dropping it frees nothing, and step 2's
	// smaller batch serves it on time: under the artifact's rule a plan lost requests at a
	// twentieth of its rates that it served at half of them.
	Admission bool `json:"admission"`
	// Order names the queue order (default "edf"; dataplane.Config.Order, not a parameter).
	Order string `json:"-"`
}

// PPipeStats counts the dispatcher's work (for benchmarks and reports).
type PPipeStats struct {
	Probes     int64
	Dispatches int64
	Runs       int64
}

// PPipe is PPipe's central reservation-based adaptive batching dispatcher. One instance
// serves every application of a deployment; each application keeps its own deadline-ordered
// queue and pipelines; reservations on workers and NICs are shared.
type PPipe struct {
	opts PPipeOptions
	v    dataplane.View
	dep  *dataplane.Deployment
	apps []ppApp
	res  resources
	// Resource indices: workers [0,W), uplinks [W, W+S), downlinks [W+S, W+2S).
	nw, ns int
	server []dataplane.ServerID    // worker → server
	seen   dataplane.IDTable[bool] // request → has been at the head (admission)
	// scratch for removeQueued (EvCancel)
	scratch []dataplane.ReqID
	// probe scratch: candidate and best results
	cand, best probeResult
	stats      PPipeStats
	// ix indexes every pool's workers by lower bounds of their probe scores (index.go).
	ix poolIndex
	q  pquery
	// noFloor (tests) turns off step 1's skipping of pipelines by waitFloor.
	noFloor bool
	// checkProbe, when set (tests), sees every probe result.
	checkProbe func(pp *ppPipe, b int, now dataplane.Time, out *probeResult)
}

type ppPipe struct {
	stages []dataplane.StageID
	last   int
	bs     int
	lat    [][]dataplane.Time // [d][b]
	net    [][]dataplane.Time // [d][b]: transfer into stage d (0 for d = 0)
	work   []dataplane.Time   // [b]: Σ_d lat + net
	pools  [][]dataplane.WorkerID
	trees  []*poolTree // [d]: the index over pools[d]
}

type ppApp struct {
	id    dataplane.AppID
	q     *dataplane.ReqQueue
	pipes []ppPipe
	slo   dataplane.Time
	timer bool
}

type probeResult struct {
	path   []dataplane.PathHop
	finish dataplane.Time
	wait   dataplane.Time
	b      int
	now    dataplane.Time // when it was probed (reserve books at that instant)
}

// NewPPipe makes the dispatcher.
func NewPPipe(o PPipeOptions) *PPipe { return &PPipe{opts: o} }

// Name implements Policy.
func (p *PPipe) Name() string { return "ppipe" }

// OnWorkerFailure implements dataplane.FailureAware: a failed GPU's requests are dropped and
// its reservations simply go unused (re-planning around a lost GPU is `plan solve`'s job).
func (p *PPipe) OnWorkerFailure() dataplane.FailureMode { return dataplane.FailDrop }

// Stats returns the dispatcher's counters.
func (p *PPipe) Stats() PPipeStats { return p.stats }

// Attach implements Policy: it precomputes per-pipeline latency and transfer tables.
func (p *PPipe) Attach(v dataplane.View) error {
	p.v = v
	p.dep = v.Deployment()
	order, err := dataplane.NewOrder(p.opts.Order, "edf")
	if err != nil {
		return err
	}
	p.nw = len(p.dep.Topo.Workers)
	p.ns = len(p.dep.Topo.Servers)
	p.server = make([]dataplane.ServerID, p.nw)
	for i, w := range p.dep.Topo.Workers {
		p.server[i] = w.Server
	}
	p.res.init(p.nw+2*p.ns, p.opts.Interval)
	if !p.opts.Interval {
		for s := range p.sharedNICs() {
			p.res.fill[p.nw+s] = true
			p.res.fill[p.nw+p.ns+s] = true
		}
	}
	maxD := 0
	for ai := range p.dep.Apps {
		a := &p.dep.Apps[ai]
		if len(a.Pipelines) == 0 {
			// A deployment without pooled pipelines (a PARD module graph) would drop every
			// request as unroutable: refuse it so the mismatch surfaces as bad input.
			return fmt.Errorf("application %s has no pooled pipelines: policy %s serves PPipe, NP and DART-r plans", a.Name, p.Name())
		}
		pa := ppApp{id: dataplane.AppID(ai), q: dataplane.NewReqQueue(v, order), slo: a.SLO}
		for _, chain := range a.Pipelines {
			if len(chain) == 0 {
				continue
			}
			bs := p.dep.Stages[chain[0]].Batch
			pp := ppPipe{stages: chain, last: len(chain) - 1, bs: bs}
			pp.work = make([]dataplane.Time, bs+1)
			for d, sid := range chain {
				st := &p.dep.Stages[sid]
				lat := make([]dataplane.Time, bs+1)
				net := make([]dataplane.Time, bs+1)
				for b := 1; b <= bs; b++ {
					lat[b] = st.Lat(b)
					if d > 0 {
						net[b] = p.dep.Stages[chain[d-1]].Xfer(b)
					}
					pp.work[b] += lat[b] + net[b]
				}
				pp.lat = append(pp.lat, lat)
				pp.net = append(pp.net, net)
				pp.pools = append(pp.pools, st.Pool)
			}
			maxD = max(maxD, len(chain))
			pa.pipes = append(pa.pipes, pp)
		}
		p.apps = append(p.apps, pa)
	}
	p.ix.build(p)
	p.cand.path = make([]dataplane.PathHop, maxD)
	p.best.path = make([]dataplane.PathHop, maxD)
	return nil
}

// sharedNICs returns the servers whose workers serve more than one stage. Busy-until mode
// books a NIC only after its last reservation, which the authors' simulator can afford
// because it packs every pool onto servers of its own (its transfers all lie about one
// stage's latency ahead). A deployment that shares a server between pools (FromPlan when
// the cluster has no room to start each on a fresh server) would let a transfer booked a
// long stage ahead — 93 ms behind one pool's first stage — block every shorter-lead
// transfer into the same server until then, and a pipeline the plan sized within its NIC
// share would drop nearly everything it is sent. The NICs of such servers fill gaps
// instead; the engine runs each link's transfers in reserved order either way.
func (p *PPipe) sharedNICs() map[int]bool {
	stageOf := make(map[dataplane.ServerID]dataplane.StageID, p.ns)
	shared := map[int]bool{}
	for ai := range p.dep.Apps {
		for _, chain := range p.dep.Apps[ai].Pipelines {
			for _, sid := range chain {
				for _, w := range p.dep.Stages[sid].Pool {
					s := p.server[w]
					if first, ok := stageOf[s]; !ok {
						stageOf[s] = sid
					} else if first != sid {
						shared[int(s)] = true
					}
				}
			}
		}
	}
	return shared
}

// Handle implements Policy.
func (p *PPipe) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	switch ev.Kind {
	case dataplane.EvArrival:
		r := p.v.Req(ev.Req)
		a := &p.apps[r.App]
		a.q.Push(ev.Req)
		p.run(a, now, out)
	case dataplane.EvTimer:
		a := &p.apps[ev.Key]
		a.timer = false
		p.run(a, now, out)
	case dataplane.EvBatchDone:
		if p.res.correct(int(ev.Worker), ev.End, now) {
			p.run(&p.apps[p.v.Batch(ev.Batch).App], now, out)
		}
	case dataplane.EvTransferDone:
		b := p.v.Batch(ev.Batch)
		if int(ev.Hop)+1 >= len(b.Hops) {
			return
		}
		src := p.server[b.Hops[ev.Hop].Worker]
		dst := p.server[b.Hops[ev.Hop+1].Worker]
		c1 := p.res.correct(p.nw+int(src), ev.End, now)
		c2 := p.res.correct(p.nw+p.ns+int(dst), ev.End, now)
		if c1 || c2 {
			p.run(&p.apps[b.App], now, out)
		}
	case dataplane.EvCancel:
		p.cancel(now, ev.Req, out)
	}
}

// cancel forgets withdrawn request id (EvCancel). A queued one leaves its application's
// queue; when it was the head the dispatcher runs again, as the head's deadline set the
// wake-up. One a batch held ran its reserved path to the end (the engine discarded the
// result): its reservations were consumed by that batch, so nothing is released.
func (p *PPipe) cancel(now dataplane.Time, id dataplane.ReqID, out *dataplane.Decisions) {
	p.seen.Unset(id)
	a := &p.apps[p.v.Req(id).App]
	head := a.q.Len() > 0 && a.q.Front() == id
	var ok bool
	if ok, p.scratch = removeQueued(a.q, id, p.scratch); ok && head {
		p.run(a, now, out)
	}
}

// Forget implements dataplane.Forgetter: the admission flag of a retired request goes.
func (p *PPipe) Forget(id dataplane.ReqID) { p.seen.Forget(id) }

// run is the two-step dispatcher loop for one application.
func (p *PPipe) run(a *ppApp, now dataplane.Time, out *dataplane.Decisions) {
	p.stats.Runs++
	for a.q.Len() > 0 {
		hid := a.q.Front()
		h := p.v.Req(hid)
		// Step 1: the pipeline with the least waiting at its planned batch.
		bestScore := dataplane.Never
		pi := -1
		for i := range a.pipes {
			pp := &a.pipes[i]
			if pi >= 0 && !p.noFloor && p.waitFloor(pp, pp.bs, now) >= bestScore {
				continue // it cannot beat the best so far (ties keep the earlier pipeline)
			}
			p.probe(pp, pp.bs, now, &p.cand)
			score := p.cand.wait
			if p.opts.Penalty && pp.bs == 1 && p.cand.finish > h.Deadline {
				score += a.slo
			}
			if score < bestScore {
				bestScore = score
				pi = i
				p.cand, p.best = p.best, p.cand
			}
		}
		if pi < 0 {
			out.Drop(hid, dataplane.NoStage, dataplane.DropNoPath, 0)
			a.q.PopFront()
			continue
		}
		pp := &a.pipes[pi]
		// Whether the pipeline is busy for a batch at bs now: the admission refinement's
		// ground for dropping (a smaller batch would take capacity others wait for).
		contended := p.best.wait > 0
		// Step 2: the largest batch that meets the head's deadline (best holds bs).
		b := pp.bs
		if p.best.finish > h.Deadline {
			b = 0
			for c := pp.bs - 1; c >= 1; c-- {
				p.probe(pp, c, now, &p.best)
				if p.best.finish <= h.Deadline {
					b = c
					break
				}
			}
		}
		if b == 0 {
			out.Drop(hid, dataplane.NoStage, dataplane.DropDeadline, p.best.finish-h.Arrival)
			a.q.PopFront()
			continue
		}
		if p.opts.Admission && !p.seenGet(hid) {
			lo := int(math.Round(0.95 * float64(pp.bs)))
			if b < lo && contended {
				out.Drop(hid, dataplane.NoStage, dataplane.DropAdmission, 0)
				a.q.PopFront()
				continue
			}
			p.seenSet(hid)
		}
		if a.q.Len() >= b {
			p.reserve(pp, &p.best)
			out.Dispatch(a.id, a.q.FrontN(b), p.best.path[:len(pp.stages)])
			a.q.Drop(b)
			p.stats.Dispatches++
			continue
		}
		n := a.q.Len() + 1
		p.probe(pp, n, now, &p.cand)
		if p.cand.finish > h.Deadline {
			out.Drop(hid, dataplane.NoStage, dataplane.DropWaitCorner, p.cand.finish-h.Arrival)
			a.q.PopFront()
			continue
		}
		// Wake up at the last instant a batch one larger could still start (Alg. 1 line 23),
		// but no later than the last instant the current batch can: with a flat latency table
		// the former is 1 µs too late for the smaller batch too.
		at := h.Deadline - pp.work[n] + 1
		if alt := h.Deadline - pp.work[n-1]; n > 1 && alt > now && alt < at {
			at = alt
		}
		out.SetTimer(at, int64(a.id))
		a.timer = true
		return
	}
	if a.timer {
		out.CancelTimer(int64(a.id))
		a.timer = false
	}
}

func (p *PPipe) seenGet(r dataplane.ReqID) bool { return p.seen.At(r) }

func (p *PPipe) seenSet(r dataplane.ReqID) { p.seen.Set(r, true) }

// probe computes where a batch of b would run along pipeline pp if dispatched now, without
// reserving anything (probe(), PPipe A.3, Alg. 2). Per stage it picks the worker with the
// least score (its batch end, or its server's uplink busy-until when later, for a non-final
// stage), the lowest pool index among equal scores. The pool index (index.go) finds that
// worker without scoring every one; probeLinear in the tests is the plain scan it must agree
// with.
func (p *PPipe) probe(pp *ppPipe, b int, now dataplane.Time, out *probeResult) {
	p.stats.Probes++
	p.res.now = now
	t := now
	var work dataplane.Time
	for d := range pp.stages {
		inf := pp.lat[d][b]
		net := pp.net[d][b]
		work += inf + net
		q := &p.q
		*q = pquery{first: d == 0, last: d == pp.last, t: t, inf: inf, net: net, best: dataplane.Never}
		if d > 0 {
			q.src = p.server[out.path[d-1].Worker]
		}
		p.search(pp.trees[d], q)
		out.path[d] = dataplane.PathHop{Stage: pp.stages[d], Worker: q.bw, ResStart: q.bts}
		if d > 0 {
			out.path[d-1].OutStart = q.bxs
		}
		t = q.bend
	}
	out.finish = t
	out.wait = t - now - work
	out.b = b
	out.now = now
	if p.checkProbe != nil {
		p.checkProbe(pp, b, now, out)
	}
}

// score is one worker's exact probe score at a stage (Alg. 2 lines 13–21): the
// transfer into it (d > 0) on the source uplink and its downlink, its own slot, and for a
// non-final stage its uplink's busy-until.
func (p *PPipe) score(w dataplane.WorkerID, q *pquery) (score, ts, xs, end dataplane.Time) {
	tw := q.t
	dst := p.server[w]
	if !q.first {
		tw = p.res.earliest2(p.nw+int(q.src), p.nw+p.ns+int(dst), tw, q.net)
		xs = tw
		tw += q.net
	}
	ts = p.res.earliest1(int(w), tw, q.inf)
	end = ts + q.inf
	score = end
	if !q.last {
		// The authors' artifact prefers a slice whose uplink is free when it finishes.
		if u := p.res.busyUntil(p.nw + int(dst)); u > score {
			score = u
		}
	}
	return score, ts, xs, end
}

// reserve books every resource of a probe result.
func (p *PPipe) reserve(pp *ppPipe, r *probeResult) {
	b := r.b
	p.res.now = r.now
	for d := range pp.stages {
		h := &r.path[d]
		p.res.book(int(h.Worker), h.ResStart, h.ResStart+pp.lat[d][b])
		if d > 0 {
			net := pp.net[d][b]
			xs := r.path[d-1].OutStart
			p.res.book(p.nw+int(p.server[r.path[d-1].Worker]), xs, xs+net)
			p.res.book(p.nw+p.ns+int(p.server[h.Worker]), xs, xs+net)
		}
	}
}

// resources holds the reservation tables. Every resource keeps its outstanding
// reservations in start order; a resource executes them in that order (the engine runs
// queued work by reserved start), so the report of a finished one always concerns the
// first entry. Busy-until mode decides from the last end only; interval mode also fills
// gaps between entries.
type resources struct {
	// interval: every resource fills gaps (interval mode). Otherwise fill marks the few that
	// do anyway: the NICs of servers shared by several stages' pools (sharedNICs).
	interval bool
	fill     []bool
	iv       []ivq
	// slab holds every resource's ring (ivq.off); a ring that fills moves to a new one
	// twice its size at the slab's end. Rings only grow, so the slots left behind are at
	// most as many as the rings' live ones.
	slab []ival
	// ix is told of every change (nil: no index).
	ix *poolIndex
	// now is the latest instant the tables were probed or changed at: no later probe asks
	// about an earlier time (the index's interval-mode bounds rely on it).
	now dataplane.Time
}

type ival struct{ s, e dataplane.Time }

// ivq is a resource's busy-until and outstanding reservations, sorted by start: n entries
// in a ring of size slots (a power of two, 0 before the first booking) at slab[off:], from
// slot head on. A completion pops the front and a booking, in busy-until mode always after
// every outstanding one, appends at the back, so a ring moves nothing: the slice it
// replaced, which popped by advancing its start, moved the live entries back to its front
// whenever the back reached its end (runtime.memmove, +5.5 ns an event at 1,600 GPUs
// against 100). Busy-until shares the record, 32 bytes and two to a line: a booking or a
// completion reads both, and at 1,600 GPUs the 4,800 resources' separate busy-until array
// and headers were two lines out of the first-level cache.
type ivq struct {
	bu                 dataplane.Time
	off, size, head, n int32
	_                  [8]byte
}

// at is the k-th outstanding reservation of q (k < n, or k = n < size for an append).
func (r *resources) at(q *ivq, k int32) *ival {
	return &r.slab[q.off+(q.head+k)&(q.size-1)]
}

func (r *resources) init(n int, interval bool) {
	r.interval = interval
	r.iv = make([]ivq, n)
	r.fill = make([]bool, n)
	for i := range r.fill {
		r.fill[i] = interval
	}
}

// list returns resource i's outstanding reservations in order (a copy).
func (r *resources) list(i int) []ival {
	q := &r.iv[i]
	l := make([]ival, q.n)
	for k := range q.n {
		l[k] = *r.at(q, k)
	}
	return l
}

// first returns resource i's first outstanding reservation, ok false if there is none.
func (r *resources) first(i int) (x ival, ok bool) {
	if q := &r.iv[i]; q.n > 0 {
		return *r.at(q, 0), true
	}
	return ival{}, false
}

func (r *resources) busyUntil(i int) dataplane.Time { return r.iv[i].bu }

// earliest1 is earliestSlot({i}, t, dur).
func (r *resources) earliest1(i int, t, dur dataplane.Time) dataplane.Time {
	if !r.fill[i] {
		return max(t, r.iv[i].bu)
	}
	return r.gap(i, t, dur)
}

// earliest2 is earliestSlot({i, j}, t, dur): both resources free over [t', t'+dur), each
// in its own mode (a slot after the busy-until of one that does not fill gaps).
func (r *resources) earliest2(i, j int, t, dur dataplane.Time) dataplane.Time {
	if !r.fill[i] && !r.fill[j] {
		return max(t, r.iv[i].bu, r.iv[j].bu)
	}
	for {
		a := r.earliest1(i, t, dur)
		b := r.earliest1(j, a, dur)
		if b == a {
			return a
		}
		t = b
	}
}

// gap returns the earliest t' ≥ t with [t', t'+dur) free on resource i (interval mode).
func (r *resources) gap(i int, t, dur dataplane.Time) dataplane.Time {
	q := &r.iv[i]
	// Entries are sorted and disjoint; skip those ending at or before t.
	lo, hi := int32(0), q.n
	for lo < hi {
		m := (lo + hi) / 2
		if r.at(q, m).e <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for k := lo; k < q.n; k++ {
		x := r.at(q, k)
		if x.s >= t+dur {
			break
		}
		if x.e > t {
			t = x.e
		}
	}
	return t
}

// book reserves [s, e) on resource i.
func (r *resources) book(i int, s, e dataplane.Time) {
	q := &r.iv[i]
	old := q.bu
	if e > q.bu {
		q.bu = e
	}
	if q.n == q.size {
		off := int32(len(r.slab))
		size := max(1, 2*q.size)
		r.slab = append(r.slab, make([]ival, size)...)
		for k := range q.n {
			r.slab[off+k] = *r.at(q, k)
		}
		q.off, q.size, q.head = off, size, 0
	}
	// After every outstanding reservation in the common case; else a sorted insert from
	// the back (interval mode's gap filling).
	k := q.n
	for k > 0 && r.at(q, k-1).s > s {
		*r.at(q, k) = *r.at(q, k-1)
		k--
	}
	*r.at(q, k) = ival{s, e}
	q.n++
	r.changed(i, old)
}

// changed tells the index that resource i changed; old is its busy-until before. In
// busy-until mode the index reads nothing but busy-until, so when that stayed the same
// (a completion reported on time, the common case) there is nothing to repair, and the
// index's scattered leaves are not touched.
func (r *resources) changed(i int, old dataplane.Time) {
	if r.ix != nil && (r.fill[i] || r.iv[i].bu != old) {
		r.ix.update(r, i)
	}
}

// correct applies feedback: the first outstanding reservation of resource i actually ended at
// end. With no later reservation the resource is free from end (earlier frees capacity, later
// pushes back); otherwise the later ones shift by the difference, never to before now (PPipe
// §5.4 gives no more detail; this is our resolution). It reports whether the table changed.
func (r *resources) correct(i int, end, now dataplane.Time) bool {
	q := &r.iv[i]
	if q.n == 0 {
		return false
	}
	r.now = max(r.now, now)
	old := q.bu
	delta := end - r.at(q, 0).e
	q.head = (q.head + 1) & (q.size - 1)
	q.n--
	if q.n == 0 {
		q.bu = end
		r.changed(i, old)
		return delta != 0
	}
	if delta != 0 {
		prev := now
		for k := range q.n {
			x := r.at(q, k)
			d := x.e - x.s
			x.s = max(x.s+delta, prev)
			x.e = x.s + d
			prev = x.e
		}
		q.bu = prev
	}
	// Even with bu unchanged the head left: interval-mode bounds may move.
	r.changed(i, old)
	return delta != 0
}

func newPPipePolicy(cfg dataplane.Config) (dataplane.Policy, error) {
	if err := cfg.CheckKnown("ppipe", "interval", "penalty", "admission"); err != nil {
		return nil, err
	}
	o := PPipeOptions{Penalty: true, Admission: true, Order: cfg.Order}
	if err := params.Decode("ppipe", &o, cfg.Params, false); err != nil {
		return nil, err
	}
	return NewPPipe(o), nil
}

// Policies lists the PPipe system's policies for the registry: the reservation dispatcher,
// Algorithm 1 as printed, and the reactive baseline. They serve PPipe plans (Kind).
func Policies() []dataplane.PolicySpec {
	return []dataplane.PolicySpec{
		{Name: "ppipe", Doc: "PPipe's reservation-based adaptive batching (params: interval, penalty, admission; default busy-until, both [code] refinements on)",
			Serves: []string{Kind}, New: newPPipePolicy},
		{Name: "ppipe-paper", Doc: "PPipe's Algorithm 1 as printed: reservation dispatcher without the two [code] refinements",
			Serves: []string{Kind}, New: func(cfg dataplane.Config) (dataplane.Policy, error) {
				// Copy: the caller's map must not change under it.
				cfg.Params = maps.Clone(cfg.Params)
				if cfg.Params == nil {
					cfg.Params = map[string]string{}
				}
				if _, ok := cfg.Params["penalty"]; !ok {
					cfg.Params["penalty"] = "false"
				}
				if _, ok := cfg.Params["admission"]; !ok {
					cfg.Params["admission"] = "false"
				}
				return newPPipePolicy(cfg)
			}},
		reactivePolicy,
	}
}
