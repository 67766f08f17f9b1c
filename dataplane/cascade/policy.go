package cascade

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// Policy names.
const (
	// PolicyGears is CascadeServe's gear-switching policy (the default).
	PolicyGears = "cascadeserve"
	// PolicyNoSwitch serves one static gear (the plan's last, highest-QPS gear): the
	// no-switching ablation of the paper's Fig. 12.
	PolicyNoSwitch = "cascade-noswitch"
)

// Policies lists the data plane's policies.
func Policies() []dataplane.PolicySpec {
	return []dataplane.PolicySpec{
		{Name: PolicyGears, Doc: "CascadeServe: gear switching on 100 ms QPS polls (α backlog rule), certainty-threshold forwarding, deficit routing, per-GPU batches at queue triggers", Serves: []string{Kind},
			New: func(cfg dataplane.Config) (dataplane.Policy, error) { return newPolicy(PolicyGears, cfg, true) }},
		{Name: PolicyNoSwitch, Doc: "CascadeServe ablation: one static gear (the plan's highest-QPS gear) with the same batching and forwarding", Serves: []string{Kind},
			New: func(cfg dataplane.Config) (dataplane.Policy, error) { return newPolicy(PolicyNoSwitch, cfg, false) }},
		{Name: PolicyCocktail, Doc: "Cocktail+ baseline: one model autoscaled to ceil(QPS/packing) replicas, least-loaded routing, model loads (2 GB/s + warm-up) when a replica joins", Serves: []string{Kind},
			New: func(cfg dataplane.Config) (dataplane.Policy, error) { return newCocktail(cfg) }},
	}
}

// Registry is a registry of this data plane's policies alone.
func Registry() *dataplane.Registry { return dataplane.NewRegistry(Policies()...) }

// Policy is the gear-switching state machine. Parameters: alpha (backlog rule factor, default
// the plan's, 8), poll_ms (QPS poll, default the plan's, 100), qps_scale (QPS scaling for a
// drifted QPS distribution, App. C.2; default 1), window_ms (measure QPS over this window,
// updated every poll; default 0 = since the last poll, as the paper), preload (true: the
// placement is resident from the start; false: load a replica's model the first time a gear
// needs it).
type Policy struct {
	name    string
	switchG bool
	cfg     dataplane.Config
	alpha   float64
	pollMs  float64
	scale   float64
	preload bool

	v    dataplane.View
	dep  *dataplane.Deployment
	tab  gearTable
	cur  int // current gear
	gqhi []float64
	// stageReps[s]: workers of stage s; repIdx[w]: w's index among its stage's replicas.
	stageReps [][]dataplane.WorkerID
	repIdx    []int
	gpuReps   [][]dataplane.WorkerID
	gpuBusy   []bool
	// gpuEnd[g]: the nominal end of the batch GPU g runs (shed.go's lower bound).
	gpuEnd  []dataplane.Time
	running []bool   // per worker
	queues  []wqueue // per worker: its requests and their arrivals (queue.go)
	// wideGPUs[w]: the GPUs of a replica on more than inlineGPUs of them (nil otherwise;
	// wqueue holds the others').
	wideGPUs [][]int32
	// deficit routing counters per (gear, position): total and per replica sent.
	total [][]float64
	sent  [][][]float64
	// dfx[g][pos] indexes sent[g][pos] for route (deficit.go); scan: route and batchDone's
	// co-location look-up scan every replica instead (the reference the equivalence tests
	// compare the index with).
	dfx  [][]deficitIndex
	scan bool
	// colo(w, s): the replicas of stage s sharing a GPU with worker w, as indexes into
	// stageReps[s] in increasing order (batchDone's co-located forwarding target), every
	// (w, s) list in one array: coloIdx[coloOff[w·nS+s]:coloOff[w·nS+s+1]]. Per-worker
	// lists of per-stage lists were three dependent loads from separate allocations per
	// forwarded request, each a miss once hundreds of replicas finish batches in turn.
	coloIdx []int32
	coloOff []int32
	// per request: the gear it entered with, for the nGear requests from reqBase on, in a
	// ring indexed by ID (len(gearOf) a power of two, at least nGear). The engine retires
	// requests one Forget at a time, oldest first: a slice re-cut at its front and copied
	// when it shrank cost every Forget a capacity check and, as the requests in flight grow
	// with the cluster, copies into fresh memory; the ring is only ever grown.
	gearOf  []int16
	nGear   int
	reqBase dataplane.ReqID
	// QPS measurement: arrivals since the last poll; with window_ms, the counts of the
	// polls inside the window (a ring).
	count    int64
	lastTick dataplane.Time
	windowMs float64
	ring     []int64
	ringT    []dataplane.Time
	ringAt   int
	// model residency (preload=false): per worker, loaded or loading.
	loaded, loading []bool
	// Switches counts gear changes; Decisions counts gear lookups (bench reporting); Shed
	// counts the requests dropped because they could not be served on time (shed.go).
	Switches, Lookups, Shed int64
	path                    [1]dataplane.PathHop
	// inflight[w]: the requests of the batch w runs (a failure of w releases them);
	// nDown: workers down now (0 = the failure-free fast path).
	inflight [][]dataplane.ReqID
	nDown    int
	scratch  []dataplane.ReqID
	pending  []uint8 // batchDone's pendingOf
	// checkRoute, when set (tests), gets every indexed routing choice and the scan's.
	checkRoute func(index, scan int)
	// cand: the GPUs that may have become ready since last tried (bitset); aging: queue
	// heads by when their wait reaches the poll interval tick (ready.go).
	cand  []uint64
	aging dataplane.TimeHeap[dataplane.WorkerID]
	seq   uint64
	tick  dataplane.Time
}

func newPolicy(name string, cfg dataplane.Config, sw bool) (*Policy, error) {
	if err := cfg.CheckKnown(name, "alpha", "poll_ms", "qps_scale", "preload", "window_ms"); err != nil {
		return nil, err
	}
	p := &Policy{name: name, switchG: sw, cfg: cfg}
	var err error
	if p.alpha, err = cfg.Float("alpha", -1); err != nil {
		return nil, err
	}
	if p.pollMs, err = cfg.Float("poll_ms", -1); err != nil {
		return nil, err
	}
	if p.scale, err = cfg.Float("qps_scale", 1); err != nil {
		return nil, err
	}
	if p.preload, err = cfg.Bool("preload", true); err != nil {
		return nil, err
	}
	if p.windowMs, err = cfg.Float("window_ms", 0); err != nil {
		return nil, err
	}
	if p.windowMs < 0 || p.windowMs > 60000 {
		return nil, fmt.Errorf("policy %s: window_ms %g: must be in [0, 60000]", name, p.windowMs)
	}
	if !(p.scale > 0) {
		return nil, fmt.Errorf("policy %s: qps_scale %g: must be > 0", name, p.scale)
	}
	return p, nil
}

// Name implements dataplane.Policy.
func (p *Policy) Name() string { return p.name }

// TickEvery implements dataplane.Ticker: the producer's QPS poll (§5, 100 ms).
func (p *Policy) TickEvery() dataplane.Time {
	ms := p.pollMs
	if ms <= 0 {
		ms = 100
	}
	return dataplane.Time(ms * float64(dataplane.Millisecond))
}

// Attach implements dataplane.Policy: it reads the gear table the deployer put in the
// application's parameters.
func (p *Policy) Attach(v dataplane.View) error {
	p.v = v
	p.dep = v.Deployment()
	if p.dep.Kind != Kind || len(p.dep.Apps) != 1 {
		return fmt.Errorf("policy %s serves one-application cascade deployments", p.name)
	}
	js, ok := p.dep.Apps[0].Params[ParamPlan]
	if !ok {
		return fmt.Errorf("policy %s: the deployment carries no gear table (%s)", p.name, ParamPlan)
	}
	if err := json.Unmarshal([]byte(js), &p.tab); err != nil {
		return fmt.Errorf("policy %s: gear table: %v", p.name, err)
	}
	if len(p.tab.Gears) == 0 || len(p.tab.Replicas) != len(p.dep.Topo.Workers) {
		return fmt.Errorf("policy %s: gear table with %d gears and %d replicas for %d workers", p.name, len(p.tab.Gears), len(p.tab.Replicas), len(p.dep.Topo.Workers))
	}
	if p.alpha < 0 {
		p.alpha = p.tab.Alpha
		if p.alpha <= 0 {
			p.alpha = 8
		}
	}
	if p.pollMs < 0 {
		p.pollMs = p.tab.PollMs
	}
	if p.tab.MaxBatch <= 0 {
		p.tab.MaxBatch = 1000
	}
	nS, nW, nG := len(p.dep.Stages), len(p.dep.Topo.Workers), len(p.dep.Topo.GPUs)
	// The replicas' GPU lists, read on every push and batch, in one array rather than one
	// allocation each from the decoder.
	var flat []int
	for _, r := range p.tab.Replicas {
		flat = append(flat, r.GPUs...)
	}
	for w := range p.tab.Replicas {
		n := len(p.tab.Replicas[w].GPUs)
		p.tab.Replicas[w].GPUs, flat = flat[:n:n], flat[n:]
	}
	p.stageReps = make([][]dataplane.WorkerID, nS)
	p.repIdx = make([]int, nW)
	p.gpuReps = make([][]dataplane.WorkerID, nG)
	for w, r := range p.tab.Replicas {
		if r.Stage < 0 || r.Stage >= nS {
			return fmt.Errorf("policy %s: replica %d: stage %d", p.name, w, r.Stage)
		}
		p.repIdx[w] = len(p.stageReps[r.Stage])
		p.stageReps[r.Stage] = append(p.stageReps[r.Stage], dataplane.WorkerID(w))
		for _, g := range r.GPUs {
			if g < 0 || g >= nG {
				return fmt.Errorf("policy %s: replica %d: GPU %d of %d", p.name, w, g, nG)
			}
			p.gpuReps[g] = append(p.gpuReps[g], dataplane.WorkerID(w))
		}
	}
	for gi, g := range p.tab.Gears {
		if len(g.Stages) == 0 || len(g.Thr) != len(g.Stages)-1 || len(g.Share) != len(g.Stages) {
			return fmt.Errorf("policy %s: gear %d is malformed", p.name, gi)
		}
		for i, s := range g.Stages {
			if s < 0 || s >= nS || len(g.Share[i]) != len(p.stageReps[s]) {
				return fmt.Errorf("policy %s: gear %d stage %d: shares for %d replicas", p.name, gi, s, len(p.stageReps[s]))
			}
		}
		p.gqhi = append(p.gqhi, g.QHi)
	}
	p.gpuBusy = make([]bool, nG)
	p.gpuEnd = make([]dataplane.Time, nG)
	p.cand = make([]uint64, (nG+63)/64)
	p.tick = p.TickEvery()
	p.running = make([]bool, nW)
	p.queues = make([]wqueue, nW)
	p.wideGPUs = make([][]int32, nW)
	for w, r := range p.tab.Replicas {
		p.queues[w].stage = int32(r.Stage)
		p.setGPUs(dataplane.WorkerID(w), r.GPUs)
	}
	p.loaded = make([]bool, nW)
	p.loading = make([]bool, nW)
	p.inflight = make([][]dataplane.ReqID, nW)
	for w := range p.loaded {
		p.loaded[w] = p.preload
	}
	p.total = make([][]float64, len(p.tab.Gears))
	p.sent = make([][][]float64, len(p.tab.Gears))
	p.dfx = make([][]deficitIndex, len(p.tab.Gears))
	for gi, g := range p.tab.Gears {
		p.total[gi] = make([]float64, len(g.Stages))
		p.sent[gi] = make([][]float64, len(g.Stages))
		p.dfx[gi] = make([]deficitIndex, len(g.Stages))
		for i, s := range g.Stages {
			p.sent[gi][i] = make([]float64, len(p.stageReps[s]))
			p.dfx[gi][i] = newDeficitIndex(g.Share[i])
			p.dfx[gi][i].reset(p.sent[gi][i])
		}
	}
	// Co-located replicas through the GPUs' replica lists: O(replicas), not a scan of every
	// stage's replicas per worker.
	p.coloOff = make([]int32, 0, nW*nS+1)
	var lists [][]int32
	for _, r := range p.tab.Replicas {
		lists = slices.Grow(lists[:0], nS)[:nS]
		for s := range lists {
			lists[s] = lists[s][:0]
		}
		for _, d := range r.GPUs {
			for _, x := range p.gpuReps[d] {
				s := p.tab.Replicas[x].Stage
				if k := int32(p.repIdx[x]); !slices.Contains(lists[s], k) {
					lists[s] = append(lists[s], k)
				}
			}
		}
		for s := range lists {
			slices.Sort(lists[s])
			p.coloOff = append(p.coloOff, int32(len(p.coloIdx)))
			p.coloIdx = append(p.coloIdx, lists[s]...)
		}
	}
	p.coloOff = append(p.coloOff, int32(len(p.coloIdx)))
	if !p.switchG {
		p.cur = len(p.tab.Gears) - 1
	}
	return nil
}

// Gear returns the gear serving qps: the first whose upper bound exceeds it, clamped to
// the last (§5). It is the per-poll decision the bench times.
func Gear(qhi []float64, qps float64) int {
	i := sort.SearchFloat64s(qhi, qps)
	if i < len(qhi) && qhi[i] == qps {
		i++ // ranges are [q_lo, q_hi)
	}
	return min(i, len(qhi)-1)
}

// Switch applies §5's rule: switch to the gear of qps unless it is a lower-QPS gear and
// qps < alpha·q0 (a backlog of q0 stage-1 requests still drains).
func Switch(qhi []float64, cur int, qps, alpha float64, q0 int) int {
	g := Gear(qhi, qps)
	if g < cur && qps < alpha*float64(q0) {
		return cur
	}
	return g
}

// Current returns the current gear index.
func (p *Policy) Current() int { return p.cur }

// Handle implements dataplane.Policy.
func (p *Policy) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	switch ev.Kind {
	case dataplane.EvArrival:
		p.count++
		r := p.v.Req(ev.Req)
		if !p.setNextGear(ev.Req, p.cur) {
			p.setGear(ev.Req, p.cur)
		}
		g := &p.tab.Gears[p.cur]
		w := p.route(p.cur, 0, g.Stages[0])
		if w == dataplane.NoWorker {
			out.Drop(ev.Req, dataplane.StageID(g.Stages[0]), dataplane.DropWorkerFailed, 0)
			return
		}
		if ok, est := p.admits(now, w, r.Deadline); !ok {
			out.Drop(ev.Req, dataplane.StageID(g.Stages[0]), dataplane.DropAdmission, est-r.Arrival)
			p.Shed++
			return
		}
		p.push(w, ev.Req, r.Arrival)
		// kick, written out (with gpusOf in it, kick no longer inlines: a call per arrival)
		for _, g := range p.gpusOf(w) {
			p.tryGPU(now, int(g), out)
		}
	case dataplane.EvTick:
		elapsed := float64(now-p.lastTick) / float64(dataplane.Second)
		count := p.count
		if p.windowMs > 0 && now > p.lastTick {
			// [ours] window_ms: QPS over the last window (several polls), for low-rate
			// workloads where one 100 ms poll sees 0 or 1 arrivals and gears flap.
			n := max(1, int(math.Round(p.windowMs/float64(p.TickEvery()/dataplane.Millisecond))))
			if len(p.ring) != n {
				p.ring, p.ringT, p.ringAt = make([]int64, n), make([]dataplane.Time, n), 0
			}
			p.ring[p.ringAt], p.ringT[p.ringAt] = p.count, now-p.lastTick
			p.ringAt = (p.ringAt + 1) % n
			var dt dataplane.Time
			count = 0
			for i := range p.ring {
				count += p.ring[i]
				dt += p.ringT[i]
			}
			elapsed = float64(dt) / float64(dataplane.Second)
		}
		if now > p.lastTick && p.switchG {
			qps := math.Ceil(float64(count)/elapsed) * p.scale
			q0 := 0
			for _, w := range p.stageReps[p.tab.Gears[p.cur].Stages[0]] {
				q0 += p.queues[w].len()
			}
			p.Lookups++
			if g := Switch(p.gqhi, p.cur, qps, p.alpha, q0); g != p.cur {
				p.cur = g
				p.Switches++
				p.ensureLoaded(now, out)
			}
		}
		p.count, p.lastTick = 0, now
		if !p.preload && now == 0 {
			p.ensureLoaded(now, out)
		}
		p.tryAll(now, out)
	case dataplane.EvBatchDone:
		p.batchDone(now, ev, out)
	case dataplane.EvModelLoaded:
		w := ev.Worker
		p.loading[w], p.loaded[w] = false, true
		p.kick(now, w, out)
	case dataplane.EvWorkerDown:
		p.workerDown(now, ev.Worker, out)
	case dataplane.EvWorkerUp:
		p.workerUp(now, ev.Worker, out)
	case dataplane.EvCancel:
		p.cancel(ev.Req)
	}
}

// ensureLoaded loads the current gear's models on replicas that do not hold them yet
// (preload=false): the worker is busy meanwhile and its queue waits.
func (p *Policy) ensureLoaded(now dataplane.Time, out *dataplane.Decisions) {
	if p.preload {
		return
	}
	for _, s := range p.tab.Gears[p.cur].Stages {
		for _, w := range p.stageReps[s] {
			if p.loaded[w] || p.loading[w] || p.running[w] || p.isDown(w) {
				continue
			}
			r := p.tab.Replicas[w]
			// load at 2 GB/s plus a warm-up, at least 1 s (our stand-in load model)
			dur := dataplane.Time(math.Max(float64(r.Bytes)/2e9, 1) * float64(dataplane.Second))
			p.loading[w] = true
			out.Load(w, p.dep.Stages[s].Model, 0, dur)
		}
	}
}

// setNextGear is setGear's common case, small enough to inline into Handle: id is the
// request after the last recorded and the ring has room (every arrival but the first and a
// ring's growth). It reports whether it recorded id.
func (p *Policy) setNextGear(id dataplane.ReqID, g int) bool {
	i := int(id - p.reqBase)
	if p.nGear == 0 || i != p.nGear || i >= len(p.gearOf) {
		return false
	}
	p.gearOf[int(id)&(len(p.gearOf)-1)] = int16(g)
	p.nGear++
	return true
}

// setGear records that request id entered with gear g; the requests between the last
// recorded and id get gear 0.
func (p *Policy) setGear(id dataplane.ReqID, g int) {
	if p.nGear == 0 {
		p.reqBase = id
	}
	i := int(id - p.reqBase)
	if i >= len(p.gearOf) {
		p.growGears(i + 1)
	}
	mask := len(p.gearOf) - 1
	for ; p.nGear < i; p.nGear++ {
		p.gearOf[(int(p.reqBase)+p.nGear)&mask] = 0
	}
	p.nGear = max(p.nGear, i+1)
	p.gearOf[int(id)&mask] = int16(g)
}

// growGears makes the ring hold at least n records, keeping the recorded ones.
func (p *Policy) growGears(n int) {
	size := max(64, len(p.gearOf))
	for size < n {
		size *= 2
	}
	ring := make([]int16, size)
	for j := range p.nGear {
		id := int(p.reqBase) + j
		ring[id&(size-1)] = p.gearOf[id&(len(p.gearOf)-1)]
	}
	p.gearOf = ring
}

func (p *Policy) gearOfReq(id dataplane.ReqID) int {
	i := int(id - p.reqBase)
	if i < 0 || i >= p.nGear {
		return p.cur
	}
	return int(p.gearOf[int(id)&(len(p.gearOf)-1)])
}

// route picks stage s's replica for position pos of gear g by deficit over the gear's
// shares (target share − observed share, §5).
func (p *Policy) route(g, pos, s int) dataplane.WorkerID {
	sh := p.tab.Gears[g].Share[pos]
	// live is the share the live replicas hold: 1 without failures (sh/1 is exact, so a
	// failure-free run routes as before); with a replica down, its share is spread over the
	// live ones in proportion to theirs.
	live := 1.0
	if p.nDown > 0 {
		live = 0
		for k := range sh {
			if sh[k] > 0 && !p.isDown(p.stageReps[s][k]) {
				live += sh[k]
			}
		}
		if live == 0 {
			return p.anyLive(s)
		}
	}
	p.total[g][pos]++
	sent, dx := p.sent[g][pos], &p.dfx[g][pos]
	var best int
	if p.nDown > 0 || p.scan || !dx.ok {
		best = p.routeScan(sh, s, live, p.total[g][pos], sent)
	} else {
		best = dx.pick(p.total[g][pos], sent)
		if p.checkRoute != nil {
			p.checkRoute(best, p.routeScan(sh, s, live, p.total[g][pos], sent))
		}
	}
	sent[best]++
	dx.update(sent, best)
	return p.stageReps[s][best]
}

// routeScan is deficit routing by a scan of every replica (the paper's rule as first written;
// the index in deficit.go must agree with it): the greatest sh[k]/live·total − sent[k] over
// the live replicas with a share, the first on ties, 0 when none.
func (p *Policy) routeScan(sh []float64, s int, live, total float64, sent []float64) int {
	best, bv := 0, math.Inf(-1)
	for k := range sh {
		if sh[k] <= 0 || (p.nDown > 0 && p.isDown(p.stageReps[s][k])) {
			continue
		}
		if v := sh[k]/live*total - sent[k]; v > bv {
			best, bv = k, v
		}
	}
	return best
}

func (p *Policy) push(w dataplane.WorkerID, id dataplane.ReqID, at dataplane.Time) {
	q := &p.queues[w]
	head := q.len() == 0
	q.push(id, at)
	p.markW(w)
	if head {
		p.newHead(w)
	}
}

func (p *Policy) qlen(w dataplane.WorkerID) int { return p.queues[w].len() }

// trigger is w's minimum queue length: the current gear's b1 for its first model, 1 for
// every other stage (§4.5). [ours] A head that has waited a whole poll interval runs
// whatever is queued: the paper's triggers have no timeout, so a partial stage-1 batch
// would otherwise wait forever once arrivals stop (and the α rule keeps the gear while it
// waits).
func (p *Policy) trigger(now dataplane.Time, w dataplane.WorkerID) int {
	g := &p.tab.Gears[p.cur]
	q := &p.queues[w]
	if int(q.stage) != g.Stages[0] {
		return 1
	}
	if q.len() > 0 && now-q.at >= p.tick {
		return 1
	}
	return max(g.B1, 1)
}

// kick tries to start batches on the GPUs of worker w.
func (p *Policy) kick(now dataplane.Time, w dataplane.WorkerID, out *dataplane.Decisions) {
	for _, g := range p.gpusOf(w) {
		p.tryGPU(now, int(g), out)
	}
}

// setGPUs records replica w's GPUs: in its queue record, or in wideGPUs when they are more
// than it holds.
func (p *Policy) setGPUs(w dataplane.WorkerID, gpus []int) {
	q := &p.queues[w]
	q.ngpu = uint32(len(gpus))
	gs := q.gpu[:0]
	if len(gpus) > inlineGPUs {
		gs = make([]int32, 0, len(gpus))
	}
	for _, g := range gpus {
		gs = append(gs, int32(g))
	}
	if len(gpus) > inlineGPUs {
		p.wideGPUs[w] = gs
	}
}

// gpusOf is replica w's GPUs (its queue record's, or wideGPUs').
func (p *Policy) gpusOf(w dataplane.WorkerID) []int32 {
	q := &p.queues[w]
	if n := q.ngpu; n <= inlineGPUs {
		return q.gpu[:n]
	}
	return p.wideGPUs[w]
}

// tryGPU starts, on free GPU g, the ready queue (length ≥ trigger, every GPU of the replica
// free, model resident) with the oldest head (the paper leaves intra-GPU order open; this is
// deterministic).
func (p *Policy) tryGPU(now dataplane.Time, g int, out *dataplane.Decisions) {
	p.cand[g>>6] &^= 1 << (g & 63) // tried: ready only after a change marks it again
	if p.gpuBusy[g] {
		return
	}
	best := dataplane.NoWorker
	var bt dataplane.Time
	for _, w := range p.gpuReps[g] {
		if !p.running[w] && p.loaded[w] && !p.isDown(w) {
			p.dropLate(now, w, out)
		}
		if p.running[w] || !p.loaded[w] || p.qlen(w) < p.trigger(now, w) || p.isDown(w) {
			continue
		}
		free := true
		for _, d := range p.gpusOf(w) {
			free = free && !p.gpuBusy[d]
		}
		if !free {
			continue
		}
		if h := p.queues[w].at; best == dataplane.NoWorker || h < bt {
			best, bt = w, h
		}
	}
	if best == dataplane.NoWorker {
		return
	}
	w := best
	n := p.batchSize(now, w)
	p.inflight[w] = p.queues[w].take(n, p.inflight[w][:0], p.v)
	if p.qlen(w) > 0 {
		p.newHead(w)
	}
	end := now + p.lat(w, n)
	q := &p.queues[w]
	for _, d := range p.gpusOf(w) {
		p.gpuBusy[d], p.gpuEnd[d] = true, end
	}
	p.running[w] = true
	p.path[0] = dataplane.PathHop{Stage: dataplane.StageID(q.stage), Worker: w}
	out.Dispatch(p.dep.Stages[q.stage].App, p.inflight[w], p.path[:])
}

// batchDone forwards each request of the finished batch whose certainty is below the
// threshold to the next stage (co-located replica first, else deficit routing) and
// completes the others (§2.1, §5), then frees the replica's GPUs.
func (p *Policy) batchDone(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	w := ev.Worker
	st := int(p.queues[w].stage)
	b := p.v.Batch(ev.Batch)
	p.pending = pendingOf(p.v, b.Reqs, p.pending)
	for i, id := range b.Reqs {
		if p.pending[i] == reqFinished {
			continue
		}
		r := p.v.Req(id)
		if p.pending[i] == reqWithdrawn {
			// Withdrawn while the batch ran: no further model, no answer.
			out.Drop(id, dataplane.StageID(st), dataplane.DropCancelled, 0)
			continue
		}
		g, pos := p.gearPos(id, st)
		gs := &p.tab.Gears[g]
		if pos < 0 || pos == len(gs.Stages)-1 || !(float64(r.Result.Certainty) < gs.Thr[pos]) {
			out.Complete(id, dataplane.StageID(st))
			continue
		}
		ns := gs.Stages[pos+1]
		target := dataplane.NoWorker
		if p.scan {
			for k, x := range p.stageReps[ns] {
				if gs.Share[pos+1][k] > 0 && shareGPU(p.tab.Replicas[x].GPUs, p.tab.Replicas[w].GPUs) && !p.isDown(x) {
					target = x
					break
				}
			}
		} else {
			// The same first match, among the replicas that share a GPU with w only.
			for _, k := range p.colo(w, ns) {
				if x := p.stageReps[ns][k]; gs.Share[pos+1][k] > 0 && !p.isDown(x) {
					target = x
					break
				}
			}
		}
		if target == dataplane.NoWorker {
			target = p.route(g, pos+1, ns)
		}
		if target == dataplane.NoWorker {
			out.Drop(id, dataplane.StageID(ns), dataplane.DropWorkerFailed, 0)
			continue
		}
		if ok, est := p.admits(now, target, r.Deadline); !ok {
			out.Drop(id, dataplane.StageID(ns), dataplane.DropDeadline, est-r.Arrival)
			p.Shed++
			continue
		}
		p.push(target, id, r.Arrival)
	}
	p.inflight[w] = p.inflight[w][:0]
	p.running[w] = false
	for _, d := range p.gpusOf(w) {
		p.gpuBusy[d] = false
		p.markFreed(int(d))
	}
	p.tryCandidates(now, out)
}

// colo is the replicas of stage s sharing a GPU with worker w (indexes into stageReps[s],
// increasing).
func (p *Policy) colo(w dataplane.WorkerID, s int) []int32 {
	i := int(w)*len(p.stageReps) + s
	return p.coloIdx[p.coloOff[i]:p.coloOff[i+1]]
}

// gearPos is the gear request id goes on with at stage st and st's position in it: the
// current gear's cascade applies to samples entering a stage from now on; a request whose
// model left the cascade goes on with the gear it entered with (pos −1 when st is in
// neither).
func (p *Policy) gearPos(id dataplane.ReqID, st int) (g, pos int) {
	g = p.cur
	if pos = indexOf(p.tab.Gears[g].Stages, st); pos < 0 {
		g = p.gearOfReq(id)
		pos = indexOf(p.tab.Gears[g].Stages, st)
	}
	return g, pos
}

func indexOf(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func shareGPU(a, b []int) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
