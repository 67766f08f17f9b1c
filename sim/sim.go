// Package sim is the discrete-event driver of the runtime: it feeds the same policies that
// `plan serve` runs from one event heap in virtual time (integer µs, ordered by time and
// creation sequence), generates arrivals (Poisson, Gamma-renewal bursts, MMPP, trace replay
// with the folding scaler, per-interval counts), collects metrics (SLO attainment, goodput,
// drops by stage and reason, utilization, wasted GPU time, latency percentiles) and sweeps
// load factors in parallel with results identical to a sequential run. It also predicts the
// plan `plan solve` writes and `plan check` reads (predict.go: the plan at its rates with
// replications, then a headroom search whose runs stop once certain to fail, settle.go).
package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// Options configures one simulation run.
type Options struct {
	// Duration is the arrival window; the run continues until every request finished.
	Duration dataplane.Time
	// Seed seeds arrivals (per application) and jitter.
	Seed uint64
	// Jitter is the relative half-width of uniform noise on execution and transfer times
	// (0.05 = ±5%); 0 = deterministic.
	Jitter float64
	// Observe, when set, sees every policy decision (tests).
	Observe func(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision)
	// CompactEvery, when > 0, calls Engine.Compact after every that many events (what a
	// long-running driver does; tests use it to check compaction changes nothing).
	CompactEvery int64
	// ExpectedRequests pre-sizes the engine's tables (0 = grow as needed).
	ExpectedRequests int
	// ExpectedAnswers pre-sizes the latency record (0 = ExpectedRequests): a compacting run
	// keeps small engine tables but still records every answered request's latency, and
	// growing that record by doubling costs a large run a tenth of its time in copies.
	ExpectedAnswers int
	// NoLatencies: keep no per-request latency sample (the report's percentiles are then
	// zero), so a compacting run's memory does not grow with the number of requests (the
	// forget benchmark measures the engine's and the policy's memory alone).
	NoLatencies bool
	// OnFinish, when set, sees every request when it finishes.
	OnFinish func(now dataplane.Time, r *dataplane.Request)
	// Attrs, when set, gives the attributes of application a's n-th arrival (token counts of
	// an LLM request, the validation sample a cascade request stands for). It must be a
	// deterministic function of its arguments and the system's own seed.
	Attrs func(a dataplane.AppID, n int64) dataplane.Attrs
	// Prefix, when set, gives the prompt prefix of application a's n-th arrival
	// (Arrival.Prefix), under the same rules as Attrs.
	Prefix func(a dataplane.AppID, n int64) *dataplane.Prefix
	// Failures are worker failures to inject (EvWorkerDown at At, EvWorkerUp at Until).
	Failures []Failure
	// CancelFraction, when > 0, withdraws about that share of the requests (Engine.Cancel):
	// each arrival is picked with that probability and cancelled at a uniform time between
	// its arrival and its deadline, both drawn from a generator of its own seeded by Seed (a
	// run with 0 draws exactly what it drew before). Reports count them as cancelled.
	CancelFraction float64
	// Cancels are explicit withdrawals (request, time), on top of CancelFraction's.
	Cancels []Cancel
	// OnCancel, when set, sees every withdrawal the simulator asked for and whether
	// Engine.Cancel took it (false: the request had finished, or has not arrived).
	OnCancel func(now dataplane.Time, id dataplane.ReqID, withdrawn bool)
	// Warmup, when > 0, excludes the requests arriving before it from the metrics: they are
	// simulated (they fill the queues and the policy's state) but not counted, so start-up
	// transients (empty batches, cold estimators) do not read as steady-state misses.
	// Goodput is then per second of [Warmup, Duration).
	Warmup dataplane.Time
	// LLM, when set, gives each application's LLM class (LLMClassesOf): the driver fills in
	// the token counts Attrs does not give (drawn from the class's profiles) and the report
	// gains TTFT, TPOT and tokens per class, with the classes' TTFT and TPOT SLOs counted in
	// attainment.
	LLM []LLMClass
	// Horizon, when > 0, bounds virtual time: a run still going past it (a policy that never
	// finishes its requests keeps a Ticker's timer alive for ever) returns ErrHorizon.
	Horizon dataplane.Time
	// settle, when set, stops the run once it is certain to fail its judge (settle.go).
	settle *settleWatch
	// Ctx, when set, stops the run once it is cancelled (SIGINT, SIGTERM): Run checks it
	// every CancelCheckEvents events and returns its cause, so a cancelled run ends within
	// that much work whatever its length.
	Ctx context.Context
}

// CancelCheckEvents is how many events Run processes between two checks of Options.Ctx.
const CancelCheckEvents = 1024

// ErrHorizon is returned by Run when virtual time passes Options.Horizon.
var ErrHorizon = errors.New("sim: past the horizon")

// Sim is one simulation: the engine plus the heap and the metric collector. It implements
// dataplane.Effects.
type Sim struct {
	Engine *dataplane.Engine
	dep    *dataplane.Deployment
	// heap is the event queue (a radix heap). Arrivals are Event{Kind: EvArrival} with
	// Stage holding the app.
	heap    evqueue
	sources []Source
	opts    Options
	jit     *dataplane.Jitter
	now     dataplane.Time
	col     *collector
	// pending counts applications whose next arrival is in the heap.
	pending int
	// arrivals counts each application's arrivals (Options.Attrs' n).
	arrivals []int64
	// scratch holds a batch's requests for the deployment's Work model.
	scratch []*dataplane.Request
	// cancel draws the withdrawals of Options.CancelFraction (nil: none).
	cancel *canceller
	// emulates: the deployment emulates some stage's results (Deployment.Emulate, or a
	// Routed stage); when it does not, emulate returns before reading the batch.
	emulates bool
	// touched keeps what emulate's first pass reads from being optimized away (the compiler
	// drops a load nothing uses; that pass is there for its loads).
	touched float64
	// stopped: Options.settle stopped the run, certain to fail.
	stopped bool
}

// New builds a simulation of dep under pol with one arrival source per application (nil =
// no arrivals for that app).
func New(dep *dataplane.Deployment, pol dataplane.Policy, sources []Source, opts Options) (*Sim, error) {
	if len(sources) != len(dep.Apps) {
		return nil, fmt.Errorf("sim: %d arrival sources for %d applications", len(sources), len(dep.Apps))
	}
	if opts.LLM != nil && len(opts.LLM) != len(dep.Apps) {
		return nil, fmt.Errorf("sim: %d LLM classes for %d applications", len(opts.LLM), len(dep.Apps))
	}
	answers := opts.ExpectedAnswers
	if answers <= 0 {
		answers = opts.ExpectedRequests
	}
	s := &Sim{dep: dep, sources: sources, opts: opts, col: newCollector(dep, answers, !opts.NoLatencies, opts.Warmup, opts.LLM), arrivals: make([]int64, len(dep.Apps))}
	s.emulates = dep.Emulate != nil || slices.ContainsFunc(dep.Stages, func(st dataplane.Stage) bool { return st.Routed })
	if opts.Jitter > 0 {
		s.jit = dataplane.NewJitter(opts.Jitter, opts.Seed)
	}
	var err error
	if s.cancel, err = newCanceller(opts.CancelFraction, opts.Seed); err != nil {
		return nil, err
	}
	if err := checkCancels(opts.Cancels); err != nil {
		return nil, err
	}
	eng, err := dataplane.NewEngine(dep, pol, s)
	if err != nil {
		return nil, err
	}
	s.Engine = eng
	if opts.ExpectedRequests > 0 {
		eng.ReserveRequests(opts.ExpectedRequests)
	}
	if opts.Observe != nil {
		eng.Observe(opts.Observe)
	}
	for a, src := range sources {
		if src != nil {
			s.scheduleArrival(dataplane.AppID(a))
		}
	}
	if len(opts.Failures) > 0 && !dataplane.HandlesFailures(pol) {
		return nil, fmt.Errorf("sim: %w: %s", dataplane.ErrNoFailover, pol.Name())
	}
	for i, f := range opts.Failures {
		if int(f.Worker) < 0 || int(f.Worker) >= len(dep.Topo.Workers) || f.At < 0 || (f.Until != 0 && f.Until <= f.At) {
			return nil, fmt.Errorf("sim: failure %d: worker %d down at %d µs until %d µs: want a worker of the deployment and 0 ≤ at < until", i, f.Worker, f.At, f.Until)
		}
		s.push(f.At, dataplane.Event{Kind: dataplane.EvWorkerDown, Worker: f.Worker})
		if f.Until > 0 {
			s.push(f.Until, dataplane.Event{Kind: dataplane.EvWorkerUp, Worker: f.Worker})
		}
	}
	for _, c := range opts.Cancels {
		s.push(c.At, dataplane.Event{Kind: dataplane.EvCancel, Req: c.Req})
	}
	return s, nil
}

func (s *Sim) scheduleArrival(a dataplane.AppID) {
	t := s.sources[a].Next()
	if t == dataplane.Never || t >= s.opts.Duration {
		return
	}
	if t < s.now {
		t = s.now
	}
	s.pending++
	s.push(t, dataplane.Event{Kind: dataplane.EvArrival, Stage: dataplane.StageID(a)})
}

func (s *Sim) push(t dataplane.Time, ev dataplane.Event) {
	s.heap.Push(t, ev)
}

func (s *Sim) jitter(d dataplane.Time) dataplane.Time { return s.jit.Apply(d) }

// RunBatch implements dataplane.Effects.
func (s *Sim) RunBatch(now dataplane.Time, w dataplane.WorkerID, b dataplane.BatchID, hop int, st dataplane.StageID, _ int, nominal dataplane.Time) {
	if s.dep.Work != nil {
		s.scratch = s.scratch[:0]
		for _, id := range s.Engine.Batch(b).Reqs {
			s.scratch = append(s.scratch, s.Engine.Req(id))
		}
		nominal = s.dep.ScaledDuration(st, s.scratch, nominal)
	}
	end := now + s.jitter(nominal)
	s.col.run(w, now, end)
	s.push(end, dataplane.Event{Kind: dataplane.EvBatchDone, Batch: b, Hop: int32(hop), Worker: w, Start: now, End: end})
}

// Transfer implements dataplane.Effects.
func (s *Sim) Transfer(now dataplane.Time, b dataplane.BatchID, hop int, _, _ dataplane.ServerID, _ int64, nominal dataplane.Time) {
	end := now + s.jitter(nominal)
	s.push(end, dataplane.Event{Kind: dataplane.EvTransferDone, Batch: b, Hop: int32(hop), Start: now, End: end})
}

// SetTimer implements dataplane.Effects.
func (s *Sim) SetTimer(at dataplane.Time, key int64) {
	s.push(at, dataplane.Event{Kind: dataplane.EvTimer, Key: key})
}

// Finish implements dataplane.Effects.
func (s *Sim) Finish(now dataplane.Time, r *dataplane.Request) {
	s.col.finish(r)
	if s.opts.settle != nil && r.Arrival >= s.opts.Warmup && s.opts.settle.finished(r.App, &s.col.apps[r.App]) {
		s.stopped = true
	}
	if s.opts.OnFinish != nil {
		s.opts.OnFinish(now, r)
	}
}

// Run processes events until the heap is empty (arrivals stop at Duration and every request
// then drains) and returns the metrics.
func (s *Sim) Run() (*Metrics, error) {
	for n := 0; s.heap.Len() > 0; n++ {
		if ctx := s.opts.Ctx; ctx != nil && n%CancelCheckEvents == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted at %d µs of simulated time: %w", s.now, context.Cause(ctx))
		}
		at, ev := s.heap.Pop()
		s.now = at
		if s.opts.Horizon > 0 && s.now > s.opts.Horizon {
			left := int64(s.Engine.NextRequestID()) - s.Engine.Finished()
			return nil, fmt.Errorf("%w: %d µs with %d requests unfinished", ErrHorizon, s.opts.Horizon, left)
		}
		var err error
		if ev.Kind == dataplane.EvArrival {
			a := dataplane.AppID(ev.Stage)
			s.pending--
			arr := dataplane.Arrival{App: a}
			if s.opts.Attrs != nil {
				arr.Attrs = s.opts.Attrs(a, s.arrivals[a])
			}
			if s.opts.Prefix != nil {
				arr.Prefix = s.opts.Prefix(a, s.arrivals[a])
			}
			if arr.Attrs.Trace == 0 {
				arr.Attrs.Trace = s.arrivals[a] + 1
			}
			if int(a) < len(s.opts.LLM) {
				// The ID Admit gives it: requests are numbered in arrival order.
				fillTokens(&s.opts.LLM[a], s.Engine.NextRequestID(), &arr.Attrs)
			}
			s.arrivals[a]++
			var id dataplane.ReqID
			id, err = s.Engine.Admit(at, arr)
			if err == nil && s.cancel != nil {
				if t, ok := s.cancel.draw(s.Engine.Req(id)); ok {
					s.push(max(t, at), dataplane.Event{Kind: dataplane.EvCancel, Req: id})
				}
			}
			s.scheduleArrival(a)
		} else if ev.Kind == dataplane.EvCancel {
			var ok bool
			ok, err = s.Engine.Cancel(at, ev.Req)
			if s.opts.OnCancel != nil {
				s.opts.OnCancel(at, ev.Req, ok)
			}
		} else {
			if ev.Kind == dataplane.EvBatchDone {
				s.emulate(ev)
			}
			err = s.Engine.Handle(at, ev)
		}
		if err != nil {
			return nil, err
		}
		if s.opts.CompactEvery > 0 && s.Engine.Events()%s.opts.CompactEvery == 0 {
			s.Engine.Compact()
		}
		// Only timers (ticks) can be left once arrivals ended and every request finished.
		if s.stopped || (s.pending == 0 && s.Engine.Finished() == int64(s.Engine.NextRequestID())) {
			break
		}
	}
	if s.opts.settle != nil && !s.stopped {
		if err := s.opts.settle.check(s.col, s.dep); err != nil {
			return nil, err
		}
	}
	m := s.col.metrics(s.Engine, s.now, s.opts.Duration)
	engineStats(s.Engine.Policy(), m)
	return m, nil
}

// emulate reports the emulated results of a finished batch's requests (routed stages and
// systems that model their outputs), drawn in request order from the run's seeded generator.
func (s *Sim) emulate(ev dataplane.Event) {
	// Most deployments emulate nothing (PPipe's, PARD's, QLM's): their batch ends skip the
	// batch lookups below, whose first load, the batch record, misses at scale.
	if !s.emulates || s.Engine.BatchLost(ev.Batch) {
		return
	}
	b := s.Engine.Batch(ev.Batch)
	st := b.Hops[ev.Hop].Stage
	if s.dep.Emulate == nil && !s.dep.Stages[st].Routed {
		return // Deployment.Emulated has no result for st
	}
	// Read every request first, both lines of its record this batch's end uses (the draw's
	// Attrs and batch count, then the result and outcome the engine writes): the loads do not
	// depend on each other, so at scale, where each record is a cache miss, the misses
	// overlap instead of coming one per request, and the loop below finds them in cache.
	var touched float64
	for _, id := range b.Reqs {
		q := s.Engine.Req(id)
		touched += q.WorkGPU + float64(q.Attrs.Trace+int64(q.NumBatches()))
	}
	s.touched = touched
	for _, id := range b.Reqs {
		// The same u as serve's emulated workers for this request and stage: a trace takes
		// the same branches, simulated or served.
		q := s.Engine.Req(id)
		if res, ok := s.dep.Emulated(st, q, dataplane.EmulatedU(q, st)); ok {
			s.Engine.SetResult(id, res)
		} else {
			return
		}
	}
}

// Now returns the time of the last processed event.
func (s *Sim) Now() dataplane.Time { return s.now }
