package serve

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve/internal/waketimer"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

// generation is one engine serving one deployment. A reload creates a new generation. The
// engine's memory follows the requests in flight (Engine.Compact retires finished requests
// and the policies Forget them, DESIGN.md "One policy, two clocks"), so serve never swaps engines to bound
// memory; a fresh engine of the same deployment is attached only when the engine's 32-bit
// request IDs run low (idLimit), or after an engine error. Events carry their generation
// number and stale ones are ignored.
type generation struct {
	n      int
	plan   *formats.Plan
	digest string
	dep    *dataplane.Deployment
	polCfg dataplane.Config
	reg    *dataplane.Registry
	eng    *dataplane.Engine
	exec   *tracker
	apps   map[string]dataplane.AppID
	// calls holds the unanswered calls by engine request ID − callBase; an answered call is
	// cleared at once (its payload freed) and the answered prefix trimmed with the engine's
	// Compact, so memory follows the requests in flight, not the requests served.
	calls    []*call
	callBase dataplane.ReqID
	// doors publish the door's verdict per app to the HTTP handlers (driver writes, handlers
	// read without a lock).
	doors []door
	// outstanding counts accepted calls not answered yet.
	outstanding int
	// queued counts requests per app not yet in any batch (the dispatcher's queue).
	queued []int64
	// pipeReqs are the per-pipeline request counters, [app][pipeline] (metrics.pipelines).
	pipeReqs [][]prometheus.Counter
	specs    []modelSpec
}

// door is the admission state of one app as the handlers see it: requests arriving before
// closedUntil are refused before their body is read, with reason.
type door struct {
	closedUntil atomic.Int64
	reason      atomic.Pointer[string]
}

// call returns the unanswered call of request id, or nil.
func (g *generation) call(id dataplane.ReqID) *call {
	i := int(id - g.callBase)
	if i < 0 || i >= len(g.calls) {
		return nil
	}
	return g.calls[i]
}

func (g *generation) setCall(id dataplane.ReqID, c *call) {
	i := int(id - g.callBase)
	for len(g.calls) <= i {
		g.calls = append(g.calls, nil)
	}
	g.calls[i] = c
}

func (g *generation) clearCall(id dataplane.ReqID) {
	if i := int(id - g.callBase); i >= 0 && i < len(g.calls) {
		g.calls[i] = nil
	}
}

// trimCalls forgets the answered calls at the front.
func (g *generation) trimCalls() {
	k := 0
	for k < len(g.calls) && g.calls[k] == nil {
		k++
	}
	if k == 0 {
		return
	}
	n := copy(g.calls, g.calls[k:])
	clear(g.calls[n:])
	g.calls = g.calls[:n]
	g.callBase += dataplane.ReqID(k)
}

// modelSpec is what the HTTP layer needs to know about a served model.
type modelSpec struct {
	name    string
	in, out kserve.TensorSpec
	sloUs   int64
	rateRPS float64
	series  *modelSeries
}

// reloadReq asks the driver to migrate to a prepared generation.
type reloadReq struct {
	next  *generation
	reply chan error
	began dataplane.Time
}

// driver owns the engine: ONE goroutine receives every event (arrivals, job completions,
// timers, commands), reads the clock once per event and calls the engine; the engine's
// effects come back here (dataplane.Effects) and are performed without blocking.
type driver struct {
	clk     worker.Clock
	log     *slog.Logger
	m       *metrics
	stopped chan struct{}
	// delivery is shared with the handlers, which observe each answer's delivery time.
	delivery deliveryTracker

	// The intake: handlers append their calls to inQ under inMu and poke the driver's
	// waiter (wt); the driver takes the whole queue per wakeup. Under load a wakeup brings
	// several calls, where a channel hand-off cost a select and a goroutine switch per
	// call. The queue is bounded by MaxInFlight (a call holds its in-flight slot while
	// queued); inClosed is set when the driver stops, after which handlers answer 503
	// themselves. Real workers' finished jobs (doneQ) and commands (cmdQ) come the same way.
	inMu     sync.Mutex
	inQ      []*call
	inClosed bool
	doneQ    []*worker.Job
	cmdQ     []func()
	// cancelQ holds the calls whose client left before the answer (Server.Submit's ctx
	// ended, the HTTP connection closed): the driver withdraws them from the engine
	// (Engine.Cancel) on its own goroutine, after the calls queued with them.
	cancelQ []*call
	// wt is what the driver sleeps on: its timers' next deadline and the pokes of the
	// goroutines that queue work for it (waketimer.Waiter).
	wt waketimer.Waiter
	// pendingFn is pending as a func value, made once (Waiter.Sleep's busy).
	pendingFn func() bool
	// The queues' spare arrays, swapped in when the driver takes them.
	inSpare   []*call
	cancelSp  []*call
	doneSpare []*worker.Job
	cmdSpare  []func()

	// Everything below is owned by the loop goroutine.
	now dataplane.Time
	// scratch holds a batch's requests for the deployment's Work model.
	scratch []*dataplane.Request
	gen     *generation
	gens    int
	timers  dataplane.TimeHeap[timerItem]
	seq     uint64
	// timerAt is the waiter's precise deadline, soonAt its coarse one (the busy driver's:
	// see arm); Never when disarmed.
	timerAt dataplane.Time
	soonAt  dataplane.Time
	// intakeAt is when the driver last took calls off the intake, intakeGap a moving
	// average of the time between calls (µs): calls arriving close together keep the driver
	// awake, and it may wake for its timers on a runtime timer (arm).
	intakeAt  dataplane.Time
	intakeGap dataplane.Time
	xjit      float64
	xrng      *rand.Rand
	migrating *reloadReq
	paused    []*call
	maxPaused int
	flushFor  dataplane.Time
	draining  bool
	exit      bool
	// idLimit is how many request IDs an engine may hand out before the driver attaches a
	// fresh one at its next idle moment (ReqID is 32-bit); past idLimit+idLimit/2 with no
	// idle moment, it migrates to the same plan (a pause of at most one flush, once per
	// 2^30 requests: hours at the highest rates serve sustains).
	idLimit  int
	onSwitch func(*generation)
	// events counts loop iterations (the engine is compacted every compactEvery); doorAt is
	// when the doors were last evaluated.
	events int
	doorAt dataplane.Time
}

const (
	compactEvery = 256
	// doorEvery is how often the driver re-evaluates the doors under load (µs).
	doorEvery dataplane.Time = 100
	// A driver whose calls arrive on average busyGap (µs) apart or closer, the last one less
	// than busyQuiet ago, wakes for deadlines within coarseHorizon on the waiter's coarse
	// deadline (a runtime timer) rather than the timerfd (arm).
	busyGap       dataplane.Time = 50
	busyQuiet     dataplane.Time = 200
	coarseHorizon dataplane.Time = 1000
)

// effects implements dataplane.Effects for one generation.
type effects struct {
	d *driver
	g *generation
}

func newDriver(clk worker.Clock, log *slog.Logger, m *metrics, jitter float64, seed uint64) *driver {
	d := &driver{
		clk: clk, log: log, m: m,
		stopped:   make(chan struct{}),
		xjit:      jitter,
		xrng:      rand.New(rand.NewPCG(seed, 0xbb67ae8584caa73b)),
		maxPaused: 1 << 16,
		idLimit:   1 << 30,
		timerAt:   dataplane.Never,
		soonAt:    dataplane.Never,
		intakeGap: coarseHorizon,
	}
	d.wt = waketimer.NewWaiter()
	d.pendingFn = d.pending
	return d
}

// prepare builds a generation for a deployment without its engine; it touches no driver
// state and runs on the caller's goroutine (the preload step of a migration). The policy is
// attached once to a throwaway engine so that a plan the policy rejects fails here, before
// intake pauses; the real engine is built on the driver goroutine at the switch, so that its
// timers (a Ticker's first tick) start with the generation.
func prepare(plan *formats.Plan, dep *dataplane.Deployment, pol dataplane.Config, reg *dataplane.Registry, exec *tracker, specs []modelSpec) (*generation, error) {
	g := &generation{plan: plan, dep: dep, polCfg: pol, reg: reg, exec: exec, apps: map[string]dataplane.AppID{}, specs: specs}
	for i, a := range dep.Apps {
		g.apps[a.Name] = dataplane.AppID(i)
	}
	if plan != nil {
		dg, err := formats.Digest(plan)
		if err != nil {
			return nil, err
		}
		g.digest = dg
	}
	p, err := reg.New(dep, pol, "")
	if err != nil {
		return nil, err
	}
	if _, err := dataplane.NewEngine(dep, p, nopEffects{}); err != nil {
		return nil, err
	}
	return g, nil
}

// nopEffects lets prepare validate a policy against a deployment.
type nopEffects struct{}

func (nopEffects) RunBatch(dataplane.Time, dataplane.WorkerID, dataplane.BatchID, int, dataplane.StageID, int, dataplane.Time) {
}
func (nopEffects) Transfer(dataplane.Time, dataplane.BatchID, int, dataplane.ServerID, dataplane.ServerID, int64, dataplane.Time) {
}
func (nopEffects) SetTimer(dataplane.Time, int64)            {}
func (nopEffects) Finish(dataplane.Time, *dataplane.Request) {}

// attach gives g a fresh engine and policy. The engine's constructor may arm a tick timer,
// which is queued with g's generation number; numbers are assigned here, before use.
func (d *driver) attach(g *generation) error {
	pol, err := g.reg.New(g.dep, g.polCfg, "")
	if err != nil {
		return err
	}
	d.gens++
	g.n = d.gens
	clear(g.calls)
	g.calls = g.calls[:0]
	g.callBase = 0
	g.queued = make([]int64, len(g.dep.Apps))
	if g.doors == nil {
		g.doors = make([]door, len(g.dep.Apps))
	}
	for i := range g.doors {
		g.doors[i].closedUntil.Store(0)
	}
	if g.pipeReqs == nil {
		g.pipeReqs = d.m.pipelines(g.dep)
	}
	fx := &effects{d: d, g: g}
	eng, err := dataplane.NewEngine(g.dep, pol, fx)
	if err != nil {
		return err
	}
	eng.Observe(func(_ dataplane.Time, _ *dataplane.Event, ds []dataplane.Decision) {
		for i := range ds {
			x := &ds[i]
			switch x.Kind {
			case dataplane.DDispatch:
				first := 0
				for _, r := range x.Reqs {
					if eng.Req(r).Dispatch == dataplane.Never {
						g.queued[x.App]--
						first++
					}
				}
				// A request enters its pipeline at its first dispatch (a per-pool
				// policy dispatches each hop anew: not new traffic).
				if first > 0 && len(x.Path) > 0 {
					g.countPipeline(x.App, x.Path[0].Stage, first)
				}
			case dataplane.DDrop:
				if q := eng.Req(x.Req); q.Dispatch == dataplane.Never {
					g.queued[q.App]--
				}
			}
		}
	})
	g.eng = eng
	return nil
}

// run is the event loop.
func (d *driver) run(first *generation) {
	defer close(d.stopped)
	defer d.wt.Close()
	if err := d.switchTo(first); err != nil {
		// prepare validated the same deployment and policy; this cannot happen.
		panic(err)
	}
	for !d.exit {
		// Due timers are handled before the event that woke the driver (at their own times:
		// onTimers), and ride along with every event. The timer's own wakeup comes through
		// the network poller, and a goroutine it readies queues behind every runnable
		// goroutine: with thousands of handlers runnable on a busy machine, hop completions
		// would wait tens of milliseconds while the workers idle — a collapse. A handler's
		// poke readies the driver next on its processor instead, so under load the timers
		// are served within one arrival's gap.
		//
		// The waiter is armed only when the driver is about to sleep: while work is
		// waiting, each event handles the due timers anyway, and every timerfd re-arm is a
		// system call (several µs in a VM, where it reprograms the hardware timer).
		w, ok := d.takeWork()
		if !ok {
			d.arm()
			if d.wt.Sleep(d.pendingFn) {
				d.timerAt = dataplane.Never // a timerfd is disarmed once it fired
			}
			if w, ok = d.takeWork(); !ok {
				// A deadline (or a poke that raced with the last look): the due timers
				// are the event.
				d.onTimers()
				d.afterEvent()
				continue
			}
		}
		d.onWork(w)
	}
	// Calls queued after the last event are answered here; later ones are refused by
	// their handlers. Jobs and commands left are dropped: their senders see d.stopped.
	d.inMu.Lock()
	d.inClosed = true
	left := d.inQ
	d.inQ = nil
	d.inMu.Unlock()
	for _, c := range left {
		c.received = d.now
		d.m.arrived(c.ms)
		d.answerShutdown(c, "intake")
	}
	d.gen.exec.retire()
}

func (d *driver) onDone(j *worker.Job) {
	d.onTimers()
	d.now = max(d.now, d.clk.Now())
	d.onJob(j)
}

func (d *driver) onCmd(f func()) {
	d.onTimers()
	d.now = max(d.now, d.clk.Now())
	f()
}

// handle calls the engine; an error is a policy or driver bug: the generation's requests are
// answered with 500 and a fresh engine takes over, so one bug does not wedge the server.
func (d *driver) handle(ev dataplane.Event) {
	if err := d.gen.eng.Handle(d.now, ev); err != nil {
		d.fail(err)
	}
}

func (d *driver) fail(err error) {
	g := d.gen
	d.log.Error("engine error: answering its requests with 500 and restarting the engine", "err", err)
	for _, c := range g.calls {
		if c != nil && !c.answered {
			d.answer(g, c, result{status: 500, outcome: "error", err: "internal error: " + err.Error()})
		}
	}
	if aerr := d.attach(g); aerr != nil {
		d.log.Error("restarting the engine", "err", aerr)
	}
}

func (d *driver) onCall(c *call) {
	c.received = d.now
	d.m.arrived(c.ms)
	switch {
	case d.draining:
		d.answerShutdown(c, "intake")
		return
	case d.migrating != nil:
		if len(d.paused) >= d.maxPaused {
			d.answerShutdown(c, "migration")
			return
		}
		d.paused = append(d.paused, c)
		return
	}
	d.feed(c)
}

// feed hands a call to the current engine.
func (d *driver) feed(c *call) {
	g := d.gen
	app, ok := g.apps[c.model]
	if !ok {
		// The model was removed by a reload while the call waited.
		c.answered = true
		d.m.finished(c.ms, "error", 0)
		c.reply(result{status: 404, err: fmt.Sprintf("model %q is not served by the active plan", c.model)})
		return
	}
	c.fed = d.now
	d.m.intake(d.now - c.at)
	// The ID the engine will give: the call must be findable if the policy answers it at once.
	id := g.eng.NextRequestID()
	c.req = id
	g.setCall(id, c)
	g.outstanding++
	g.queued[app]++
	// The deadline counts from the true arrival, so the policy decides from the request's
	// real age: time spent reading, decoding and waiting at the intake counts. The engine
	// plans against it less the time an answer takes to reach the client (deliveryTracker).
	slo := g.dep.Apps[app].SLO
	if c.deadline <= 0 {
		c.deadline = c.at + slo
	}
	if _, err := g.eng.Admit(d.now, dataplane.Arrival{App: app, At: c.at, Attrs: c.attrs, Deadline: c.deadline - d.delivery.margin(slo)}); err != nil {
		d.fail(err)
	}
}

func (d *driver) onJob(j *worker.Job) {
	g := d.gen
	if j.Gen != g.n {
		return // a job of an abandoned generation (its requests were answered already)
	}
	b := g.eng.Batch(j.Batch)
	for i, r := range b.Reqs {
		if c := g.call(r); c != nil && i < len(j.Payload) {
			c.payload = j.Payload[i]
		}
	}
	if len(j.Results) == len(b.Reqs) {
		for i, r := range b.Reqs {
			res := j.Results[i]
			if g.dep.Route != nil {
				// The system maps the model's real answer to the request's next step.
				res = g.dep.Route(&g.dep.Stages[j.Stage], g.eng.Req(r), res)
			}
			g.eng.SetResult(r, res)
		}
	} else if _, ok := g.exec.Executor.(*worker.Emulated); ok {
		// Emulated workers report what the system's model of its stages says
		// (Deployment.Emulated: a routed stage's branch, a cascade stage's certainty), drawn
		// with the simulator's u for (request, stage, visit) so runs repeat and agree.
		for _, r := range b.Reqs {
			q := g.eng.Req(r)
			res, ok := g.dep.Emulated(j.Stage, q, dataplane.EmulatedU(q, j.Stage))
			if !ok {
				break
			}
			g.eng.SetResult(r, res)
		}
	}
	w := &g.dep.Topo.Workers[j.Worker]
	d.m.busy(w.Name, g.dep.Stages[j.Stage].Name, j.End-j.Start)
	hop := func(r dataplane.ReqID) HopEvent {
		return HopEvent{Stage: g.dep.Stages[j.Stage].Name, Worker: w.Name, Hop: j.Hop,
			StartUs: int64(j.Start), EndUs: int64(j.End), Result: g.eng.Req(r).Result}
	}
	tr, counts := g.eng.Policy().(TokenReporter)
	if !counts {
		d.m.tritonExec(stageModel(g.dep, j.Stage), len(b.Reqs), int64(j.End-j.Start))
		for _, r := range b.Reqs {
			if c := g.call(r); c != nil && c.onHop != nil && !c.answered {
				c.onHop(hop(r))
			}
		}
		d.handle(dataplane.Event{Kind: dataplane.EvBatchDone, Batch: j.Batch, Hop: int32(j.Hop), Worker: j.Worker, Start: j.Start, End: j.End})
		return
	}
	// An LLM step: the policy applies it first, then each request still streaming learns
	// how many tokens its client has (none for a prefill chunk; the output delay's). The
	// batch's request list is copied: the engine may retire the batch in handle.
	reqs := append([]dataplane.ReqID(nil), b.Reqs...)
	if ir, ok := g.eng.Policy().(IterationReporter); ok {
		if n, ok := ir.IterationTokens(j.Worker); ok && len(reqs) > 0 {
			if c := g.call(reqs[0]); c != nil {
				d.m.llmIteration(c.model, n)
			}
		}
	}
	d.handle(dataplane.Event{Kind: dataplane.EvBatchDone, Batch: j.Batch, Hop: int32(j.Hop), Worker: j.Worker, Start: j.Start, End: j.End})
	if g.eng == nil {
		return
	}
	d.showTokens(g, tr, reqs, j.End, hop)
}

// showTokens tells each of reqs still streaming how many tokens its client has at at (tr's
// count), with the hop event hop builds for it.
func (d *driver) showTokens(g *generation, tr TokenReporter, reqs []dataplane.ReqID, at dataplane.Time, hop func(dataplane.ReqID) HopEvent) {
	for _, r := range reqs {
		c := g.call(r)
		if c == nil || c.answered {
			continue
		}
		n, ok := tr.VisibleTokens(r)
		if !ok {
			continue
		}
		d.tokensSeen(c, n, at)
		if c.onHop == nil {
			continue
		}
		ev := hop(r)
		ev.Tokens, ev.HasTokens = n, true
		c.onHop(ev)
	}
}

// timerTokens reports the tokens a policy timer showed (TimerTokenReporter: an idle LLM
// engine's output-only step) to the requests still streaming, as a hop of no stage.
func (d *driver) timerTokens() {
	g := d.gen
	if g.eng == nil {
		return
	}
	tr, ok := g.eng.Policy().(TimerTokenReporter)
	if !ok {
		return
	}
	if reqs := tr.TimerTokens(); len(reqs) > 0 {
		now := int64(d.now)
		d.showTokens(g, tr, reqs, d.now, func(dataplane.ReqID) HopEvent { return HopEvent{Hop: -1, StartUs: now, EndUs: now} })
	}
}

// oneJob is a job with room for one payload, the common batch of one request: the job and
// its payload list are one allocation.
type oneJob struct {
	worker.Job
	one [1]*worker.Payload
}

// RunBatch implements dataplane.Effects: hand the hop to the executor.
func (fx *effects) RunBatch(now dataplane.Time, w dataplane.WorkerID, b dataplane.BatchID, hop int, stage dataplane.StageID, size int, nominal dataplane.Time) {
	g, d := fx.g, fx.d
	bt := g.eng.Batch(b)
	oj := &oneJob{Job: worker.Job{Worker: w, Batch: b, Hop: hop, Stage: stage, Nominal: nominal, Start: now, Gen: g.n}}
	j := &oj.Job
	if len(bt.Reqs) == 1 {
		j.Payload = oj.one[:]
	} else {
		j.Payload = make([]*worker.Payload, len(bt.Reqs))
	}
	for i, r := range bt.Reqs {
		if c := g.call(r); c != nil {
			j.Payload[i] = c.payload
		}
	}
	ex := g.exec
	if em, ok := ex.Executor.(*worker.Emulated); ok {
		// Emulated hops need no goroutine at all: their end is one more entry in the
		// driver's timer heap. They take what the system's model of data-dependent work
		// says (Deployment.Work, as the simulator does); real workers take what they take.
		if g.dep.Work != nil {
			d.scratch = d.scratch[:0]
			for _, r := range bt.Reqs {
				d.scratch = append(d.scratch, g.eng.Req(r))
			}
			nominal = g.dep.ScaledDuration(stage, d.scratch, nominal)
		}
		d.push(now+em.Duration(nominal), timerItem{kind: tBatch, gen: g.n, job: j})
		return
	}
	ex.start()
	ex.Run(j, func(j *worker.Job) {
		ex.finish()
		d.jobDone(j)
	})
}

// Transfer implements dataplane.Effects: transfers are emulated on every worker kind (the NIC
// model the plan was made for), through the driver's timer heap.
func (fx *effects) Transfer(now dataplane.Time, b dataplane.BatchID, hop int, _, _ dataplane.ServerID, _ int64, nominal dataplane.Time) {
	d := fx.d
	dur := nominal
	if d.xjit > 0 && nominal > 0 {
		dur = max(dataplane.Time(math.Round(float64(nominal)*(1+d.xjit*(2*d.xrng.Float64()-1)))), 0)
	}
	d.push(now+dur, timerItem{kind: tTransfer, gen: fx.g.n, batch: b, hop: int32(hop), start: now})
}

// SetTimer implements dataplane.Effects.
func (fx *effects) SetTimer(at dataplane.Time, key int64) {
	fx.d.push(at, timerItem{kind: tPolicy, gen: fx.g.n, key: key})
}
