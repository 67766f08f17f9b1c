package dyorc

import (
	"fmt"
	"math"
	"slices"

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
	// at: the reservation's index in its GPU's resv while it is there (dropResv).
	at int
}

type pbatch struct {
	svc, items int
	start, end dataplane.Time
}

type loadReq struct {
	svc  int
	real bool
}

// device is a GPU's scheduler state. Its fields are laid out by use: the first cache line
// holds what the sparse layers' walk of a busy GPU's plan reads (plan, availScan; the rest
// of the GPU's state comes from its hotDev), the second what devStart and availComp add, the
// next ones what a rebuild reads, the rest what the worker rule and the queues use. At 128
// GPUs a DP walks ~5 plans a layer; with the fields in their former order a walk read three
// of the device's lines (cachegrind: plan's dirty test alone ~2.3 L1 misses an event).
type device struct {
	// Line 0.
	plan []pbatch
	// pmask, pnext: plan's index for availScan (indexPlan).
	pmask uint64
	pnext []int32
	dirty bool
	// pend, pendAt: the rebuild of a dirty plan that a DP deferred, and the time of that DP, at
	// which the plan is rebuilt when first needed (evalLayer).
	pend    bool
	running bool
	// touched: a change since the DP's last sync of the idle set (idle.go).
	touched bool
	// keep: the order is kept (see order).
	keep bool
	// Line 1.
	runEnd   dataplane.Time
	loading  int
	loadETA  dataplane.Time
	resident []bool
	pendAt   dataplane.Time
	runSvc   int
	// order: the queued tasks and the reservations in the plan's order (order.go), kept when
	// keep is set: under the modes that plan (round robin and the Ray-like router never do).
	order []planItem
	// pre, preN: the plan's settled prefix (order.go): the batches that the queued tasks
	// among order[:preN] form, every item there ready before an earlier rebuild.
	pre  []preBatch
	preN int
	// plan[:preTN]: the planned batches of pre[:preTN] as the last rebuild planned them, the
	// first starting at preT0 and each after it where the one before ended, the services of
	// those after the first (preTMask) resident (order.go).
	preTN int
	// preJ, preJB: 1 + the index of the kept batch that the last rebuild's future items
	// joined (0: none), and that batch as the prefix planned it.
	preJ        int
	preJB       pbatch
	preT0       dataplane.Time
	preTMask    uint64
	outstanding int
	queue       []*task
	// qn[sv] counts the queued tasks of service sv: the Ray-like router's ongoing count
	// (DyOrc §8) reads it at every call, and scanning a queue that grows to hundreds of tasks
	// under overload made routing cost grow with the load.
	qn      []int32
	resv    []*resv
	lastUse []dataplane.Time
	loadQ   []loadReq
	mem     int64
	timerAt dataplane.Time
	// runW: the workers running the parts of the current batch (a failed one never reports).
	runW []dataplane.WorkerID
	// runTasks: the tasks of the current batch, to re-place those a failure releases.
	runTasks []*task
	// resM: resident as a mask (bit sv for sv < 64; setResident keeps it): the idle set's
	// sync (hotOf) read it from the 32 flags of the scale benchmark's services at every
	// touched GPU, ~190 instructions an event at 128 GPUs.
	resM uint64
	// The device fills whole cache lines (448 bytes, no padding left), so that in the
	// devices' slice (a 64-byte aligned allocation) each one's line 0 starts a line
	// (TestDeviceLayout).
}

// setResident records whether service sv's model is resident on the GPU.
func (dv *device) setResident(sv int, r bool) {
	dv.resident[sv] = r
	if sv < 64 {
		dv.resM &^= 1 << sv
		if r {
			dv.resM |= 1 << sv
		}
	}
}

// qtask is one of a request's queued tasks and the GPU whose queue holds it.
type qtask struct {
	dev int
	t   *task
}

type reqState struct {
	app                         int
	prevDev, prevSvc, prevItems int
	calls                       []int
	chain                       []*resv
	expect                      int
	hasExpect                   bool
	flowPred                    []int
	// qdevs: each of the request's queued tasks and its GPU, so that cancel visits those GPUs
	// rather than scanning every GPU's queue (a cost per cancel that grew with the cluster),
	// and finds the tasks there by their pointers, not by reading every queued task's record
	// (at 128 GPUs under the 16× load, cachegrind counted those reads as ~8 L1 misses an event).
	qdevs []qtask
	// on: the API-server worker holding the request's ingress (NoWorker once it is done).
	on dataplane.WorkerID
	// free: the state is on the Policy's free list (see release).
	free bool
}

// Policy is DyOrc's central scheduler and its ablations, as a dataplane.Policy.
type Policy struct {
	name  string
	opt   Options
	v     dataplane.View
	dep   *dataplane.Deployment
	m     *Meta
	devs  []device
	reqs  reqTable
	preds []*Predictor
	hostC [][]bool // [server][svc] in host RAM
	// hostM[sv]: the servers (bit s) whose host RAM holds sv, where there are at most 64
	// servers (else nil), kept with hostC (setHost): evalSparse's disk-load fallback visits
	// those servers alone instead of reading every server's row of hostC.
	hostM []uint64
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
	members    []*task // tryStart's scratch
	// Free lists of request states, tasks and reservations (pool.go):
	// at 128 GPUs under the 16× load these were a third of the bytes a run allocates, and the
	// collector's marking of a heap that grows with the run cost ~25% of an event.
	freeReqs  freeList[reqState]
	freeTasks freeList[task]
	freeResv  freeList[resv]
	// call's scratch: the chain's fan-outs, the DP's placement and finishes, the rollout.
	its, dpDevs, roll []int
	dpHs              []float64
	reqBuf            []dataplane.ReqID // tryStart's scratch
	// Overload (shed.go): the average of late estimates, whether the scheduler sheds, and
	// until when.
	lateAvg   float64
	overload  bool
	shedUntil dataplane.Time
	// Plan rebuild scratch: rebuilds counts them; srs[sv] holds a svcReady of sv and the
	// rebuild that found it.
	rebuilds int64
	srs      []svcReadyAt
	// svcMax[sv] is service sv's MaxBatch, latTab[sv][b] its ExpLat(b) for b ≤ MaxBatch.
	svcMax []int
	latTab [][]float64
	// latUp[sv]: ExpLat of sv does not fall as the batch grows up to MaxBatch (lastLayer's
	// bound: a task joining a batch finishes no earlier than it would alone).
	latUp   []bool
	refPlan []pbatch
	// keptPlan: rebuild's copy of a checked GPU's kept prefix batches while planSorted runs.
	keptPlan []pbatch
	// nearOf[g], farOf[g]: the first GPU other than g on g's server, and the first on another
	// server (-1: none), whose transfers from g stand for their tiers' (layerOf).
	nearOf, farOf []int
	// flat turns the DP's grouping of idle GPUs off (idle.go), for the equivalence test;
	// sparseAll tries the sparse layer evaluation (sparse.go) whatever the number of units;
	// allHolders evaluates every busy holder there, without the best-first cut (idleSet.byEnd).
	flat, sparseAll, allHolders bool
	idle                        idleSet
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
	p.idle = idleSet{}
	keep := p.opt.Mode != ModeRoundRobin && p.opt.Mode != ModeRay && orderFits(m.W)
	for g := range p.devs {
		p.devs[g] = device{resident: make([]bool, ns), qn: make([]int32, ns), lastUse: make([]dataplane.Time, ns), loading: -1, dirty: true, timerAt: dataplane.Never,
			keep: keep}
	}
	p.reqs = reqTable{}
	p.down = make([]int, m.GPUs)
	p.nearOf, p.farOf = tierGPUs(m.GPUServer)
	p.svcMax, p.latTab, p.latUp = make([]int, ns), make([][]float64, ns), make([]bool, ns)
	p.srs = nil // made again from these at the first rebuild
	for sv := range m.W.Services {
		s := &m.W.Services[sv]
		p.svcMax[sv] = s.MaxBatch
		p.latTab[sv] = make([]float64, max(s.MaxBatch, 0)+1)
		p.latUp[sv] = true
		for b := range p.latTab[sv] {
			p.latTab[sv][b] = s.ExpLat(b)
			if b > 0 && !(p.latTab[sv][b] >= p.latTab[sv][b-1]) {
				p.latUp[sv] = false
			}
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
	p.initHost(nsrv, ns)
	return nil
}

// initHost lays out the host caches of nsrv servers, empty, for ns services.
func (p *Policy) initHost(nsrv, ns int) {
	p.hostC = make([][]bool, nsrv)
	for i := range p.hostC {
		p.hostC[i] = make([]bool, ns)
	}
	p.hostM = nil
	if nsrv <= 64 {
		p.hostM = make([]uint64, ns)
	}
}

// setHost records whether server s's host RAM holds service sv (hostC, hostM).
func (p *Policy) setHost(s, sv int, in bool) {
	p.hostC[s][sv] = in
	if p.hostM != nil {
		p.hostM[sv] &^= 1 << s
		if in {
			p.hostM[sv] |= 1 << s
		}
	}
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
		rs := p.newReqState(a)
		p.reqs.set(ev.Req, rs)
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
			rs := p.reqs.get(r)
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
			dv.running = false
			p.touch(d)
			// The batch's tasks left their queues and their requests' qdevs when it started.
			p.freeTasks.put(dv.runTasks...)
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
		dv.setResident(sv, true)
		dv.lastUse[sv] = now
		if dv.loading == sv {
			dv.loading = -1
		}
		p.touch(d)
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
	p.idle.ok = false // residency set below without touch: the next DP syncs every GPU
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
			p.devs[g].setResident(sv, true)
			p.devs[g].mem += s.Bytes
			p.setHost(p.m.GPUServer[g], sv, true)
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
	rs := p.reqs.get(r)
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
		its := slices.Grow(p.its[:0], len(svcs))[:len(svcs)]
		p.its = its
		its[0] = items
		for k := 1; k < len(svcs); k++ {
			its[k] = p.itemsOf(rs.app, svcs[k])
		}
		p.dpDevs = slices.Grow(p.dpDevs[:0], len(svcs))[:len(svcs)]
		p.dpHs = slices.Grow(p.dpHs[:0], len(svcs))[:len(svcs)]
		devs, hs, states := p.dp(now, t0, rs.prevDev, rs.prevSvc, rs.prevItems, svcs, its, p.dpDevs, p.dpHs)
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
				rs.flowPred = append(rs.flowPred[:0], svcs...)
			}
			for k := 1; k < len(svcs); k++ {
				ready := dataplane.Time(hs[k-1] + p.m.Comm(devs[k-1], devs[k], svcs[k-1], its[k-1]))
				p.seq++
				x := p.freeResv.take()
				*x = resv{svc: svcs[k], items: its[k], dev: devs[k], ready: ready, seq: p.seq, follows: devs[k] == devs[k-1] && svcs[k] == svcs[k-1]}
				rs.chain = append(rs.chain, x)
				dv := &p.devs[devs[k]]
				dv.reserve(x)
				p.touch(devs[k])
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
	t := p.freeTasks.take()
	*t = task{req: r, stage: stage, svc: sv, items: items, ready: ready, seq: p.seq, fromSvc: from, fromItems: fromItems}
	dv.enqueue(t)
	rs.qdevs = append(rs.qdevs, qtask{dev, t})
	p.touch(dev)
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
	p.roll = p.preds[rs.app].Rollout(sv, p.roll)
	return append(svcs, p.roll...)
}

// finish ends a request: leftover reservations go, the chain learns its calls (DyOrc §5.2).
func (p *Policy) finish(r dataplane.ReqID, rs *reqState) {
	if rs.hasExpect {
		p.st.StepTotal[rs.app]++
		if rs.expect == End {
			p.st.StepHit[rs.app]++
		}
	}
	if len(rs.flowPred) > 0 { // a prediction holds at least the call it was made at
		p.st.FlowTotal[rs.app]++
		if slices.Equal(rs.flowPred, rs.calls) {
			p.st.FlowHit[rs.app]++
		}
	}
	p.cancelChain(rs)
	if p.opt.Mode == ModeSpec {
		p.preds[rs.app].Observe(rs.calls)
	}
	p.release(r, rs)
}

func (p *Policy) cancelChain(rs *reqState) {
	for _, x := range rs.chain {
		p.dropResv(x)
	}
	rs.chain = rs.chain[:0]
}

func (p *Policy) dropResv(x *resv) {
	dv := &p.devs[x.dev]
	// The GPU's reservations are a set (planSorted sorts them, neededResv asks for any): the
	// last takes x's place instead of every one after it moving down, and x finds its place
	// by its index instead of a search (at 128 GPUs under the 16× load a busy GPU holds ~60).
	if i := x.at; i < len(dv.resv) && dv.resv[i] == x {
		n := len(dv.resv) - 1
		dv.resv[i] = dv.resv[n]
		dv.resv[i].at = i
		dv.resv[n] = nil
		dv.resv = dv.resv[:n]
		dv.orderDel(x.ready, x.seq)
		p.touch(x.dev)
		// Held by no GPU now, and the caller drops it from its chain.
		p.freeResv.put(x)
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

// svcReadyAt is a service's svcReady on the GPU being rebuilt, and the rebuild that found it
// (Policy.rebuilds), with the service's svcMax and latTab: one slice for the rebuild's loop
// to keep in registers, not four.
type svcReadyAt struct {
	at  int64
	v   dataplane.Time
	max int
	lat []float64
}
