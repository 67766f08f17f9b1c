package dyorc

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// Mode selects the scheduler: DyOrc's, the ablations of DyOrc §8.3 or the baselines of §8.
type Mode int

// Scheduler modes.
const (
	// ModeSpec is DyOrc: prediction, the speculative DP, reservations and proactive loads.
	ModeSpec Mode = iota
	// ModeGreedy places each call when it is made by Eq.1 (no prediction, reactive loads).
	ModeGreedy
	// ModeRoundRobin places calls on GPUs in turn, ignoring what is loaded.
	ModeRoundRobin
	// ModeOracle is ModeSpec given each request's true future (Attrs.Sample ≠ 0): the bound on
	// what prediction can gain.
	ModeOracle
	// ModeFixed is the Triton-like baseline: the plan's placement, frozen (no loading); each
	// call goes to the replica with the earliest estimated finish.
	ModeFixed
	// ModeRay is the Ray-Serve-like baseline (DyOrc §8): per-service replica sets routed by
	// the power of two choices, batches of at most RayMaxBatch, tier-3 messages on every hop,
	// and reactive autoscaling with Ray's documented defaults (target 2 ongoing requests per
	// replica, 10 s metrics interval, 30 s upscale delay, 600 s downscale delay); new replicas
	// load from disk. [ours] Co-located replicas time-share the GPU one batch at a time (no
	// processor sharing) and a service keeps at least one replica.
	ModeRay
)

// Ray-like defaults: the paper runs Ray Serve's defaults without listing them (DyOrc §8), so
// these are Ray's documented ones.
const (
	RayMaxBatch       = 10
	RayTargetOngoing  = 2.0
	RayInterval       = 10 * dataplane.Second
	RayUpscaleDelay   = 30 * dataplane.Second
	RayDownscaleDelay = 600 * dataplane.Second
	rayTick           = -2 // timer key of the autoscaler
)

// Options configure a scheduler.
type Options struct {
	Mode Mode
	// Argmax makes the predictor pick the most likely successor (default: sample, as DyOrc §5.2
	// does).
	Argmax bool
	// StateUs is the scheduler time charged per DP state expanded, always charged: the scaling
	// optimum at 32 GPUs comes from scheduling overhead (DyOrc §8.5).
	StateUs float64
	// Seed seeds the predictor's rollouts.
	Seed uint64
	// Literal is the paper's scheduler read literally (DyOrc §5.3: re-plan only on a
	// mispredict; predicted tasks, whose queueing the paper leaves open, are our reservations):
	// a call that matches the next reservation binds to its GPU without a DP, every reservation
	// counts in the device model's timeline, and the DP treats every load of a predicted task
	// as hidden behind its predecessors. By default [ours] DyOrc instead
	//   - re-runs the DP at every real call: the binding was decided with the queues of the
	//     request's first call, stale by seconds under load;
	//   - counts a reservation in the timeline only while its estimated input time is ahead
	//     (a reservation behind a late predecessor would sit at "now" and make its GPU look
	//     busy to every other request) and unless it follows its predecessor with the same
	//     service on the same GPU (see plan);
	//   - charges a predicted task's missing service its load on the critical path
	//     (availCompPred), and lets a proactive load take only free memory: reservations
	//     start loads ahead and protect their services from eviction, except against a real
	//     task's load (proactive loading is DyOrc §5.4; the exception is ours, or two
	//     requests' reservations could block each other's loads for good).
	// `plan bench dyorc` reports both (dyorc, dyorc-literal).
	Literal bool
}

// DefaultStateUs is the charge per expanded DP state [ours]: a fixed constant, between our Go
// DP's measured cost (a few ns per state, BenchmarkDP) and a rough 1 µs guess for the paper's
// Rust state sets (the paper reports no per-state cost), so that scheduler overhead grows with
// |D|² (Fig.13).
const DefaultStateUs = 0.05

// Stats are a scheduler's counters.
type Stats struct {
	Calls, DPRuns, Binds, Mispredicts int64
	// Hits counts calls that matched their request's next reservation (bound to it under
	// Literal, re-planned otherwise).
	Hits             int64
	StatesExpanded   int64
	Loads, Evictions int64
	// SchedBusy is the scheduler time charged for DP work.
	SchedBusy dataplane.Time
	// Per application: per-step predictions made and correct; whole-workflow predictions
	// (made at the first call) and exact.
	StepTotal, StepHit, FlowTotal, FlowHit []int64
	// Rerouted counts calls re-placed after a worker failure; FailDropped the requests dropped
	// because no live GPU (or API-server worker) was left to serve their next step.
	Rerouted, FailDropped int64
	// Shed counts the requests dropped because their estimated finish was past their
	// deadline, Overloads the times the scheduler started shedding (shed.go).
	Shed, Overloads int64
}

type task struct {
	req   dataplane.ReqID
	stage dataplane.StageID
	svc   int
	items int
	ready dataplane.Time
	seq   int64
	// fromSvc, fromItems: the request's previous call (its input), to re-place the task
	// after a failure as the call it was.
	fromSvc, fromItems int
}

type resv struct {
	svc, items, dev int
	// follows: the predicted task runs the same service on the same GPU as its predecessor.
	follows bool
	ready   dataplane.Time
	seq     int64
}

type pbatch struct {
	svc, items int
	start, end dataplane.Time
}

type loadReq struct {
	svc  int
	real bool
}

type device struct {
	running     bool
	runSvc      int
	outstanding int
	runEnd      dataplane.Time
	queue       []*task
	resv        []*resv
	resident    []bool
	lastUse     []dataplane.Time
	loading     int
	loadETA     dataplane.Time
	loadQ       []loadReq
	mem         int64
	plan        []pbatch
	dirty       bool
	// order: the queued tasks and the reservations in the plan's order (order.go), kept when
	// keep is set: under the modes that plan (round robin and the Ray-like router never do).
	keep    bool
	order   []planItem
	timerAt dataplane.Time
	// runW: the workers running the parts of the current batch (a failed one never reports).
	runW []dataplane.WorkerID
	// runTasks: the tasks of the current batch, to re-place those a failure releases.
	runTasks []*task
}

type reqState struct {
	app                         int
	prevDev, prevSvc, prevItems int
	calls                       []int
	chain                       []*resv
	expect                      int
	hasExpect                   bool
	flowPred                    []int
	// on: the API-server worker holding the request's ingress (NoWorker once it is done).
	on dataplane.WorkerID
}

// Policy is DyOrc's central scheduler and its ablations, as a dataplane.Policy.
type Policy struct {
	name  string
	opt   Options
	v     dataplane.View
	dep   *dataplane.Deployment
	m     *Meta
	devs  []device
	reqs  map[dataplane.ReqID]*reqState
	preds []*Predictor
	hostC [][]bool // [server][svc] in host RAM
	sched dataplane.Time
	seq   int64
	rr    int
	warm  bool
	st    Stats
	// down[g] counts GPU g's failed engine workers; nDown the GPUs with any (see onDown).
	down  []int
	nDown int
	// Ray-like state: replicas per service, since when each was over/under target.
	rayRep           [][]int
	rayOver, rayIdle []dataplane.Time
	rayRng           uint64
	// ref runs the reference code paths (plan sorts the GPU's queue and reservations at every
	// rebuild, the DP calls availComp for every GPU): the equivalence test's baseline for the
	// faster paths, which must make the same decisions. check cross-checks the fast plan
	// against the sort at every rebuild (panics on a difference). Both are for tests only.
	ref, check bool
	keys       []planItem
	// Overload (shed.go): the average of late estimates, whether the scheduler sheds, and
	// until when.
	lateAvg   float64
	overload  bool
	shedUntil dataplane.Time
	// Plan rebuild scratch: rebuilds counts them; srAt[sv] is the rebuild whose svcReady of sv
	// srV[sv] holds.
	rebuilds int64
	srAt     []int64
	srV      []dataplane.Time
	// svcMax[sv] is service sv's MaxBatch, latTab[sv][b] its ExpLat(b) for b ≤ MaxBatch.
	svcMax  []int
	latTab  [][]float64
	refPlan []pbatch
	// DP scratch.
	h, h2, bestX []float64
	srvMin       []srvBest
	bp           [][]int
	tmp          []int
}

// New returns a scheduler named name.
func New(name string, opt Options) *Policy {
	return &Policy{name: name, opt: opt}
}

// Name implements dataplane.Policy.
func (p *Policy) Name() string { return p.name }

// Stats returns the scheduler's counters.
func (p *Policy) Stats() *Stats { return &p.st }

// Attach implements dataplane.Policy.
func (p *Policy) Attach(v dataplane.View) error {
	p.v, p.dep = v, v.Deployment()
	m, ok := MetaOf(p.dep)
	if !ok {
		return fmt.Errorf("policy %s: the deployment was not built by dataplane/dyorc", p.name)
	}
	p.m = m
	ns := len(m.W.Services)
	p.devs = make([]device, m.GPUs)
	for g := range p.devs {
		p.devs[g] = device{resident: make([]bool, ns), lastUse: make([]dataplane.Time, ns), loading: -1, dirty: true, timerAt: dataplane.Never,
			keep: p.opt.Mode != ModeRoundRobin && p.opt.Mode != ModeRay}
	}
	p.reqs = map[dataplane.ReqID]*reqState{}
	p.down = make([]int, m.GPUs)
	p.svcMax, p.latTab = make([]int, ns), make([][]float64, ns)
	for sv := range m.W.Services {
		s := &m.W.Services[sv]
		p.svcMax[sv] = s.MaxBatch
		p.latTab[sv] = make([]float64, max(s.MaxBatch, 0)+1)
		for b := range p.latTab[sv] {
			p.latTab[sv][b] = s.ExpLat(b)
		}
	}
	for a := range m.W.Apps {
		pr := NewPredictor(ns, p.opt.Seed+uint64(a)+1)
		pr.Argmax = p.opt.Argmax
		p.preds = append(p.preds, pr)
	}
	p.st.StepTotal = make([]int64, len(m.W.Apps))
	p.st.StepHit = make([]int64, len(m.W.Apps))
	p.st.FlowTotal = make([]int64, len(m.W.Apps))
	p.st.FlowHit = make([]int64, len(m.W.Apps))
	nsrv := 0
	for _, s := range m.GPUServer {
		nsrv = max(nsrv, s+1)
	}
	p.hostC = make([][]bool, nsrv)
	for i := range p.hostC {
		p.hostC[i] = make([]bool, ns)
	}
	return nil
}

// Handle implements dataplane.Policy.
func (p *Policy) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	if !p.warm {
		p.prewarm(now, out)
	}
	switch ev.Kind {
	case dataplane.EvArrival:
		r := p.v.Req(ev.Req)
		a := int(r.App)
		rs := &reqState{app: a, prevDev: -1, prevSvc: -1, on: dataplane.NoWorker}
		p.reqs[ev.Req] = rs
		p.ingress(r, rs, out)
	case dataplane.EvStageArrival:
		for _, r := range p.v.Arrived(ev) {
			if p.v.Req(r).CancelRequested {
				// Withdrawn while its last step ran: no further step.
				out.Drop(r, ev.Stage, dataplane.DropCancelled, 0)
				p.cancel(r)
				continue
			}
			p.call(now, r, ev.Stage, false, out)
		}
	case dataplane.EvCancel:
		p.cancel(ev.Req)
	case dataplane.EvWorkerDown:
		p.onDown(now, ev.Worker, out)
	case dataplane.EvWorkerUp:
		p.onUp(now, ev.Worker, out)
	case dataplane.EvBatchDone:
		d := p.m.DevOf[ev.Worker]
		b := p.v.Batch(ev.Batch)
		for _, r := range b.Reqs {
			rs := p.reqs[r]
			if rs == nil {
				continue
			}
			if d >= 0 {
				rs.prevDev = d
			} else {
				rs.on = dataplane.NoWorker
			}
			if p.v.Req(r).Outcome != dataplane.Pending {
				p.finish(r, rs)
			}
		}
		if d < 0 {
			return
		}
		dv := &p.devs[d]
		dv.outstanding--
		if i := slices.Index(dv.runW, ev.Worker); i >= 0 {
			dv.runW = slices.Delete(dv.runW, i, i+1)
		}
		if dv.outstanding <= 0 {
			dv.running, dv.dirty = false, true
			clear(dv.runTasks)
			dv.runTasks = dv.runTasks[:0]
			p.startLoad(now, d, out)
			p.tryStart(now, d, out)
		}
	case dataplane.EvModelLoaded:
		d := p.m.DevOf[ev.Worker]
		if d < 0 {
			return
		}
		sv := p.m.StageSvc[p.dep.Topo.Workers[ev.Worker].Stage]
		dv := &p.devs[d]
		dv.resident[sv] = true
		dv.lastUse[sv] = now
		if dv.loading == sv {
			dv.loading = -1
		}
		dv.dirty = true
		p.startLoad(now, d, out)
		p.tryStart(now, d, out)
	case dataplane.EvTimer:
		if ev.Key == rayTick {
			p.rayScale(now)
			out.SetTimer(now+RayInterval, rayTick)
			return
		}
		d := int(ev.Key)
		if d >= 0 && d < len(p.devs) {
			p.devs[d].timerAt = dataplane.Never
			p.tryStart(now, d, out)
		}
	}
}

// prewarm loads the plan's placement at once (the paper does not say what DyOrc starts from; we
// seed it with the offline plan's placement).
func (p *Policy) prewarm(now dataplane.Time, out *dataplane.Decisions) {
	p.warm = true
	if p.opt.Mode == ModeRay {
		ns := len(p.m.W.Services)
		p.rayRep = make([][]int, ns)
		p.rayOver, p.rayIdle = make([]dataplane.Time, ns), make([]dataplane.Time, ns)
		for i := range p.rayOver {
			p.rayOver[i], p.rayIdle[i] = -1, -1
		}
		for g, svcs := range p.m.Warm {
			for _, sv := range svcs {
				p.rayRep[sv] = append(p.rayRep[sv], g)
			}
		}
		p.rayRng = p.opt.Seed*0x9e3779b97f4a7c15 + 1
		out.SetTimer(now+RayInterval, rayTick)
	}
	for g, svcs := range p.m.Warm {
		for _, sv := range svcs {
			s := &p.m.W.Services[sv]
			if p.v.WorkerDown(p.m.Holder[g][sv]) {
				continue // failed before the first event: never load onto a down worker
			}
			out.Load(p.m.Holder[g][sv], s.Name, s.Bytes, 0)
			// Resident at once: a batch dispatched meanwhile waits for the 0-length load.
			p.devs[g].resident[sv] = true
			p.devs[g].mem += s.Bytes
			p.hostC[p.m.GPUServer[g]][sv] = true
		}
	}
}

// itemsOf is the fan-out of service sv's calls in app a (for predicted tasks).
func (p *Policy) itemsOf(a, sv int) int {
	k := 1
	for _, n := range p.m.W.Apps[a].Nodes {
		if n.Svc == sv {
			k = max(k, n.Items)
		}
	}
	return k
}

// call handles a real service call (DyOrc §5.3: schedule the predicted workflow, re-plan on a
// mispredict). retry re-places a call a worker failure released (see onDown): it is not a new
// call, so it counts in no prediction statistic.
func (p *Policy) call(now dataplane.Time, r dataplane.ReqID, stage dataplane.StageID, retry bool, out *dataplane.Decisions) {
	rs := p.reqs[r]
	if rs == nil {
		return
	}
	if p.nDown == len(p.devs) {
		// Every GPU is down: nothing can serve the call (any live GPU could, loading the
		// service: workers are totipotent, DyOrc §6.1), so the request fails now rather than
		// waiting for a recovery that may never come.
		p.failDrop(r, rs, stage, out)
		return
	}
	sv := p.m.StageSvc[stage]
	items := p.m.W.Apps[rs.app].Nodes[p.m.StageNode[stage]].Items
	if retry {
		p.st.Rerouted++
	} else {
		p.st.Calls++
		if rs.hasExpect {
			p.st.StepTotal[rs.app]++
			if rs.expect == sv {
				p.st.StepHit[rs.app]++
			}
		}
	}
	from, fromItems := rs.prevSvc, rs.prevItems
	t0 := max(now, p.sched)
	dev := 0
	spec := p.opt.Mode == ModeSpec || p.opt.Mode == ModeOracle
	switch {
	case p.opt.Mode == ModeRoundRobin:
		dev = p.nextLive()
	case p.opt.Mode == ModeFixed:
		dev = p.bestFixed(now, t0, rs, sv, items)
	case p.opt.Mode == ModeRay:
		dev = p.rayRoute(sv)
	case spec && p.opt.Literal && len(rs.chain) > 0 && rs.chain[0].svc == sv && p.down[rs.chain[0].dev] == 0:
		// The call matches the next reservation: bind it there, no DP (DyOrc §5.3).
		dev = rs.chain[0].dev
		p.dropResv(rs.chain[0])
		rs.chain = rs.chain[1:]
		p.st.Binds++
		p.st.Hits++
	default:
		if len(rs.chain) > 0 && !retry {
			if rs.chain[0].svc != sv {
				p.st.Mispredicts++
			} else {
				p.st.Hits++
			}
		}
		p.cancelChain(rs)
		svcs := append(p.tmp[:0], sv)
		if spec {
			svcs = p.future(r, rs, sv, svcs)
		}
		its := make([]int, len(svcs))
		its[0] = items
		for k := 1; k < len(svcs); k++ {
			its[k] = p.itemsOf(rs.app, svcs[k])
		}
		devs, hs, states := p.DP(now, t0, rs.prevDev, rs.prevSvc, rs.prevItems, svcs, its)
		p.st.DPRuns++
		p.st.StatesExpanded += int64(states)
		cost := dataplane.Time(math.Ceil(float64(states) * p.opt.StateUs))
		p.sched = t0 + cost
		p.st.SchedBusy += cost
		t0 = p.sched
		if p.shed(now, r, rs, stage, hs[0], out) {
			p.tmp = svcs
			return
		}
		dev = devs[0]
		if spec {
			if len(rs.calls) == 0 {
				rs.flowPred = slices.Clone(svcs)
			}
			for k := 1; k < len(svcs); k++ {
				ready := dataplane.Time(hs[k-1] + p.m.Comm(devs[k-1], devs[k], svcs[k-1], its[k-1]))
				p.seq++
				x := &resv{svc: svcs[k], items: its[k], dev: devs[k], ready: ready, seq: p.seq, follows: devs[k] == devs[k-1] && svcs[k] == svcs[k-1]}
				rs.chain = append(rs.chain, x)
				dv := &p.devs[devs[k]]
				dv.reserve(x)
				dv.dirty = true
				p.ensureLoad(now, devs[k], svcs[k], false, out)
			}
		}
		p.tmp = svcs
	}
	if spec {
		rs.hasExpect = true
		rs.expect = End
		if len(rs.chain) > 0 {
			rs.expect = rs.chain[0].svc
		}
	}
	comm := p.m.Comm(rs.prevDev, dev, rs.prevSvc, rs.prevItems)
	if p.opt.Mode == ModeRay && rs.prevSvc >= 0 {
		comm = p.m.Tier3(rs.prevDev, dev, rs.prevSvc, rs.prevItems)
	}
	ready := max(t0, now+dataplane.Time(math.Ceil(comm)))
	p.seq++
	dv := &p.devs[dev]
	t := &task{req: r, stage: stage, svc: sv, items: items, ready: ready, seq: p.seq, fromSvc: from, fromItems: fromItems}
	dv.enqueue(t)
	dv.dirty = true
	rs.calls = append(rs.calls, sv)
	rs.prevSvc, rs.prevItems = sv, items
	// (ModeFixed only loads a service no replica holds: Triton loads nothing by itself.)
	p.ensureLoad(now, dev, sv, true, out)
	p.tryStart(now, dev, out)
}

// future appends the predicted rest of the request after its call of sv: the Markov rollout
// (ModeSpec) or the true path (ModeOracle).
func (p *Policy) future(r dataplane.ReqID, rs *reqState, sv int, svcs []int) []int {
	if p.opt.Mode == ModeOracle {
		path, ok := p.m.TruePath(p.v.Req(r))
		if ok {
			app := &p.m.W.Apps[rs.app]
			for k := len(rs.calls) + 1; k < len(path); k++ {
				svcs = append(svcs, app.Nodes[path[k]].Svc)
			}
			return svcs
		}
	}
	pred := p.preds[rs.app].Rollout(sv, nil)
	return append(svcs, pred...)
}

// finish ends a request: leftover reservations go, the chain learns its calls (DyOrc §5.2).
func (p *Policy) finish(r dataplane.ReqID, rs *reqState) {
	if rs.hasExpect {
		p.st.StepTotal[rs.app]++
		if rs.expect == End {
			p.st.StepHit[rs.app]++
		}
	}
	if rs.flowPred != nil {
		p.st.FlowTotal[rs.app]++
		if slices.Equal(rs.flowPred, rs.calls) {
			p.st.FlowHit[rs.app]++
		}
	}
	p.cancelChain(rs)
	if p.opt.Mode == ModeSpec {
		p.preds[rs.app].Observe(rs.calls)
	}
	delete(p.reqs, r)
}

func (p *Policy) cancelChain(rs *reqState) {
	for _, x := range rs.chain {
		p.dropResv(x)
	}
	rs.chain = rs.chain[:0]
}

func (p *Policy) dropResv(x *resv) {
	dv := &p.devs[x.dev]
	if i := slices.Index(dv.resv, x); i >= 0 {
		dv.resv = slices.Delete(dv.resv, i, i+1)
		dv.orderDel(x.ready, x.seq)
		dv.dirty = true
	}
}

// bestFixed is the Triton-like router: the replica of the fixed placement with the earliest
// estimated finish (any GPU when no replica holds the service).
func (p *Policy) bestFixed(now, t0 dataplane.Time, rs *reqState, sv, items int) int {
	best, bestH := -1, math.Inf(1)
	for g := range p.devs {
		if !slices.Contains(p.m.Warm[g], sv) || p.down[g] > 0 {
			continue
		}
		r := float64(t0) + p.m.Comm(rs.prevDev, g, rs.prevSvc, rs.prevItems)
		if h := p.availComp(now, g, sv, items, r); h < bestH {
			best, bestH = g, h
		}
	}
	if best < 0 {
		best = p.nextLive()
	}
	return best
}

// DP is the speculative scheduler's dynamic program (DyOrc §5.3, Algorithm 1) over a chain of
// tasks svcs[0..n) with items its[k]; the first consumes the output of service srcSvc on GPU src
// (-1 = the request input) ready at t0. A state is (GPU of the latest task, its finish h);
// within a layer a state is dominated by one on the same GPU with smaller h, and the
// predecessor's triple is redundant once its consumer is placed, so each layer keeps at most
// one state per GPU: |D| + (n−1)·|D|² states are expanded. It returns the GPU of every task,
// their estimated finishes and the states expanded.
func (p *Policy) DP(now, t0 dataplane.Time, src, srcSvc, srcItems int, svcs, its []int) ([]int, []float64, int) {
	G := len(p.devs)
	n := len(svcs)
	if cap(p.h) < G {
		p.h, p.h2, p.bestX = make([]float64, G), make([]float64, G), make([]float64, G)
	}
	h, h2 := p.h[:G], p.h2[:G]
	for len(p.bp) < n {
		p.bp = append(p.bp, nil)
	}
	for k := 0; k < n; k++ {
		if cap(p.bp[k]) < G {
			p.bp[k] = make([]int, G)
		}
		p.bp[k] = p.bp[k][:G]
	}
	states := G
	if p.ref {
		for d := 0; d < G; d++ {
			r := float64(t0) + p.m.Comm(src, d, srcSvc, srcItems)
			h[d] = p.availComp(now, d, svcs[0], its[0], r)
		}
	} else {
		p.layer(now, svcs[0], its[0], false, t0, src, srcSvc, srcItems, nil, h)
	}
	for k := 1; k < n; k++ {
		sv, it := svcs[k-1], its[k-1]
		// comm depends only on the tier: same GPU, same node, other node.
		cn, cx := 0.0, 0.0
		if G > 1 {
			cn = p.m.Comm(0, 1, sv, it)
		}
		cx = cn
		srv := p.m.GPUServer
		for g := 1; g < G; g++ {
			if srv[g] != srv[0] {
				cx = p.m.Comm(0, g, sv, it)
				break
			}
		}
		bp := p.bp[k]
		p.bestPred(h, cn, cx, bp, p.bestX)
		if p.ref {
			for d := 0; d < G; d++ {
				h2[d] = p.availCompPred(now, d, svcs[k], its[k], p.bestX[d])
			}
		} else {
			p.layer(now, svcs[k], its[k], true, 0, 0, 0, 0, p.bestX[:G], h2)
		}
		states += G * G
		h, h2 = h2, h
	}
	last := 0
	for d := 1; d < G; d++ {
		if h[d] < h[last] {
			last = d
		}
	}
	devs := make([]int, n)
	hs := make([]float64, n)
	devs[n-1] = last
	for k := n - 1; k > 0; k-- {
		devs[k-1] = p.bp[k][devs[k]]
	}
	// Re-derive each task's finish along the chosen chain (the layers were overwritten).
	r := float64(t0) + p.m.Comm(src, devs[0], srcSvc, srcItems)
	for k := 0; k < n; k++ {
		if k > 0 {
			r = hs[k-1] + p.m.Comm(devs[k-1], devs[k], svcs[k-1], its[k-1])
		}
		if k == 0 {
			hs[k] = p.availComp(now, devs[k], svcs[k], its[k], r)
		} else {
			hs[k] = p.availCompPred(now, devs[k], svcs[k], its[k], r)
		}
	}
	p.h, p.h2 = h, h2
	return devs, hs, states
}

// layer evaluates one layer of the DP: into h[d], for every GPU d, availComp (pred: availCompPred)
// of a task of items of service sv whose input is ready at ready[d], or, for the first layer
// (ready nil), at t0 plus the transfer of srcItems outputs of srcSvc from GPU src. It computes
// the same values, in the same floating-point operations, as calling availComp on every GPU
// (Policy.ref), and rebuilds the same GPUs' plans (every GPU that is not down: a plan is kept
// with the time of its rebuild), but takes what depends on the layer alone (the service, the
// task's latency, load times, transfer times by tier) once, and an empty plan's finish,
// max(now, ready, avail, running batch's end) + latency, without the timeline walk: at 128
// GPUs three quarters of the GPUs have empty plans at a call (issue 15 item 4).
func (p *Policy) layer(now dataplane.Time, sv, items int, pred bool, t0 dataplane.Time, src, srcSvc, srcItems int, ready, h []float64) {
	s := &p.m.W.Services[sv]
	lat := s.ExpLat(items)
	warmUs, coldUs := p.m.LoadUs(sv, false), p.m.LoadUs(sv, true)
	chargeLoad := pred && !p.opt.Literal
	srv := p.m.GPUServer
	// Layer 0's input times by tier (Comm depends only on same GPU / same server / other).
	var rSelf, rNear, rFar float64
	if ready == nil {
		rSelf = float64(t0) + p.m.Comm(src, src, srcSvc, srcItems)
		rNear, rFar = rSelf, rSelf
		if src >= 0 {
			for e := range p.devs {
				if e != src && srv[e] == srv[src] {
					rNear = float64(t0) + p.m.Comm(src, e, srcSvc, srcItems)
					break
				}
			}
			for e := range p.devs {
				if srv[e] != srv[src] {
					rFar = float64(t0) + p.m.Comm(src, e, srcSvc, srcItems)
					break
				}
			}
		}
	}
	fnow := float64(now)
	inf := math.Inf(1)
	for d := range p.devs {
		if p.down[d] > 0 {
			h[d] = inf
			continue
		}
		dv := &p.devs[d]
		pl := dv.plan
		if dv.dirty {
			pl = p.plan(now, d)
		}
		var r float64
		switch {
		case ready != nil:
			r = ready[d]
		case src < 0 || d == src:
			r = rSelf
		case srv[d] == srv[src]:
			r = rNear
		default:
			r = rFar
		}
		// svcReady and availCompPred's load charge.
		var sr float64
		switch {
		case dv.resident[sv]:
			sr = fnow
		case dv.loading == sv:
			sr = float64(dv.loadETA)
		default:
			base := fnow
			if dv.loading >= 0 {
				base = max(base, float64(dv.loadETA))
			}
			load := coldUs
			if p.hostC[srv[d]][sv] {
				load = warmUs
			}
			sr = base + load
			if chargeLoad {
				r += load
			}
		}
		t := max(fnow, r, sr)
		if dv.running {
			t = max(t, float64(dv.runEnd))
		}
		if len(pl) == 0 {
			h[d] = t + lat
			continue
		}
		h[d] = availScan(now, pl, s, sv, items, r, sr, t, lat)
	}
}

// srvBest holds, for one server, the two smallest finishes of the previous layer (value,
// then GPU index: the first GPU in index order wins a tie).
type srvBest struct {
	v1, v2 float64
	a1, a2 int
}

func lessVA(v float64, a int, w float64, b int) bool { return v < w || v == w && a < b }

// bestPred is the DP's transition for one layer: for every GPU d, the predecessor e that
// minimises h[e] + comm(e→d) (ties to the lowest e), written to arg[d] with its value in x[d].
// comm depends only on the tier (0 on d itself, cn within d's server, cx across servers), so
// the per-server two smallest h and the two best servers give every d's minimum in O(|D|)
// rather than scanning all |D| predecessors: the same choices as the quadratic scan
// (TestBestPredMatchesScan), at 256 GPUs ~100× faster. The scheduler is still charged for the
// paper's |D|² transitions per layer (states), the overhead behind DyOrc §8.5's scaling.
func (p *Policy) bestPred(h []float64, cn, cx float64, arg []int, x []float64) {
	srv := p.m.GPUServer
	G := len(h)
	ns := 0
	for d := 0; d < G; d++ {
		ns = max(ns, srv[d]+1)
	}
	if cap(p.srvMin) < ns {
		p.srvMin = make([]srvBest, ns)
	}
	sm := p.srvMin[:ns]
	inf := math.Inf(1)
	for i := range sm {
		sm[i] = srvBest{v1: inf, v2: inf, a1: -1, a2: -1}
	}
	for e := 0; e < G; e++ {
		b := &sm[srv[e]]
		switch {
		case b.a1 < 0 || lessVA(h[e], e, b.v1, b.a1):
			b.v2, b.a2 = b.v1, b.a1
			b.v1, b.a1 = h[e], e
		case b.a2 < 0 || lessVA(h[e], e, b.v2, b.a2):
			b.v2, b.a2 = h[e], e
		}
	}
	// The two best servers by their best GPU.
	s1, s2 := -1, -1
	for i := range sm {
		if sm[i].a1 < 0 {
			continue
		}
		switch {
		case s1 < 0 || lessVA(sm[i].v1, sm[i].a1, sm[s1].v1, sm[s1].a1):
			s1, s2 = i, s1
		case s2 < 0 || lessVA(sm[i].v1, sm[i].a1, sm[s2].v1, sm[s2].a1):
			s2 = i
		}
	}
	for d := 0; d < G; d++ {
		best, a := h[d], d
		b := &sm[srv[d]]
		if e := b.a1; e == d {
			e = b.a2
			if e >= 0 && lessVA(b.v2+cn, e, best, a) {
				best, a = b.v2+cn, e
			}
		} else if e >= 0 && lessVA(b.v1+cn, e, best, a) {
			best, a = b.v1+cn, e
		}
		o := s1
		if o == srv[d] {
			o = s2
		}
		if o >= 0 && lessVA(sm[o].v1+cx, sm[o].a1, best, a) {
			best, a = sm[o].v1+cx, sm[o].a1
		}
		if math.IsInf(best, 1) {
			a = 0 // as the scan, which keeps its initial 0 when nothing is finite
		}
		arg[d], x[d] = a, best
	}
}

// svcReady is when service sv can run on GPU d: now if resident, the load's ETA if loading,
// else after the current load and its own load (avail in Eq. 1, DyOrc §5.3).
func (p *Policy) svcReady(now dataplane.Time, d, sv int) float64 {
	dv := &p.devs[d]
	switch {
	case dv.resident[sv]:
		return float64(now)
	case dv.loading == sv:
		return float64(dv.loadETA)
	}
	base := float64(now)
	if dv.loading >= 0 {
		base = max(base, float64(dv.loadETA))
	}
	return base + p.m.LoadUs(sv, !p.hostC[p.m.GPUServer[d]][sv])
}

// availCompPred is availComp for a predicted task. Read literally, Eq.1 charges a missing
// service's load from now, so a task predicted seconds ahead sees its load as free on every
// GPU, and the DP loads it next to its predecessor to save a transfer of microseconds: one more
// replica per guess, evicting services other requests use (KC's 25 cards thrash) and holding
// the GPU's one load slot (the paper does not say how many loads a GPU runs at once; we run
// one). Unless Literal, a predicted task's missing service is charged its load after the task's
// input is ready, as the reactive load Greedy would pay at the real call: the DP then puts a
// predicted task on a GPU without its service only where that wins even with the load on the
// critical path (an overloaded replica, DyOrc §5.3), and the reservation starts that load
// early, hidden behind the predecessors (DyOrc §5.4). Measured on `plan bench dyorc` (3 seeds ×
// 1800 s, load ×3): image loads 18 → 7, MIX 402 → 373, mean latency unchanged within the seeds'
// spread.
func (p *Policy) availCompPred(now dataplane.Time, d, sv, items int, ready float64) float64 {
	if !p.opt.Literal {
		dv := &p.devs[d]
		if !dv.resident[sv] && dv.loading != sv {
			ready += p.m.LoadUs(sv, !p.hostC[p.m.GPUServer[d]][sv])
		}
	}
	return p.availComp(now, d, sv, items, ready)
}

// availComp is Eq.1: the finish of a task of items on GPU d whose input is ready at ready. It
// joins a planned batch of the same service that has not started, has room and starts no
// earlier than the input is ready (the paper does not say; a batch that started before its
// input would stall), or else takes the first gap of the GPU's planned timeline long enough for
// it: workers skip tasks that are not ready, so a reservation far in the future does not delay
// a task ready now [ours].
func (p *Policy) availComp(now dataplane.Time, d, sv, items int, ready float64) float64 {
	if p.down[d] > 0 {
		return math.Inf(1) // a failed GPU finishes nothing: the DP places no task there
	}
	pl := p.plan(now, d)
	s := &p.m.W.Services[sv]
	sr := p.svcReady(now, d, sv)
	lat := s.ExpLat(items)
	t := max(float64(now), ready, sr)
	if dv := &p.devs[d]; dv.running {
		t = max(t, float64(dv.runEnd))
	}
	return availScan(now, pl, s, sv, items, ready, sr, t, lat)
}

// availScan is availComp's walk of a planned timeline pl: the best planned batch of s to join,
// or the first gap from t long enough for lat (sr: svcReady).
func availScan(now dataplane.Time, pl []pbatch, s *Service, sv, items int, ready, sr, t, lat float64) float64 {
	best := math.Inf(1)
	for i := range pl {
		b := &pl[i]
		if b.svc == sv && b.start > now && b.items+items <= s.MaxBatch && ready <= float64(b.start) && sr <= float64(b.start) {
			best = min(best, float64(b.start)+s.ExpLat(b.items+items))
		}
	}
	for i := range pl {
		b := &pl[i]
		if float64(b.end) <= t {
			continue
		}
		if float64(b.start) >= t+lat {
			break
		}
		t = float64(b.end)
	}
	return min(best, t+lat)
}

// plan returns GPU d's planned batches (our device model behind avail in Eq. 1): its queued
// real tasks and reservations in order of readiness, grouped into batches by the join rule,
// after the running batch.
func (p *Policy) plan(now dataplane.Time, d int) []pbatch {
	dv := &p.devs[d]
	if !dv.dirty {
		return dv.plan
	}
	dv.dirty = false
	dv.plan = dv.plan[:0]
	t := now
	if dv.running {
		t = max(t, dv.runEnd)
	}
	if p.ref || p.check || !dv.keep {
		p.planSorted(now, d, t)
		if !p.check || !dv.keep {
			return dv.plan
		}
		p.refPlan = append(p.refPlan[:0], dv.plan...)
		dv.plan = dv.plan[:0]
	}
	// svcReady depends on the service and on GPU state that the rebuild does not change: it is
	// computed once per service met (srAt: the rebuild that computed srV).
	if len(p.srAt) < len(p.m.W.Services) {
		p.srAt, p.srV = make([]int64, len(p.m.W.Services)), make([]dataplane.Time, len(p.m.W.Services))
	}
	p.rebuilds++
	stamp := p.rebuilds
	pl := dv.plan
	for i := range dv.order {
		x := &dv.order[i]
		// Read literally every reservation counts [ours, measured in plan bench dyorc]:
		//   - one whose estimated input time has passed waits on a late predecessor: when it
		//     will be ready is unknown, and kept at "now" it would make this GPU look busy to
		//     every other request until its request's next call (GILL 59.9 s under Literal);
		//   - one that follows its predecessor with the same service on the same GPU (a
		//     Debate round after a round) would be planned as a batch of its own right after
		//     its predecessor's, though the worker batches it with whatever of that service is
		//     queued then: counted, Debate's mean is 1.7 % above Greedy's; left out, equal.
		if x.resv && !p.opt.Literal && (x.ready < now || x.follows) {
			continue
		}
		// planAdd, inline.
		sv, items, ready := x.svc, x.items, max(x.ready, now)
		sr := p.srV[sv]
		if p.srAt[sv] != stamp {
			sr = dataplane.Time(p.svcReady(now, d, sv))
			p.srAt[sv], p.srV[sv] = stamp, sr
		}
		if n := len(pl); n > 0 {
			last := &pl[n-1]
			if last.svc == sv && last.items+items <= p.svcMax[sv] && ready <= last.start && sr <= last.start {
				last.items += items
				last.end = last.start + dataplane.Time(p.expLat(sv, last.items))
				continue
			}
			t = max(t, last.end)
		}
		st := max(t, ready, sr)
		pl = append(pl, pbatch{svc: sv, items: items, start: st, end: st + dataplane.Time(p.expLat(sv, items))})
	}
	dv.plan = pl
	if p.check && !slices.Equal(p.refPlan, dv.plan) {
		panic(fmt.Sprintf("dyorc: GPU %d at %d µs: plan from the kept order %v, sorted %v", d, now, dv.plan, p.refPlan))
	}
	return dv.plan
}

// expLat is Services[sv].ExpLat(b), from the table for b ≤ MaxBatch (the same values).
func (p *Policy) expLat(sv, b int) float64 {
	if t := p.latTab[sv]; b >= 0 && b < len(t) {
		return t[b]
	}
	return p.m.W.Services[sv].ExpLat(b)
}

// planAdd appends a task of items of service sv ready at ready to GPU d's plan, joining the
// last batch when the join rule allows; t is when the GPU is free before it, and planAdd
// returns t as it stands after.
func (p *Policy) planAdd(now dataplane.Time, d int, t dataplane.Time, sv, items int, ready dataplane.Time) dataplane.Time {
	dv := &p.devs[d]
	s := &p.m.W.Services[sv]
	sr := dataplane.Time(p.svcReady(now, d, sv))
	if n := len(dv.plan); n > 0 {
		last := &dv.plan[n-1]
		if last.svc == sv && last.items+items <= s.MaxBatch && ready <= last.start && sr <= last.start {
			last.items += items
			last.end = last.start + dataplane.Time(s.ExpLat(last.items))
			return t
		}
		t = max(t, last.end)
	}
	st := max(t, ready, sr)
	dv.plan = append(dv.plan, pbatch{svc: sv, items: items, start: st, end: st + dataplane.Time(s.ExpLat(items))})
	return t
}

// planSorted is plan's reference: it collects GPU d's queued tasks and counted reservations
// and sorts them at every rebuild (the code before device.order; Policy.ref).
func (p *Policy) planSorted(now dataplane.Time, d int, t dataplane.Time) {
	dv := &p.devs[d]
	type item struct {
		sv, items int
		ready     dataplane.Time
		seq       int64
	}
	its := make([]item, 0, len(dv.queue)+len(dv.resv))
	for _, x := range dv.queue {
		its = append(its, item{x.svc, x.items, x.ready, x.seq})
	}
	for _, x := range dv.resv {
		if p.opt.Literal || x.ready >= now && !x.follows {
			its = append(its, item{x.svc, x.items, x.ready, x.seq})
		}
	}
	sort.Slice(its, func(i, j int) bool {
		if its[i].ready != its[j].ready {
			return its[i].ready < its[j].ready
		}
		return its[i].seq < its[j].seq
	})
	for _, x := range its {
		t = p.planAdd(now, d, t, x.sv, x.items, max(x.ready, now))
	}
}

// tryStart runs the worker rule (DyOrc §5.1, §6.1): when GPU d is free, the oldest ready task
// whose service is resident heads a batch that every ready task of that service behind it
// joins, up to max_batch items. Tasks whose input has not arrived are skipped; reservations
// never run.
func (p *Policy) tryStart(now dataplane.Time, d int, out *dataplane.Decisions) {
	dv := &p.devs[d]
	if dv.running || p.down[d] > 0 {
		return
	}
	var head *task
	next := dataplane.Never
	for _, t := range dv.queue {
		if t.ready > now {
			next = min(next, t.ready)
			continue
		}
		if dv.resident[t.svc] {
			head = t
			break
		}
	}
	if head == nil {
		if next < dv.timerAt {
			dv.timerAt = next
			out.SetTimer(next, int64(d))
		}
		return
	}
	s := &p.m.W.Services[head.svc]
	var members []*task
	total := 0
	keep := dv.queue[:0]
	for _, t := range dv.queue {
		if t.svc == head.svc && t.ready <= now && (t == head || total+t.items <= p.maxBatch(head.svc)) {
			members = append(members, t)
			total += t.items
			continue
		}
		keep = append(keep, t)
	}
	for k := len(keep); k < len(dv.queue); k++ {
		dv.queue[k] = nil
	}
	dv.queue = keep
	p.keys = dv.orderDelTasks(members, p.keys)
	dur := dataplane.Time(math.Ceil(s.Lat(total)))
	// One engine batch per stage, all on this GPU's workers with the joint batch's duration:
	// together they are one service batch across workflows (DyOrc §5.1).
	sort.SliceStable(members, func(i, j int) bool { return members[i].stage < members[j].stage })
	groups := 0
	var reqs []dataplane.ReqID
	for i := 0; i < len(members); {
		j := i
		reqs = reqs[:0]
		for j < len(members) && members[j].stage == members[i].stage {
			reqs = append(reqs, members[j].req)
			j++
		}
		st := members[i].stage
		out.Dispatch(p.dep.Stages[st].App, reqs, []dataplane.PathHop{{Stage: st, Worker: p.m.WorkerOf[d][st], Dur: dur}})
		dv.runW = append(dv.runW, p.m.WorkerOf[d][st])
		groups++
		i = j
	}
	dv.runTasks = append(dv.runTasks, members...)
	dv.running, dv.runSvc, dv.outstanding = true, head.svc, groups
	// The engine runs the batch at its nominal (the work model draws the real length); the
	// device model expects it to end at its expected length.
	dv.runEnd = now + dataplane.Time(math.Ceil(s.ExpLat(total)))
	dv.lastUse[head.svc] = now
	dv.dirty = true
}

// ensureLoad queues a load of sv on GPU d (proactive for a reservation, real for a task).
func (p *Policy) ensureLoad(now dataplane.Time, d, sv int, real bool, out *dataplane.Decisions) {
	dv := &p.devs[d]
	if dv.resident[sv] || dv.loading == sv {
		return
	}
	for i := range dv.loadQ {
		if dv.loadQ[i].svc == sv {
			// A real task may evict what a waiting reservation's load could not: retry.
			dv.loadQ[i].real = dv.loadQ[i].real || real
			p.startLoad(now, d, out)
			return
		}
	}
	dv.loadQ = append(dv.loadQ, loadReq{svc: sv, real: real})
	p.startLoad(now, d, out)
}

func (p *Policy) neededReal(d, sv int) bool {
	dv := &p.devs[d]
	if dv.running && dv.runSvc == sv {
		return true
	}
	for _, t := range dv.queue {
		if t.svc == sv {
			return true
		}
	}
	return false
}

func (p *Policy) neededResv(d, sv int) bool {
	for _, x := range p.devs[d].resv {
		if x.svc == sv {
			return true
		}
	}
	return false
}

// startLoad starts GPU d's next load, one at a time (the paper does not say how many loads run
// at once), real tasks' loads first. Memory comes from LRU eviction of services no queued batch
// needs; a reservation never pins its service against a real task's load ([ours], so that
// reservations cannot block each other's loads); when nothing can be evicted the load waits.
func (p *Policy) startLoad(now dataplane.Time, d int, out *dataplane.Decisions) {
	dv := &p.devs[d]
	if dv.loading >= 0 || p.down[d] > 0 {
		return // one load at a time; none onto a failed GPU (the engine does not guard loads)
	}
	// Drop loads nothing needs any more.
	keep := dv.loadQ[:0]
	for _, l := range dv.loadQ {
		l.real = p.neededReal(d, l.svc)
		if l.real || p.neededResv(d, l.svc) {
			keep = append(keep, l)
		}
	}
	dv.loadQ = keep
	pick := -1
	for i, l := range dv.loadQ {
		if l.real {
			pick = i
			break
		}
	}
	if pick < 0 && len(dv.loadQ) > 0 {
		pick = 0
	}
	if pick < 0 {
		return
	}
	l := dv.loadQ[pick]
	s := &p.m.W.Services[l.svc]
	capb := p.m.GPUMem
	if capb > 0 && dv.mem+s.Bytes > capb {
		if !l.real && !p.opt.Literal {
			// A proactive load only fills free memory [ours]: evicting for a guess displaced
			// services that real calls then reloaded (KC, MIX: more loads, no faster).
			return
		}
		var victims []int
		for sv, ok := range dv.resident {
			if ok && !p.neededReal(d, sv) && (l.real || !p.neededResv(d, sv)) {
				victims = append(victims, sv)
			}
		}
		sort.Slice(victims, func(i, j int) bool {
			if dv.lastUse[victims[i]] != dv.lastUse[victims[j]] {
				return dv.lastUse[victims[i]] < dv.lastUse[victims[j]]
			}
			return victims[i] < victims[j]
		})
		free := capb - dv.mem
		k := 0
		for k < len(victims) && free < s.Bytes {
			free += p.m.W.Services[victims[k]].Bytes
			k++
		}
		if free < s.Bytes {
			return // wait for the queue (the paper leaves a full GPU open)
		}
		for _, sv := range victims[:k] {
			out.Evict(p.m.Holder[d][sv], p.m.W.Services[sv].Name)
			dv.resident[sv] = false
			dv.mem -= p.m.W.Services[sv].Bytes
			p.st.Evictions++
		}
	}
	srv := p.m.GPUServer[d]
	dur := dataplane.Time(math.Ceil(p.m.LoadUs(l.svc, !p.hostC[srv][l.svc] || p.opt.Mode == ModeRay)))
	p.hostC[srv][l.svc] = true
	out.Load(p.m.Holder[d][l.svc], s.Name, s.Bytes, dur)
	dv.loading, dv.loadETA = l.svc, now+dur
	dv.mem += s.Bytes
	dv.loadQ = slices.Delete(dv.loadQ, pick, pick+1)
	dv.dirty = true
	p.st.Loads++
}

// maxBatch is the batch cap of service sv under this scheduler.
func (p *Policy) maxBatch(sv int) int {
	if p.opt.Mode == ModeRay {
		return min(RayMaxBatch, p.m.W.Services[sv].MaxBatch)
	}
	return p.m.W.Services[sv].MaxBatch
}

// ongoing counts the queued and running tasks of service sv on GPU d.
func (p *Policy) ongoing(d, sv int) int {
	dv := &p.devs[d]
	n := 0
	if dv.running && dv.runSvc == sv {
		n++
	}
	for _, t := range dv.queue {
		if t.svc == sv {
			n++
		}
	}
	return n
}

// rayRoute picks the less busy of two random replicas of sv (Ray Serve's default router);
// a service without replicas gets one on the least busy GPU.
func (p *Policy) rayRoute(sv int) int {
	reps := p.rayRep[sv]
	if p.nDown > 0 {
		// Ray Serve's router skips dead replicas; with none left the service gets a new one
		// on a live GPU, as for a service without replicas.
		reps = p.liveOf(reps)
		if len(reps) == 0 {
			p.rayAdd(sv)
			reps = p.liveOf(p.rayRep[sv])
		}
	}
	if len(reps) == 0 {
		p.rayAdd(sv)
		reps = p.rayRep[sv]
	}
	if len(reps) == 0 {
		return p.nextLive()
	}
	next := func() int {
		p.rayRng ^= p.rayRng << 13
		p.rayRng ^= p.rayRng >> 7
		p.rayRng ^= p.rayRng << 17
		return int(p.rayRng % uint64(len(reps)))
	}
	a, b := reps[next()], reps[next()]
	if p.ongoing(b, sv) < p.ongoing(a, sv) {
		return b
	}
	return a
}

// rayAdd adds a replica of sv on the GPU with the least queued work that has none.
func (p *Policy) rayAdd(sv int) {
	best, bestN := -1, 0
	for g := range p.devs {
		if slices.Contains(p.rayRep[sv], g) || p.down[g] > 0 {
			continue
		}
		n := len(p.devs[g].queue)
		if best < 0 || n < bestN {
			best, bestN = g, n
		}
	}
	if best >= 0 {
		p.rayRep[sv] = append(p.rayRep[sv], best)
	}
}

// rayScale is the autoscaler's control loop: a service whose ongoing requests per replica
// stay above the target for the upscale delay gets one more replica; one idle for the
// downscale delay loses one (keeping one).
func (p *Policy) rayScale(now dataplane.Time) {
	for sv := range p.rayRep {
		reps := p.rayRep[sv]
		if len(reps) == 0 {
			continue
		}
		n := 0
		for _, g := range reps {
			n += p.ongoing(g, sv)
		}
		per := float64(n) / float64(len(reps))
		switch {
		case per > RayTargetOngoing:
			p.rayIdle[sv] = -1
			if p.rayOver[sv] < 0 {
				p.rayOver[sv] = now
			} else if now-p.rayOver[sv] >= RayUpscaleDelay {
				p.rayAdd(sv)
				p.rayOver[sv] = -1
			}
		case n == 0:
			p.rayOver[sv] = -1
			if p.rayIdle[sv] < 0 {
				p.rayIdle[sv] = now
			} else if now-p.rayIdle[sv] >= RayDownscaleDelay && len(reps) > 1 {
				p.rayRep[sv] = reps[:len(reps)-1]
				p.rayIdle[sv] = -1
			}
		default:
			p.rayOver[sv], p.rayIdle[sv] = -1, -1
		}
	}
}
