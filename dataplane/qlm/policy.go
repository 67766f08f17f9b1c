package qlm

import (
	"fmt"
	"slices"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched"
	"github.com/plan-dev/plan/dataplane/llm/sched/edf"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/dataplane/llm/sched/priority"
	"github.com/plan-dev/plan/formats/llmspec"
)

// Policy names.
const (
	PolicyQLM      = "qlm"
	PolicyFCFS     = "qlm-vllm-fcfs"
	PolicyEDF      = "qlm-edf"
	PolicyRR       = "qlm-rr"
	PolicyRandom   = "qlm-random"
	PolicyNoEvict  = "qlm-no-evict"
	PolicyNoSwap   = "qlm-no-swap"
	PolicyNoWarm   = "qlm-no-warm"
	PolicyNoGuard  = "qlm-no-guard"
	PolicyShepherd = "qlm-shepherd"
)

// options are the switches that make the baselines and ablations of QLM §8.
type options struct {
	name  string
	evict bool // request eviction on a replan-induced head change (QLM §5)
	swap  bool // GPU↔CPU KV swap as a preemption mode (QLM §5)
	warm  bool // warm model start from the CPU cache (QLM §5)
	// guard: request pulling admits a request only when it keeps the running sequences with
	// earlier deadlines on time (admitKeepsDeadlines).
	guard bool
	// placement of new groups: "plan" (least drain + plan generator), "rr", "random".
	placement string
	seed      uint64
	// dropLate (policy parameter drop_late): a request that cannot meet its deadline is
	// dropped with reason deadline instead of served late: at arrival when even an empty
	// instance could not finish it in time (hopeless), and while it waits once its deadline
	// passed (checked every tick). Off by default: the paper's policies serve late requests.
	dropLate bool
	// admit (policy parameter admit: predict, the default, or all): refuse at arrival a
	// request the engine would finish after its SLO (admit.go).
	admit bool
	// headroom (policy parameter admit_headroom, default 0.05): the share of each
	// request's SLO admission keeps free (llm.Arrival.Headroom).
	headroom float64
}

// queue is the queueing layer a policy puts in front of the instances: FCFS or EDF per
// instance (vLLM, EDF baselines) or QLM's request groups and virtual queues.
type queue interface {
	add(p *Policy, now dataplane.Time, s *seq)
	head(p *Policy, in *instance) *seq
	pop(p *Policy, in *instance, s *seq)
	requeue(p *Policy, in *instance, s *seq)
	preemptFor(p *Policy, now dataplane.Time, in *instance, h *seq, need int) bool
	finished(p *Policy, s *seq)
	admitted(p *Policy, in *instance)
	tick(p *Policy, now dataplane.Time)
	// evacuate removes and returns, in queue order, the waiting sequences queued for a
	// failed instance.
	evacuate(p *Policy, in *instance) []*seq
	// withdraw removes waiting sequence s (its request was cancelled, EvCancel) from the
	// queue; a sequence the queue does not hold is left alone.
	withdraw(p *Policy, s *seq)
}

// Policy is one QLM-kind policy: the instance engine plus a queueing layer.
type Policy struct {
	opt    options
	view   dataplane.View
	dep    *dataplane.Deployment
	setup  *Setup
	class  []Class
	models map[modelKey]*lm
	inst   []*instance
	seqs   map[dataplane.ReqID]*seq
	// seqsVer counts the changes to seqs (putSeq, delSeq); ahead is admission's memo of
	// the waiting queues (admit.go).
	seqsVer uint64
	ahead   map[string]*aheadMemo
	// shown are the requests whose visible tokens the last output-only step grew
	// (TimerTokens).
	shown []dataplane.ReqID
	q     queue
	byApp [][]dataplane.ReqID
	stats Stats
	rr    int
	// now is the time of the event being handled (queues that decide in head() read it).
	now dataplane.Time
	// ss are the instances a pass may skip (stepset.go); fullStep forces the full pass of
	// every instance after every event (tests compare the two).
	ss       stepSet
	fullStep bool
	// hold: until this time an idle instance does not start a step (the arrival hold);
	// held are the instances it kept from starting.
	hold dataplane.Time
	held []int
	// observedAny: some instance reported external load (ObserveInstance) at some time.
	observedAny bool
	// dl is byDeadline's scratch (the deadline checks read the running batch in deadline
	// order each step).
	dl deadlineScratch
	// memoOn: inside Handle, residual values are kept per instance until the instance
	// changes (instance.resOK); dm, likewise, each instance's drain for place (drainmemo.go).
	// Off under fullStep and outside Handle.
	memoOn bool
	dm     drainMemo
	// drainFloor: no drain is below zero (drainmemo.go, nonNegDrains), so place stops at
	// the first instance that drains at zero.
	drainFloor bool
	// checkMemo (tests): every kept residual is checked against a fresh one, and every idle
	// skip (stepset.go) against a pull.
	checkMemo bool
	// elig and groupCap cache eligible and capFor per model (reset by setDown).
	elig     map[string][]*instance
	groupCap map[string]int
	// kvMax is the largest KV cache in tokens (whole blocks) per model over the instances
	// with its profile (fits).
	kvMax map[string]int
	// promptMax is the longest prompt some instance with the model's profile can admit
	// (llm.Model.MaxPrompt), per model (fits).
	promptMax map[string]int
	// routes are the plan's size routes per class (route.go).
	routes []appRoutes
	// ctr are the counts of the instances' engines (shared): preemption events are read
	// (Preemptions) from the goroutine that answers requests, so that count is atomic.
	ctr *llm.Counters
	// sch is QLM's queueing layer as the engines' scheduler policy (sched.go).
	sch *llm.Hooks
	// disagg: some instances have roles (disaggpol.go).
	disagg bool
}

// byWorker is the instance on worker w (nil for a worker no instance runs on). Instance i
// runs on worker i (Attach): an index, where a map's hashing missed the cache on every
// event at 128 instances.
func (p *Policy) byWorker(w dataplane.WorkerID) *instance {
	if w >= 0 && int(w) < len(p.inst) {
		return p.inst[w]
	}
	return nil
}

// Preemptions implements serve.Preempter: running sequences preempted so far, by recompute
// or by KV swap (LLM engine digest §2.3), the counter vllm:num_preemptions_total follows.
func (p *Policy) Preemptions() int64 {
	if p.ctr == nil {
		return 0
	}
	return p.ctr.Preemptions.Load()
}

// PrefixCache implements serve.PrefixCacher: the prompt tokens its engines looked up in
// their prefix caches and those found cached (vLLM V1's vllm:prefix_cache_queries and
// vllm:prefix_cache_hits, llm-engine-2 §2); 0, 0 when no profile enables prefix caching.
func (p *Policy) PrefixCache() (queries, hits int64) {
	if p.ctr == nil {
		return 0, 0
	}
	return p.ctr.PrefixQueries.Load(), p.ctr.PrefixHits.Load()
}

// RequestLLM implements llm.RequestReporter: the prompt tokens completed request id found in
// the prefix cache and its preemptions (0, 0 for one that had neither, or not completed).
func (p *Policy) RequestLLM(id dataplane.ReqID) (cached, preemptions int) {
	return p.stats.Cached[id], p.stats.Preempted[id]
}

// EngineStats implements llm.StatsReporter: the policy's name, its engines' preemption
// events and distinct preempted requests, and each profile's engine settings that differ
// from vLLM's defaults (prefixed with model@gpu when the plan has several profiles).
func (p *Policy) EngineStats() llm.RunStats {
	st := llm.RunStats{Policy: p.opt.name}
	if p.disagg {
		// Role instances run FCFS per role, whatever the policy (disaggpol.go).
		st.Policy += fmt.Sprintf(" (prefill/decode instances: fcfs per role, KV link %g GB/s)", p.setup.KVLinkGBps)
	}
	if p.ctr != nil {
		st.Preemptions, st.PreemptedRequests = p.ctr.Preemptions.Load(), p.ctr.PreemptedReqs
		st.PrefixQueries, st.PrefixHits = p.PrefixCache()
		st.OffloadQueries, st.OffloadHits = p.ctr.OffloadQueries.Load(), p.ctr.OffloadHits.Load()
	}
	if p.setup == nil {
		return st
	}
	prof := p.setup.Profiles
	for i := range prof {
		m := p.models[keyOf(&prof[i])]
		if m == nil {
			continue
		}
		for _, kv := range m.NonDefault() {
			if len(prof) > 1 {
				kv = fmt.Sprintf("%s@%s: %s", prof[i].Model, prof[i].GPU, kv)
			}
			st.Settings = append(st.Settings, kv)
		}
	}
	return st
}

// Name implements dataplane.Policy.
func (p *Policy) Name() string { return p.opt.name }

// TickEvery implements dataplane.Ticker: the periodic RCT violation check (QLM §4, §6).
func (p *Policy) TickEvery() dataplane.Time { return dataplane.Second }

// Stats returns the run's counters.
func (p *Policy) Stats() *Stats {
	if p.ctr != nil {
		p.stats.Evictions, p.stats.KVSwaps = p.ctr.Evictions, p.ctr.KVSwaps
	}
	return &p.stats
}

// Attach implements dataplane.Policy.
func (p *Policy) Attach(v dataplane.View) error {
	p.view, p.dep = v, v.Deployment()
	s, cls, err := decodeSetup(p.dep)
	if err != nil {
		return err
	}
	// One copy of each model and GPU name: the hot paths compare model names (llmFor, pull,
	// split) and kinds of instance (pullMemo), and equal strings sharing their bytes compare by
	// pointer.
	names := map[string]string{}
	intern := func(x *string) {
		if y, ok := names[*x]; ok {
			*x = y
		} else {
			names[*x] = *x
		}
	}
	for k := range s.Profiles {
		intern(&s.Profiles[k].Model)
		intern(&s.Profiles[k].GPU)
	}
	for k := range s.Instances {
		intern(&s.Instances[k].Model)
		intern(&s.Instances[k].GPU)
	}
	for k := range cls {
		intern(&cls[k].Model)
	}
	p.setup, p.class = s, cls
	if s.Grouping != "" && s.Grouping != "kmeans" && s.Grouping != "buckets" {
		return fmt.Errorf("qlm: setup.grouping %q: want kmeans or buckets", s.Grouping)
	}
	p.models = map[modelKey]*lm{}
	for i := range s.Profiles {
		pr := &s.Profiles[i]
		p.models[keyOf(pr)] = newLM(pr)
	}
	p.inst = nil
	p.ctr, p.sch = &llm.Counters{}, llm.NewHooks(engineSched{p})
	// The instances are one array, not one allocation each: a 1,000-byte record alone took
	// a 1,024-byte slot, so every instance's k-th cache line fell in the same 4 of the L1's
	// 64 sets. In one array of 17-line records (instance) they spread over all of them.
	recs := make([]instance, len(s.Instances))
	// Instances of one GPU type share one profile list (read on every llmFor): one copy
	// stays in cache instead of one small allocation per instance.
	var lists [][]namedLLM
	for i, in := range s.Instances {
		x := &recs[i]
		*x = instance{Engine: llm.Engine{ID: i, AllowSwap: p.opt.swap, Ctr: p.ctr}, w: dataplane.WorkerID(i), gpu: in.GPU, model: in.Model, cpuBytes: in.CPUModelBytes}
		x.SetScheduler(p.sch)
		for k := range s.Profiles {
			pr := &s.Profiles[k]
			if in.runs(pr) {
				// The entry models holds for the key (a later duplicate profile wins there).
				x.llms = slices.DeleteFunc(x.llms, func(e namedLLM) bool { return e.name == pr.Model })
				x.llms = append(x.llms, namedLLM{pr.Model, p.models[keyOf(pr)]})
			}
		}
		if k := slices.IndexFunc(lists, func(l []namedLLM) bool { return slices.Equal(l, x.llms) }); k >= 0 {
			x.llms = lists[k]
		} else {
			x.llms = slices.Clip(x.llms)
			lists = append(lists, x.llms)
		}
		if x.cpuBytes == 0 {
			for _, m := range p.models {
				if in.runs(m.Prof) {
					x.cpuBytes = max(x.cpuBytes, 2*m.Prof.WeightBytes)
				}
			}
		}
		p.inst = append(p.inst, x)
	}
	if p.disagg, err = p.disaggSetup(); err != nil {
		return err
	}
	p.initStepSet()
	p.drainFloor = p.nonNegDrains()
	if err := p.buildRoutes(); err != nil {
		return err
	}
	for _, c := range cls {
		ok := false
		for _, in := range p.inst {
			ok = ok || p.llmFor(in, c.Model) != nil
		}
		if !ok {
			return fmt.Errorf("qlm: class %s: model %s has no profile on any instance's GPU", c.Name, c.Model)
		}
	}
	p.seqs, p.ahead = map[dataplane.ReqID]*seq{}, nil
	p.byApp = make([][]dataplane.ReqID, len(p.dep.Apps))
	p.stats = Stats{Cached: map[dataplane.ReqID]int{}, Preempted: map[dataplane.ReqID]int{}, Served: map[dataplane.ReqID]string{}, TTFT: map[dataplane.ReqID]dataplane.Time{}, TPOT: map[dataplane.ReqID]dataplane.Time{}, Predicted: map[dataplane.ReqID]dataplane.Time{}, PredictedAt: map[dataplane.ReqID]dataplane.Time{}}
	return nil
}

// Handle implements dataplane.Policy.
func (p *Policy) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	p.now = now
	p.memoOn = !p.fullStep
	defer func() { p.memoOn = false }()
	switch ev.Kind {
	case dataplane.EvArrival:
		r := p.view.Req(ev.Req)
		s := p.newSeq(r)
		if !p.fits(s) {
			// It could never be admitted: waiting, it would hold the head of its queue
			// forever.
			p.stats.TooLarge++
			out.Drop(s.ID, 0, DropTooLarge, 0)
			break
		}
		if why := p.refusal(s); why != "" {
			p.stats.TooLarge++
			out.Drop(s.ID, 0, why, 0)
			break
		}
		if p.opt.dropLate && p.hopeless(now, s) {
			p.stats.Expired++
			out.Drop(s.ID, 0, dataplane.DropDeadline, 0)
			break
		}
		if p.opt.admit && !p.disagg {
			if v, ok := p.admitLate(s); ok && v.Late {
				// The estimate is the predicted wait: the front end's Retry-After
				// (llm.RetryAfter).
				p.stats.Late++
				out.Drop(s.ID, 0, DropWouldBeLate, v.Wait)
				break
			}
		}
		if p.opt.admit && !p.disagg {
			p.aheadAdmitted(s)
		} else {
			p.putSeq(s)
		}
		p.disaggArrive(s)
		p.enqueue(now, s, out)
		// Every arrival of this instant is queued before an idle instance starts its step
		// (LLM engine digest §1): the step starts at the hold timer, 1 µs later.
		if p.hold <= now {
			p.hold = now + 1
			out.SetTimer(p.hold, holdKey)
		}
	case dataplane.EvCancel:
		p.cancel(ev.Req)
	case dataplane.EvWorkerDown:
		if in := p.byWorker(ev.Worker); in != nil {
			p.instanceDown(now, in, out)
			p.touch(in.ID)
		}
	case dataplane.EvWorkerUp:
		if in := p.byWorker(ev.Worker); in != nil {
			// Back empty: the next step loads its head group's model cold.
			p.setDown(in, false)
			p.touch(in.ID)
		}
	case dataplane.EvBatchDone:
		in := p.byWorker(ev.Worker)
		if in == nil || !in.Busy() {
			return
		}
		in.outstanding--
		if in.outstanding > 0 {
			return
		}
		in.observePace(now)
		p.iterationDone(ev.End, in, out)
		p.touch(in.ID)
		p.startTransfers(now, out)
		p.stepAll(now, out)
		p.outputStep(now, in, out)
		return
	case dataplane.EvModelLoaded:
		in := p.byWorker(ev.Worker)
		if in != nil && in.loading {
			in.loading = false
			in.model = in.target
			p.touch(in.ID)
		}
	case dataplane.EvTick:
		if p.opt.dropLate {
			p.dropExpired(now, out)
		}
		p.q.tick(p, now)
		p.touchAll()
	case dataplane.EvTimer:
		if i, ok := transferIdx(ev.Key); ok && i < len(p.inst) {
			p.landed(now, p.inst[i], out)
			p.touch(i)
			break
		}
		if i, ok := outputStepIdx(ev.Key); ok && i < len(p.inst) {
			p.outputStepDone(now, p.inst[i], out)
			break
		}
		if ev.Key != holdKey {
			p.touchAll() // no claim about which instance it concerns
			break
		}
		// The arrival hold ended: the instances it held back step now; what they would
		// pull changed (the idle memo is forgotten). A held instance still quiet is not
		// touched: its held step changed nothing, and the pass steps it as a quiet one
		// (stepset.go), skipping it when its kind already found nothing to pull at this
		// change, as its step would (at 128 instances every arrival held every quiet
		// instance, and each then stepped in full: O(N) per arrival).
		for _, i := range p.held {
			if !p.isQuiet(i) {
				p.touch(i)
			}
		}
		p.held = p.held[:0]
		p.changed()
	default:
		// Anything else: no claim about which instance it concerns.
		p.touchAll()
	}
	p.startTransfers(now, out)
	p.stepAll(now, out)
}

// newSeq reads a request's token counts from its attributes, or draws them from its class's
// profile (normal, truncated to [1, max]; QLM §6, Eq. 3) seeded by the request ID, so sim and
// serve's emulated instances agree.
func (p *Policy) newSeq(r *dataplane.Request) *seq {
	c := &p.class[r.App]
	s := &seq{ID: r.ID, App: r.App, Model: c.Model, Prompt: int(r.Attrs.InTokens), Out: int(r.Attrs.OutTokens),
		Deadline: r.Deadline, Arrival: r.Arrival, Inst: -1, Prio: r.Attrs.Priority, Prefix: p.view.Prefix(r.ID)}
	if s.Prompt <= 0 {
		s.Prompt = llm.DrawTokens(c.In, uint64(r.ID), llm.SaltPrompt)
	}
	if s.Out <= 0 {
		s.Out = llm.DrawTokens(c.Out, uint64(r.ID), llm.SaltOutput)
	}
	if s.Prefix == nil && c.PrefixTokens > 0 {
		// The class's shared prompt prefix (a system prompt), named by the class.
		s.Prefix = &dataplane.Prefix{Group: "class/" + c.Name, GroupTokens: int32(c.PrefixTokens)}
	}
	p.seqRoute(s)
	return s
}

// eligible lists the live instances with a profile for model. The lists are kept per model
// until an instance goes down or comes back (setDown): every arrival asks.
// Callers must not modify the list. fullStep recomputes them (the equivalence test's reference).
func (p *Policy) eligible(model string) []*instance {
	if el, ok := p.elig[model]; ok && !p.fullStep {
		return el
	}
	var out []*instance
	for _, in := range p.inst {
		if !in.down && p.llmFor(in, model) != nil {
			out = append(out, in)
		}
	}
	if p.elig == nil {
		p.elig = map[string][]*instance{}
	}
	p.elig[model] = out
	return out
}

// setDown marks the instance failed or back, and forgets the eligible lists and group caps.
func (p *Policy) setDown(in *instance, down bool) {
	in.down = down
	clear(p.elig)
	p.dm.ids = p.dm.ids[:0]
	clear(p.groupCap)
}

// capFor is the group size cap of model: δ·avg_batch at its largest over the live instances
// that can serve it (QLM §4, Def. 4.1), at least 1; cached like eligible.
func (p *Policy) capFor(model string) int {
	if c, ok := p.groupCap[model]; ok && !p.fullStep {
		return c
	}
	c := 1
	for _, in := range p.eligible(model) {
		c = max(c, int(p.delta()*p.llmFor(in, model).avgBatch))
	}
	if p.groupCap == nil {
		p.groupCap = map[string]int{}
	}
	p.groupCap[model] = c
	return c
}

// --- per-instance FCFS / EDF queues: the baselines QLM is compared with, one queue per
// instance served in arrival or deadline order (QLM §8) ---

// plainQueue is one engine waiting queue per instance from the LLM engine's scheduler
// registry (vLLM's fcfs or priority, as the instance's engine settings say, or EDF);
// requests are round-robined over the instances able to host their model.
type plainQueue struct {
	edf  bool
	wait []llm.Queue
	// hooks are wait's queues with their optional hooks resolved once (init): preemptFor
	// and waitingFor ask at every step.
	hooks []*llm.Hooks
}

// policyName is the registry policy of in's queue: edf for the EDF baseline, else the
// engine's scheduling_policy (priority when a profile of the instance sets it).
func (q *plainQueue) policyName(in *instance) string {
	if q.edf {
		return edf.Name
	}
	for _, e := range in.llms {
		if e.m.Priority {
			return priority.Name
		}
	}
	return fcfs.Name
}

// init makes one waiting queue per instance.
func (q *plainQueue) init(p *Policy) {
	q.wait = make([]llm.Queue, len(p.inst))
	q.hooks = make([]*llm.Hooks, len(p.inst))
	reg := sched.Default()
	for i, in := range p.inst {
		w, err := reg.New(q.policyName(in))
		if err != nil {
			panic(err) // in-tree names
		}
		q.wait[i], q.hooks[i] = w, llm.NewHooks(w)
	}
}

func (q *plainQueue) add(p *Policy, _ dataplane.Time, s *seq) {
	if q.wait == nil {
		q.init(p)
	}
	if role := p.roleOf(s); role != "" {
		// Disaggregated: least outstanding tokens among the instances of its role
		// (disaggpol.go); GPU routes size aggregated instances only.
		if in := p.leastLoaded(p.eligible(s.Model), role, q); in != nil {
			q.pushTo(p, in, s)
			return
		}
	}
	el := p.routed(s.Model, ext(s).gpu)
	q.pushTo(p, el[p.rr%len(el)], s)
	p.rr++
}

// pushTo queues s at instance in.
func (q *plainQueue) pushTo(p *Policy, in *instance, s *seq) {
	if q.wait == nil {
		q.init(p)
	}
	s.Inst = in.ID
	q.wait[in.ID].Push(s)
	p.touch(in.ID)
}

func (q *plainQueue) head(_ *Policy, in *instance) *seq {
	if q.wait == nil {
		return nil
	}
	return q.wait[in.ID].Head(&in.Engine)
}

// pop: an admitted decode sequence's transfer reservation becomes its blocks.
func (q *plainQueue) pop(p *Policy, in *instance, s *seq) {
	q.wait[in.ID].Admit(&in.Engine, s)
	p.unreserve(in, s)
}

// requeue: vLLM puts a preempted sequence back at the front of its waiting queue (under the
// priority policy, and EDF, in its order).
func (q *plainQueue) requeue(p *Policy, in *instance, s *seq) {
	p.touch(in.ID)
	q.wait[in.ID].Requeue(&in.Engine, s)
}

// preemptFor: a queue that preempts for its head (EDF, QLM §8 [ours]: evict the
// latest-deadline running sequence, recompute).
func (q *plainQueue) preemptFor(p *Policy, now dataplane.Time, in *instance, h *seq, _ int) bool {
	pf := q.hooks[in.ID].Preempt
	if pf == nil {
		return false
	}
	m := p.llmFor(in, in.model)
	if m == nil || !pf.PreemptFor(now, &in.Engine, m.Model, h) {
		return false
	}
	p.touch(in.ID)
	return true
}

func (q *plainQueue) waitingFor(_ *Policy, in *instance, limit int) int {
	if q.wait == nil {
		return 0
	}
	if c := q.hooks[in.ID].Waiting; c != nil {
		return c.Waiting(&in.Engine, in.model, limit)
	}
	return 0
}

func (q *plainQueue) evacuate(p *Policy, in *instance) []*seq {
	if q.wait == nil {
		return nil
	}
	return q.wait[in.ID].Drain()
}

func (q *plainQueue) empty(in *instance) bool {
	return q.wait == nil || q.wait[in.ID].Len() == 0
}

// findsNothing: quiet instances are never stepped (othersWaiting is false).
func (q *plainQueue) findsNothing(*Policy, *instance) bool { return false }

// othersWaiting: an instance serves only its own FCFS/EDF queue (no pulling, QLM §8 baselines).
func (q *plainQueue) othersWaiting(*Policy) bool { return false }

func (q *plainQueue) withdraw(p *Policy, s *seq) {
	if q.wait == nil || s.Inst < 0 {
		return
	}
	if q.wait[s.Inst].Remove(s) {
		p.touch(s.Inst)
	}
}

func (q *plainQueue) finished(*Policy, *seq)       {}
func (q *plainQueue) admitted(*Policy, *instance)  {}
func (q *plainQueue) tick(*Policy, dataplane.Time) {}

// OnWorkerFailure implements dataplane.FailureAware: every QLM-kind policy re-queues a failed
// instance's sequences on live instances (the baselines too, so the comparison under a
// failure is of scheduling, not of who drops).
func (p *Policy) OnWorkerFailure() dataplane.FailureMode { return dataplane.FailReroute }

// enqueue queues sequence s, or drops it when no live instance can serve its model.
func (p *Policy) enqueue(now dataplane.Time, s *seq, out *dataplane.Decisions) {
	if len(p.eligible(s.Model)) == 0 {
		p.delSeq(s.ID)
		out.Drop(s.ID, 0, dataplane.DropWorkerFailed, 0)
		return
	}
	p.q.add(p, now, s)
}

// instanceDown handles a failed instance: its KV cache, swapped sequences and loaded model
// are gone. Running and swapped sequences keep the tokens they generated and go back to the
// queue to recompute, like an eviction (QLM §5); its waiting sequences move to live
// instances; QLM then re-plans (QLM §7 re-plans on a predicted violation or an instance
// failure).
func (p *Policy) instanceDown(now dataplane.Time, in *instance, out *dataplane.Decisions) {
	p.stats.Failovers++
	p.releaseOutputs(now, in, out, true)
	orphans := in.Reset()
	p.setDown(in, true)
	in.resOK = false
	p.forgetDrain(in.ID)
	in.outstanding, in.loading, in.drain = 0, false, false
	in.model, in.target, in.warm = "", "", nil
	in.satTok, in.satTime, in.satDecodes, in.allTime, in.allDecodes = 0, 0, 0, 0, 0
	in.floor, in.observed = 0, 0
	if in.role == llmspec.RoleDecode {
		p.evacuateTransfers(in, out)
	}
	moved := append(orphans, p.q.evacuate(p, in)...)
	for _, s := range moved {
		p.stats.Rerouted++
		p.enqueue(now, s, out)
	}
	if qq, ok := p.q.(*qlmQueue); ok && len(moved) > 0 {
		qq.replan(p, now)
	}
}
