package cascade

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/dataplane"
)

// PolicyCocktail is the Cocktail+-style autoscaling baseline (CascadeServe §6.2): one model
// served by a varying number of replicas, replicas = ceil(QPS / packing factor), with
// least-loaded routing and CascadeServe's batching (a free replica runs what is queued, up to
// the plan's max_batch). A replica that joins must first load the model — memory at 2 GB/s
// plus one warm-up batch, at least 1 s (our stand-in for the paper's seconds-long loads) —
// through the engine's DLoad; a replica that leaves is evicted (DEvict) once drained, and
// loads again when it rejoins. The authors' artifact left ensemble selection unimplemented and
// served one model, so the "ensemble" here is the set of replicas of that model, and an
// ensemble change is a load.
const PolicyCocktail = "cocktail+"

// Cocktail is the Cocktail+ policy. Parameters: model (the model served; default the last
// model of the plan's highest-QPS gear: a single-model plan's model), packing (QPS one
// replica serves; default the model's highest throughput b/lat(b) with 2·lat(b) within
// the latency SLO), interval_ms (the autoscaler's planning interval: scale-down happens
// only at its end, to the interval's peak measured QPS; default 10000, the paper's grid
// {10, 60, 300} s), poll_ms (QPS measurement; scale-up is immediate when a poll's QPS
// exceeds the replicas' capacity, as the paper's Cocktail+ rescales at every QPS change;
// default 100), initial (replicas at the start, already loaded: the fleet a running
// autoscaler holds when the replay starts; default 1). A backlog counts as load: scale-up
// asks for ceil((QPS + queued requests/1 s)/packing) replicas. future_qps (comma-separated
// per-second rates from time 0) makes it the paper's oracle: it provisions for the true
// peak of the coming interval instead of the measured QPS (loads still take their time).
//
// [ours] The paper's Cocktail+ scales to the true future QPS of the next interval (an
// oracle); a runtime policy sees only the past, so it scales up on the measured QPS and
// pays the load delay at every rise — the latency spikes at every peak of the paper's
// Figs. 8/9.
type Cocktail struct {
	cfg        dataplane.Config
	model      string
	packing    float64
	intervalMs float64
	pollMs     float64
	initial    int
	// future is the oracle's per-second true QPS (future_qps; nil: measured QPS).
	future []float64

	v     dataplane.View
	dep   *dataplane.Deployment
	stage dataplane.StageID
	reps  []dataplane.WorkerID // the model's replicas (workers of its stage)
	tab   gearTable
	bytes []int64 // per replica (index into reps)
	gpus  [][]int
	// per replica: active (wanted), resident (loaded), loading, running a batch
	active, resident, loading, running []bool
	gpuBusy                            []bool
	queues                             [][]dataplane.ReqID
	path                               [1]dataplane.PathHop
	// inflight[k]: the requests of the batch replica k runs (a failure releases them);
	// nDown: replicas down now (0 = the failure-free fast path).
	inflight [][]dataplane.ReqID
	nDown    int
	scratch  []dataplane.ReqID
	pending  []uint8 // EvBatchDone's pendingOf
	// ix indexes routing and batch starts (cocktailindex.go).
	ix cocktailIndex

	count     int64
	lastTick  dataplane.Time
	lastScale dataplane.Time
	peak      float64 // the highest poll QPS of the current interval
	started   bool

	// GPUSeconds integrates the GPUs held (active or loading replicas) over time; Loads
	// counts model loads; Held is the current GPU count.
	GPUSeconds float64
	Loads      int64
	held       int
	heldSince  dataplane.Time
}

func newCocktail(cfg dataplane.Config) (*Cocktail, error) {
	if err := cfg.CheckKnown(PolicyCocktail, "model", "packing", "interval_ms", "poll_ms", "initial", "future_qps"); err != nil {
		return nil, err
	}
	p := &Cocktail{cfg: cfg, model: cfg.Params["model"]}
	var err error
	if p.packing, err = cfg.Float("packing", 0); err != nil {
		return nil, err
	}
	if p.intervalMs, err = cfg.Float("interval_ms", 10000); err != nil {
		return nil, err
	}
	if p.pollMs, err = cfg.Float("poll_ms", 100); err != nil {
		return nil, err
	}
	init, err := cfg.Float("initial", 1)
	if err != nil {
		return nil, err
	}
	if init < 1 || init > 1e6 {
		return nil, fmt.Errorf("policy %s: initial %g: must be in [1, 1e6]", PolicyCocktail, init)
	}
	p.initial = int(init)
	if s := cfg.Params["future_qps"]; s != "" {
		for i, f := range strings.Split(s, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(x >= 0) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("policy %s: future_qps[%d]: %q: must be a rate >= 0", PolicyCocktail, i, f)
			}
			p.future = append(p.future, x)
		}
	}
	if p.packing < 0 || !(p.pollMs >= 1 && p.pollMs <= 60000) || !(p.intervalMs >= p.pollMs) {
		return nil, fmt.Errorf("policy %s: packing %g, poll_ms %g, interval_ms %g: want packing >= 0, poll_ms in [1, 60000], interval_ms >= poll_ms", PolicyCocktail, p.packing, p.pollMs, p.intervalMs)
	}
	return p, nil
}

// Name implements dataplane.Policy.
func (p *Cocktail) Name() string { return PolicyCocktail }

// TickEvery implements dataplane.Ticker.
func (p *Cocktail) TickEvery() dataplane.Time {
	return dataplane.Time(p.pollMs * float64(dataplane.Millisecond))
}

// Attach implements dataplane.Policy.
func (p *Cocktail) Attach(v dataplane.View) error {
	p.v, p.dep = v, v.Deployment()
	if p.dep.Kind != Kind || len(p.dep.Apps) != 1 {
		return fmt.Errorf("policy %s serves one-application cascade deployments", PolicyCocktail)
	}
	if err := json.Unmarshal([]byte(p.dep.Apps[0].Params[ParamPlan]), &p.tab); err != nil || len(p.tab.Gears) == 0 || len(p.tab.Replicas) != len(p.dep.Topo.Workers) {
		return fmt.Errorf("policy %s: the deployment carries no usable gear table (%s)", PolicyCocktail, ParamPlan)
	}
	if p.tab.MaxBatch <= 0 {
		p.tab.MaxBatch = DefaultMaxBatch
	}
	p.stage = -1
	if p.model == "" {
		last := p.tab.Gears[len(p.tab.Gears)-1].Stages
		p.stage = dataplane.StageID(last[len(last)-1])
		p.model = p.dep.Stages[p.stage].Model
	}
	for s := range p.dep.Stages {
		if p.dep.Stages[s].Model == p.model {
			p.stage = dataplane.StageID(s)
		}
	}
	if p.stage < 0 {
		return fmt.Errorf("policy %s: model %q: not a model of the deployment", PolicyCocktail, p.model)
	}
	st := &p.dep.Stages[p.stage]
	for w, r := range p.tab.Replicas {
		if dataplane.StageID(r.Stage) == p.stage {
			p.reps = append(p.reps, dataplane.WorkerID(w))
			p.bytes = append(p.bytes, r.Bytes)
			p.gpus = append(p.gpus, r.GPUs)
		}
	}
	if len(p.reps) == 0 {
		return fmt.Errorf("policy %s: model %s has no replica", PolicyCocktail, p.model)
	}
	if p.packing == 0 {
		// the highest throughput whose batch, waited for and run, fits the SLO
		slo := p.dep.Apps[0].SLO
		for b := 1; b < len(st.LatUs); b++ {
			if l := st.Lat(b); l > 0 && 2*l <= slo {
				p.packing = math.Max(p.packing, float64(b)/(float64(l)/float64(dataplane.Second)))
			}
		}
		if p.packing == 0 {
			p.packing = 1 / math.Max(float64(st.Lat(1))/float64(dataplane.Second), 1e-6)
		}
	}
	n := len(p.reps)
	p.active, p.resident, p.loading, p.running = make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
	p.queues = make([][]dataplane.ReqID, n)
	p.inflight = make([][]dataplane.ReqID, n)
	p.gpuBusy = make([]bool, len(p.dep.Topo.GPUs))
	p.buildIndex()
	return nil
}

// loadTime is a replica's model load: memory at 2 GB/s plus one warm-up batch, at least
// 1 s (our stand-in; the paper says only that loads take seconds).
func (p *Cocktail) loadTime(k int) dataplane.Time {
	d := dataplane.Time(float64(p.bytes[k])/2e9*float64(dataplane.Second)) + p.dep.Stages[p.stage].Lat(1)
	return max(d, dataplane.Second)
}

// account integrates the held GPUs up to now.
func (p *Cocktail) account(now dataplane.Time) {
	p.GPUSeconds += float64(p.held) * float64(now-p.heldSince) / float64(dataplane.Second)
	p.heldSince = now
	// The GPUs of the replicas active, loading or resident, as touch counted them.
	p.held = p.ix.held
}

// GPUAverage is the time-averaged GPU count up to now.
func (p *Cocktail) GPUAverage(now dataplane.Time) float64 {
	if now <= 0 {
		return float64(p.held)
	}
	s := p.GPUSeconds + float64(p.held)*float64(now-p.heldSince)/float64(dataplane.Second)
	return s / (float64(now) / float64(dataplane.Second))
}

// Handle implements dataplane.Policy.
func (p *Cocktail) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	switch ev.Kind {
	case dataplane.EvArrival:
		p.count++
		k := p.pick()
		if k < 0 {
			out.Drop(ev.Req, p.stage, dataplane.DropWorkerFailed, 0)
			return
		}
		p.queues[k] = append(p.queues[k], ev.Req)
		p.touch(k)
		p.try(k, out)
	case dataplane.EvTick:
		if !p.started {
			// the initial fleet, provisioned before the trace starts
			p.started = true
			for k := 0; k < min(p.initial, len(p.reps)); k++ {
				if p.isDown(k) {
					continue
				}
				p.active[k] = true
				p.touch(k)
				p.load(now, k, 0, out)
			}
		} else if len(p.future) > 0 {
			// the oracle: the true peak of the coming interval, known now
			q := p.futurePeak(now)
			end := now-p.lastScale >= dataplane.Time(p.intervalMs*float64(dataplane.Millisecond))
			if end {
				p.peak = q // scale down to the coming interval's peak, not the past one's
			} else {
				p.peak = math.Max(p.peak, q)
			}
			p.scale(now, q, end, out)
		} else if now > p.lastTick {
			qps := float64(p.count) / (float64(now-p.lastTick) / float64(dataplane.Second))
			p.peak = math.Max(p.peak, qps)
			// [ours] a backlog is load too: drain it within a second
			for k := range p.queues {
				qps += float64(len(p.queues[k]))
			}
			p.scale(now, qps, now-p.lastScale >= dataplane.Time(p.intervalMs*float64(dataplane.Millisecond)), out)
		}
		p.count, p.lastTick = 0, now
		p.tryAll(out)
	case dataplane.EvBatchDone:
		k := p.index(ev.Worker)
		if k < 0 {
			return
		}
		b := p.v.Batch(ev.Batch)
		p.pending = pendingOf(p.v, b.Reqs, p.pending)
		for i, id := range b.Reqs {
			switch p.pending[i] {
			case reqWithdrawn:
				out.Drop(id, p.stage, dataplane.DropCancelled, 0) // withdrawn while it ran: no answer
			case reqPending:
				out.Complete(id, p.stage)
			}
		}
		p.running[k] = false
		p.touch(k)
		p.inflight[k] = p.inflight[k][:0]
		for _, g := range p.gpus[k] {
			p.gpuBusy[g] = false
		}
		p.retire(now, k, out)
		p.tryAll(out)
	case dataplane.EvModelLoaded:
		if k := p.index(ev.Worker); k >= 0 {
			p.loading[k], p.resident[k] = false, true
			p.touch(k)
			p.account(now)
			p.retire(now, k, out)
			p.try(k, out)
		}
	case dataplane.EvWorkerDown:
		if k := p.index(ev.Worker); k >= 0 {
			p.replicaDown(now, k, out)
		}
	case dataplane.EvWorkerUp:
		if k := p.index(ev.Worker); k >= 0 {
			// Back empty and inactive: the autoscaler loads it when it wants it again.
			p.nDown--
		}
	case dataplane.EvCancel:
		// Already finished as cancelled: out of its replica's queue (a request in a running
		// batch is in none; the batch's end skips it). Cocktail+ keeps no other per-request
		// state.
		for k, q := range p.queues {
			if i := slices.Index(q, ev.Req); i >= 0 {
				p.queues[k] = slices.Delete(q, i, i+1)
				p.touch(k)
				break
			}
		}
	}
}

// scale sets the active replicas to ceil(qps/packing): up at once (loading joiners), down
// only at an interval's end, to its peak.
func (p *Cocktail) scale(now dataplane.Time, qps float64, intervalEnd bool, out *dataplane.Decisions) {
	n := p.ix.nActive
	want := min(len(p.reps), max(1, int(math.Ceil(qps/p.packing-absTol))))
	if intervalEnd {
		want = min(len(p.reps), max(1, int(math.Ceil(p.peak/p.packing-absTol))))
		p.peak, p.lastScale = qps, now
	}
	for k := 0; k < len(p.reps) && n < want; k++ {
		if !p.active[k] && !p.isDown(k) {
			p.active[k] = true
			p.touch(k)
			n++
			if !p.resident[k] && !p.loading[k] && !p.running[k] {
				p.load(now, k, p.loadTime(k), out)
			}
		}
	}
	if intervalEnd {
		for k := len(p.reps) - 1; k >= 0 && n > want; k-- {
			if p.active[k] {
				p.active[k] = false
				p.touch(k)
				n--
				p.retire(now, k, out)
			}
		}
	}
	p.account(now)
}

// futurePeak is the oracle's highest true per-second QPS over [now, now + interval].
func (p *Cocktail) futurePeak(now dataplane.Time) float64 {
	lo := int(now / dataplane.Second)
	hi := int((now + dataplane.Time(p.intervalMs*float64(dataplane.Millisecond))) / dataplane.Second)
	var m float64
	for s := max(lo, 0); s <= hi && s < len(p.future); s++ {
		m = math.Max(m, p.future[s])
	}
	return m
}

func (p *Cocktail) load(now dataplane.Time, k int, dur dataplane.Time, out *dataplane.Decisions) {
	p.loading[k] = true
	p.touch(k)
	p.Loads++
	out.Load(p.reps[k], p.model, 0, dur)
	p.account(now)
}

// retire evicts an inactive replica once it is idle and drained (its queue moves to the
// active replicas first).
func (p *Cocktail) retire(now dataplane.Time, k int, out *dataplane.Decisions) {
	if p.active[k] || p.running[k] || p.loading[k] {
		return
	}
	if len(p.queues[k]) > 0 {
		q := p.queues[k]
		p.queues[k] = nil
		p.touch(k)
		for _, id := range q {
			p.requeue(id, out)
		}
	}
	if p.resident[k] {
		p.resident[k] = false
		p.touch(k)
		out.Evict(p.reps[k], p.model)
		p.account(now)
	}
}

// pickScan is pick by a scan of every replica (the reference; the routing while a replica
// is down).
func (p *Cocktail) pickScan() int {
	best, bv := -1, math.Inf(1)
	for k := range p.reps {
		if !p.active[k] || p.isDown(k) {
			continue
		}
		v := float64(len(p.queues[k]))
		if !p.resident[k] {
			v += 1e12 // still loading: only when nothing is resident
		}
		if v < bv {
			best, bv = k, v
		}
	}
	if best < 0 {
		// nothing active (before the first tick, or its replicas failed): the first live
		// replica, which the next scale-up activates first (replica 0 without failures)
		for k := range p.reps {
			if !p.isDown(k) {
				return k
			}
		}
	}
	return best
}

// try starts a batch on replica k when it is resident, idle, its GPUs are free and it has
// work: everything queued up to max_batch.
func (p *Cocktail) try(k int, out *dataplane.Decisions) {
	if !p.resident[k] || p.running[k] || p.loading[k] || len(p.queues[k]) == 0 {
		return
	}
	for _, g := range p.gpus[k] {
		if p.gpuBusy[g] {
			return
		}
	}
	n := min(len(p.queues[k]), p.tab.MaxBatch)
	p.inflight[k] = append(p.inflight[k][:0], p.queues[k][:n]...)
	if n == len(p.queues[k]) {
		p.queues[k] = p.queues[k][:0]
	} else {
		// The rest stays where it is: moving it to the front cost a copy of the whole
		// backlog per batch (quadratic in a backlog, which the lone initial replica of a
		// large fleet builds while the others load); append reallocates once the tail is
		// full and copies only what is queued then.
		p.queues[k] = p.queues[k][n:]
	}
	for _, g := range p.gpus[k] {
		p.gpuBusy[g] = true
	}
	p.running[k] = true
	p.touch(k)
	p.path[0] = dataplane.PathHop{Stage: p.stage, Worker: p.reps[k]}
	out.Dispatch(p.dep.Stages[p.stage].App, p.inflight[k], p.path[:])
}

// OnWorkerFailure implements dataplane.FailureAware. [ours] Cocktail+ (CascadeServe §6.2)
// keeps ceil(QPS/packing) replicas of one model; a failed replica is replaced at once as a
// scale-up would (a live idle replica joins and loads), and its lost batch and queue are
// re-queued (FailReroute) by least-loaded routing on the live replicas: every replica serves
// the same model, so any of them can answer. With no live replica the requests are dropped
// as worker-failed.
func (p *Cocktail) OnWorkerFailure() dataplane.FailureMode { return dataplane.FailReroute }

// isDown reports whether replica k failed and is not back (no view lookup while none is).
func (p *Cocktail) isDown(k int) bool { return p.nDown > 0 && p.v.WorkerDown(p.reps[k]) }

// replicaDown forgets replica k's batch and load in flight (the engine reports neither),
// activates a replacement when k was active, and re-queues k's requests.
func (p *Cocktail) replicaDown(now dataplane.Time, k int, out *dataplane.Decisions) {
	p.nDown++
	p.scratch = p.scratch[:0]
	if p.running[k] {
		p.running[k] = false
		for _, g := range p.gpus[k] {
			p.gpuBusy[g] = false
		}
		p.scratch = append(p.scratch, p.inflight[k]...)
	}
	p.inflight[k] = p.inflight[k][:0]
	p.scratch = append(p.scratch, p.queues[k]...)
	p.queues[k] = p.queues[k][:0]
	wasActive := p.active[k]
	p.active[k], p.resident[k], p.loading[k] = false, false, false
	p.touch(k)
	if wasActive {
		for j := range p.reps {
			if !p.active[j] && !p.isDown(j) {
				p.active[j] = true
				p.touch(j)
				if !p.resident[j] && !p.loading[j] && !p.running[j] {
					p.load(now, j, p.loadTime(j), out)
				}
				break
			}
		}
	}
	p.account(now)
	for _, id := range p.scratch {
		if p.v.Req(id).Outcome == dataplane.Pending {
			p.requeue(id, out)
		}
	}
	p.tryAll(out)
}

// requeue queues request id on the replica least-loaded routing picks, or drops it as
// worker-failed when no replica is live (never when none failed: pick falls back to
// replica 0).
func (p *Cocktail) requeue(id dataplane.ReqID, out *dataplane.Decisions) {
	j := p.pick()
	if j < 0 {
		out.Drop(id, p.stage, dataplane.DropWorkerFailed, 0)
		return
	}
	p.queues[j] = append(p.queues[j], id)
	p.touch(j)
}
