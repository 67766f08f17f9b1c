package qlm

import (
	"cmp"
	"math"
	"slices"
	"unsafe"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
)

// seq is one request as an LLM sequence (QLM §2.1): the engine's (llm.Seq), with QLM's own
// data in its Tag (seqExt).
type seq = llm.Seq

// seqExt is what QLM keeps per sequence beside the engine's state: its request group and
// the GPU type the plan's routes send it to ("" = any; route.go).
type seqExt struct {
	group *group
	gpu   string
	// Disaggregated serving (disaggpol.go): out is the request's output tokens while its
	// prefill instance runs it as a one-token request (0: not split); decode marks the
	// decode side's sequence; need and reserved are the decode KV its transfer reserved.
	out      int
	decode   bool
	need     int
	reserved bool
}

// ext is s's QLM data (made on first use).
func ext(s *seq) *seqExt {
	x, _ := s.Tag.(*seqExt)
	if x == nil {
		x = &seqExt{}
		s.Tag = x
	}
	return x
}

// slo is the request's end-to-end latency SLO (QLM §2.3, Def. 2.2).
func slo(s *seq) dataplane.Time { return s.Deadline - s.Arrival }

// instance is one LLM engine on one worker: its loaded model, running batch, swapped-out
// sequences and the iteration in flight.
type instance struct {
	// Engine is the instance's LLM engine (running and swapped sequences, KV, the iteration
	// in flight); its ID is the instance's index.
	llm.Engine
	// The fields up to gpu are the ones an event on the instance, its step, its residual
	// and the placement and pull passes over the instances read: they follow the engine's
	// in three cache lines (at 128 instances they were spread over five, the 528-byte
	// admission door in between). An iteration's end and the next one's dispatch read all
	// three and no other (the worker was a fourth).
	model string
	// w is the instance's worker (Attach: instance i runs on worker i).
	w       dataplane.WorkerID
	loading bool
	// down: the instance's worker failed (EvWorkerDown) and is not back.
	down bool
	// drain: a model switch waits for the running batch to finish (ours).
	drain   bool
	iterSat bool
	resOK   bool
	// outstanding counts the iteration's batches (one per application) not yet done.
	outstanding int
	// res is qlmQueue.residual's value while resOK: every change to what it reads (the
	// running and swapped sequences, their tokens, the model, Θ, the observed load) goes
	// through an event on the instance (touch), its own step or instanceDown, which clear it.
	res float64
	// observed is what the instance's engine last reported it holds (waiting + running,
	// QLM's own requests included); 0 without an observation (ObserveInstance: remote
	// engines only). Each observation replaces the last, so no timestamp is kept.
	observed float64
	// floor is the batch size below which the deadline guard admits and protectDeadlines
	// does not evict: the decode knee while waiting groups are behind, else 0 (re-checked
	// every tick, so it does not flip between an admission and the next step's eviction).
	floor int
	// llms are the profiles of the instance's GPU by model name (Attach): llmFor scans these
	// few entries instead of hashing a two-string key into Policy.models, which took ~40% of
	// a 128-instance simulation.
	llms []namedLLM
	// Throughput profiled over time (QLM §2.4 Insight #1: "throughput can be estimated by
	// profiling the workload over time"): exponentially decayed sums over the iterations
	// that ran while requests waited (the saturated regime where waiting time matters) of
	// tokens generated, busy seconds and decode iterations, for the loaded model.
	satTok, satTime, satDecodes float64
	// Busy seconds and decode iterations over every iteration (same decay): a running
	// sequence's time per output token at the current load.
	allTime, allDecodes float64
	iterStart           dataplane.Time
	// iterEnd is when the iteration in flight ends (admission reads it, admit.go).
	iterEnd dataplane.Time
	// paceReal and paceNominal are decayed sums of the steps' observed and profiled times
	// (observePace): a wall-clock server whose steps end late runs slower than its profile.
	paceReal, paceNominal float64
	gpu                   string
	// warm lists the models kept in CPU memory (warm start), least recently used first.
	warm     []string
	target   string
	cpuBytes int64
	// role is the instance's part in a disaggregated deployment ("", prefill, decode);
	// on a decode instance, pending are the prefilled sequences waiting for their KV
	// transfer (FIFO), landing the one whose transfer is in flight (one at a time over its
	// link), resv the KV blocks (tokens) reserved by transfers not yet admitted.
	role    string
	pending []*seq
	landing *seq
	resv    int
	// door keeps admission's replay of this engine between arrivals (llm.Door): 528 bytes
	// only admission reads.
	door llm.Door
	// dl is the running batch's deadline order, kept between steps (byDeadline).
	dl deadlineOrder
	// The records are one array (Attach): an odd number of 64-byte lines each (17) keeps
	// every record's lines at the same offsets and spreads the k-th line of consecutive
	// records over all of the L1's 64 sets (at 1,024 bytes they shared 4).
	_ [24]byte
}

// namedLLM is one entry of instance.llms.
type namedLLM struct {
	name string
	m    *lm
}

// upcoming is the model the instance runs next: the one loading, else the loaded one. Plans
// and estimates made during a load count the swap as paid; counting it against the model
// being replaced made every re-plan during a load put the other model's groups first, and
// two instances could then swap models back and forth without running anything.
func (in *instance) upcoming() string {
	if in.loading {
		return in.target
	}
	return in.model
}

// satDecay is the per-iteration decay of the throughput sums (a window of ~200 iterations).
const satDecay = 0.995

// theta is Θ for model on in: the profiled-over-time throughput once 50 saturated decode
// iterations were seen, else the profile's (QLM §6).
func (p *Policy) theta(in *instance, model string) float64 {
	if in.model == model && in.satDecodes >= 50 && in.satTime > 0 {
		return in.satTok / in.satTime
	}
	return p.llmFor(in, model).thetaTokPerSec
}

// tokenSeconds is ε·d of Eq. 4 for model on in: a running sequence's time per output token,
// measured as recent busy time per decode iteration (prefill iterations interleaved
// included) once 50 were seen, else the profile's decode step times its inefficiency factor.
func (p *Policy) tokenSeconds(in *instance, model string) float64 {
	if in.model == model && in.allDecodes >= 50 {
		return in.allTime / in.allDecodes
	}
	m := p.llmFor(in, model)
	return m.epsilon * m.decodeStepSecond
}

// Stats are per-run counters a policy reports (bench and tests).
type Stats struct {
	Iterations, Prefills, ModelSwaps, WarmLoads, ColdLoads int64
	Evictions, KVSwaps, Replans, PlanFallbacks             int64
	// Pulls counts groups an instance with an empty virtual queue took from another one.
	Pulls int64
	// Failovers counts instance failures handled; Rerouted the sequences they re-queued on
	// live instances (running ones lose their KV and recompute, QLM §5's eviction).
	Failovers, Rerouted int64
	// Cancelled counts sequences withdrawn by EvCancel (or found cancelled at their
	// iteration's end); TooLarge the requests dropped at arrival as DropTooLarge; Expired
	// those dropped for their deadline (drop_late); Late those refused at arrival because
	// they would finish after their SLO (DropWouldBeLate, admit.go).
	Cancelled, TooLarge, Expired, Late int64
	// SolveNs is the wall time spent in the plan generator (not part of the deterministic
	// state: policies never read it).
	SolveNs int64
	// TTFT and TPOT per finished request, in µs (TPOT = (done − first token)/(out − 1)).
	TTFT, TPOT map[dataplane.ReqID]dataplane.Time
	// Served is the GPU type of the instance that completed each request (size routing).
	Served map[dataplane.ReqID]string
	// Cached and Preempted are a completed request's prompt tokens found in the prefix cache
	// and its preemptions (only requests that had some).
	Cached, Preempted map[dataplane.ReqID]int
	// Predicted holds the RCT estimate of completion (absolute µs) made when the request's
	// group was last planned, for the R² of QLM §8.
	Predicted map[dataplane.ReqID]dataplane.Time
	// PredictedAt is when that estimate was made.
	PredictedAt map[dataplane.ReqID]dataplane.Time
}

// model returns the instance's timing for model name (nil when it has no profile there).
func (p *Policy) llmFor(in *instance, name string) *lm {
	// The names are interned (Attach) and unique in llms: the entry whose name shares the
	// bytes of name is the one a comparison finds, without a call to compare bytes per
	// entry (llmFor runs several times per event).
	for i := range in.llms {
		if e := &in.llms[i]; sameBytes(e.name, name) {
			return e.m
		}
	}
	for i := range in.llms {
		if in.llms[i].name == name {
			return in.llms[i].m
		}
	}
	return nil
}

// sameBytes: a and b are one string (the same bytes, not only equal ones).
func sameBytes(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// dispatchIteration sends the iteration as one batch per application on the instance's
// worker: the first carries the forward time, the rest take none (they end together).
func (p *Policy) dispatchIteration(in *instance, dur dataplane.Time, out *dataplane.Decisions) {
	in.outstanding = 0
	first := true
	for a := range p.byApp {
		p.byApp[a] = p.byApp[a][:0]
	}
	var order []dataplane.AppID
	for _, s := range in.Iter() {
		if len(p.byApp[s.App]) == 0 {
			order = append(order, s.App)
		}
		p.byApp[s.App] = append(p.byApp[s.App], s.ID)
	}
	for _, a := range order {
		d := dataplane.Time(0)
		if first {
			d = max(dur, 1)
			first = false
		}
		out.Dispatch(a, p.byApp[a], []dataplane.PathHop{{Stage: 0, Worker: in.w, Dur: d}})
		in.outstanding++
	}
}

// dropCancelled aborts the sequences of the iteration just ended whose requests were
// withdrawn while it ran (Request.CancelRequested) but are still here: an engine that
// finishes them itself sends EvCancel before EvBatchDone (cancel took them out already);
// otherwise they are dropped as cancelled now, their KV freed, and never run again.
func (p *Policy) dropCancelled(in *instance, out *dataplane.Decisions) {
	var gone []*seq
	for _, s := range in.Iter() {
		if r := p.view.Req(s.ID); r.CancelRequested || r.Outcome != dataplane.Pending {
			gone = append(gone, s)
		}
	}
	for _, s := range gone {
		pending := p.view.Req(s.ID).Outcome == dataplane.Pending
		p.cancel(s.ID)
		if pending {
			out.Drop(s.ID, 0, dataplane.DropCancelled, 0)
		}
	}
}

// preempt takes victim v out of the running batch (llm.Engine.Preempt): a KV swap to CPU
// memory when the policy's options allow and it pays (QLM §2.4 Insight #2, §5), else
// eviction (recompute: generated tokens are kept and one prefill over prompt + generated
// replaces them); an evicted sequence goes back to QLM's queue.
func (p *Policy) preempt(in *instance, v *seq, m *lm) {
	in.Preempt(v, m.Model, p.sch, p.opt.swap)
}

// switchModel evicts the loaded model and loads name: warm (CPU→GPU) when it is in the
// instance's CPU cache, else cold (disk→CPU→GPU) (QLM §5 model swap + warm start).
func (p *Policy) switchModel(now dataplane.Time, in *instance, name string, out *dataplane.Decisions) {
	m := p.llmFor(in, name)
	if m == nil {
		return
	}
	if in.model != "" && p.view.Resident(in.w, in.model) {
		out.Evict(in.w, in.model)
	}
	dur := m.coldUs
	warm := false
	if p.opt.warm {
		for i, w := range in.warm {
			if w == name {
				warm = true
				in.warm = append(in.warm[:i], in.warm[i+1:]...)
				break
			}
		}
	}
	if warm {
		dur = m.warmUs
		p.stats.WarmLoads++
	} else {
		p.stats.ColdLoads++
	}
	if p.opt.warm && in.model != "" {
		// The outgoing model stays in CPU memory (LRU within the cache budget).
		in.warm = append(in.warm, in.model)
		for p.cacheBytes(in) > in.cpuBytes && len(in.warm) > 0 {
			in.warm = in.warm[1:]
		}
	}
	p.stats.ModelSwaps++
	// The new model's throughput is profiled anew.
	in.satTok, in.satTime, in.satDecodes, in.allTime, in.allDecodes = 0, 0, 0, 0, 0
	in.loading, in.target = true, name
	out.Load(in.w, name, max(m.Prof.WeightBytes, 1), max(dur, 1))
}

func (p *Policy) cacheBytes(in *instance) int64 {
	var b int64
	for _, w := range in.warm {
		if m := p.llmFor(in, w); m != nil {
			b += m.Prof.WeightBytes
		}
	}
	return b
}

// admitKeepsDeadlines is QLM's deadline check on request pulling: admitting h into the
// running batch costs every running sequence h's prefill iteration plus, per remaining output
// token, the longer decode step of a batch one larger (Eq. 4: D = O·ε·d, d grows with the
// batch and its context). It refuses h when a running sequence with an earlier deadline that
// can still make it (rescuable) would then be late at its expected remaining output. Both
// this check and protectDeadlines judge the same expectation, so an admission is undone only
// when a running sequence outlives the output expected of it (new information), not by the
// next step's arithmetic. Without it an instance pulls every waiting request while KV lasts
// (paper §5 pulls on spare capacity), so under overload 256 sequences share each step and
// prefills interleave: W_B quick measured ~185 ms per output token, which misses a 20 s SLO
// past ~110 tokens whatever the queue order, while batch requests with minutes of slack lose
// nothing by waiting. (Judging the running sequences at the Δ-quantile of their output
// instead was measured too: it held back interactive requests behind each other, W_B quick
// interactive 79.0% against 90.2%.)
func (p *Policy) admitKeepsDeadlines(now dataplane.Time, in *instance, m *lm, h *seq) bool {
	if len(in.Running()) == 0 {
		return true
	}
	// Throughput floor (in.floor, set by the periodic check while the waiting looser-SLO
	// groups are behind, qlmQueue.behind):
	// below the decode knee admission costs the running sequences little per token, and
	// refusing it lowers throughput that the waiting requests need.
	if len(in.Running()) < in.floor {
		return true
	}
	// Only a running sequence with a tighter SLO than h's can refuse h (below).
	if lo, _ := sloRange(in.Running()); lo >= slo(h) {
		return true
	}
	run := p.byDeadline(in)
	ctx := 0
	for _, s := range run {
		ctx += s.Ctx()
	}
	b := len(run)
	pre := float64(m.PrefillUs(h.Ctx())) / 1e6
	t := float64(now) / 1e6
	sub := 0
	for i, s := range run {
		sub += s.Ctx()
		if s.Deadline >= h.Deadline {
			break
		}
		// Strict priorities (QLM App. A.3): a less urgent sequence never holds a more urgent one back.
		// Only a tighter SLO is protected: head-of-line blocking is a loose request holding
		// back a tight one (QLM §1); between requests of one SLO the deadline order already
		// is the arrival order, and refusing only lowers throughput.
		if s.Prio > h.Prio || slo(s) >= slo(h) || !p.rescuable(t, m, run, i, sub) {
			continue
		}
		r := p.residualTokens(s)
		if t+pre+r*stepSeconds(m, b+1, ctx+h.Ctx(), r) > float64(s.Deadline)/1e6 {
			return false
		}
	}
	return true
}

// byDeadline is in's running batch in deadline order (ties by request ID, then by place in
// the batch, as a stable sort of it would leave them), in the policy's scratch: valid until
// its next call. Both deadline checks read it on every step, so the order is kept between
// calls (instance.dl) and brought up to date rather than sorted again: the engine's running
// batch changes by sequences leaving from anywhere and joining at its end, so the ones still
// there keep their order, and only those that joined are sorted and merged in. A batch
// reordered otherwise still comes out right: its tail after the first change is taken as
// new. (A sort per step was 11% of a three-class QLM solve's CPU.)
func (p *Policy) byDeadline(in *instance) []*seq {
	running, o, sc := in.Running(), &in.dl, &p.dl
	// at[i] is where prev[i] is now (-1: it left); running[:j] are the ones that stayed.
	at, j := sc.at[:0], 0
	for _, s := range o.prev {
		if j < len(running) && running[j] == s {
			at = append(at, int32(j))
			j++
		} else {
			at = append(at, -1)
		}
	}
	fresh := sc.fresh[:0]
	for k := j; k < len(running); k++ {
		fresh = append(fresh, int32(k))
	}
	before := func(a, b int32) int { return cmpDeadline(running, a, b) }
	if len(fresh) > 1 {
		slices.SortFunc(fresh, before)
	}
	order, f := sc.order[:0], 0
	for _, i := range o.order {
		k := at[i]
		if k < 0 {
			continue
		}
		for f < len(fresh) && before(fresh[f], k) < 0 {
			order = append(order, fresh[f])
			f++
		}
		order = append(order, k)
	}
	order = append(order, fresh[f:]...)
	run := sc.out[:0]
	for _, k := range order {
		run = append(run, running[k])
	}
	o.prev = append(o.prev[:0], running...)
	// The instance keeps this call's order; its previous one becomes the scratch.
	o.order, sc.order = order, o.order
	sc.at, sc.fresh, sc.out = at, fresh, run
	return run
}

// cmpDeadline orders running[a] and running[b] by deadline, then request ID, then place.
func cmpDeadline(running []*seq, a, b int32) int {
	x, y := running[a], running[b]
	if c := cmp.Compare(x.Deadline, y.Deadline); c != 0 {
		return c
	}
	if c := cmp.Compare(x.ID, y.ID); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// deadlineOrder is an instance's running batch as byDeadline last saw it (prev, in the
// engine's order) and its deadline order (indexes into prev).
type deadlineOrder struct {
	prev  []*seq
	order []int32
}

// deadlineScratch is byDeadline's scratch, shared by the instances.
type deadlineScratch struct {
	at, fresh, order []int32
	out              []*seq
}

// sloRange is the least and the greatest SLO (deadline less arrival) in the running batch.
// Both deadline checks act only for a sequence whose SLO is tighter than another's, so where
// every sequence has one SLO (one class) they decide without sorting.
func sloRange(running []*seq) (lo, hi dataplane.Time) {
	for i, s := range running {
		v := slo(s)
		if i == 0 || v < lo {
			lo = v
		}
		if i == 0 || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// rescuable: run[i] (deadline order, sub = context of run[:i+1]) is on time at its expected
// remaining output in a batch of only the sequences with deadlines no later than its own.
// Both the pulling check and eviction protect exactly these; hopeless ones hold nothing back.
func (p *Policy) rescuable(t float64, m *lm, run []*seq, i, sub int) bool {
	n := i + 1
	for n < len(run) && run[n].Deadline == run[i].Deadline {
		sub += run[n].Ctx()
		n++
	}
	r := p.residualTokens(run[i])
	return t+r*stepSeconds(m, n, sub, r) <= float64(run[i].Deadline)/1e6
}

// stepSeconds is the mean decode step over the next r tokens of a batch of b sequences
// holding ctx tokens: every step adds b tokens of context (the step grows with KV [ours]).
func stepSeconds(m *lm, b, ctx int, r float64) float64 {
	return float64(m.DecodeUs(b, ctx+int(float64(b)*r/2))) / 1e6
}

// residualTokens is a running sequence's expected remaining output: the mean residual of its
// class's output length, Normal(μ, σ) (Eq. 3), given the gen tokens it has produced,
// E[O − k | O > k] = μ − k + σ·φ(a)/(1 − Φ(a)), a = (k − μ)/σ.
func (p *Policy) residualTokens(s *seq) float64 {
	c := &p.class[s.App]
	mu, sd, k := c.Out.Mean, c.Out.Std, float64(s.Gen)
	if sd <= 0 {
		return math.Max(mu-k, 1)
	}
	a := (k - mu) / sd
	tail := 0.5 * math.Erfc(a/math.Sqrt2)
	if tail < tailFloor {
		return 1
	}
	phi := math.Exp(-a*a/2) / math.Sqrt(2*math.Pi)
	return math.Max(mu-k+sd*phi/tail, 1)
}

// protectDeadlines is request eviction (QLM §5) for the decode-speed kind of HOL blocking:
// a running sequence that its expected remaining output (Eq. 4 at the current step time)
// makes late, but that would be on time in a batch of only the sequences with deadlines no
// later than its own, gets those with later deadlines evicted (latest deadline first, then
// least generated tokens: least lost work, QLM §5) until it is on time again. The KV-space
// eviction of preemptFor cannot see this case: the batch fits in memory, it is just too
// large for the tight deadline's time per token.
func (p *Policy) protectDeadlines(now dataplane.Time, in *instance, m *lm) {
	t := float64(now) / 1e6
	// Not below the decode knee: there the step is flat in the batch size, so an eviction
	// speeds the late sequence up by little and throws away the victim's work (QLM §5).
	for len(in.Running()) > max(in.floor, 1) {
		// Only a sequence with a tighter SLO than the loosest running is protected (below).
		if lo, hi := sloRange(in.Running()); lo >= hi {
			return
		}
		run := p.byDeadline(in)
		ctx := 0
		for _, s := range run {
			ctx += s.Ctx()
		}
		var at *seq
		sub := 0
		loose := dataplane.Time(0)
		for _, s := range run {
			loose = max(loose, slo(s))
		}
		for i, s := range run {
			sub += s.Ctx()
			if s.Deadline == run[len(run)-1].Deadline {
				break // nothing with a later deadline to evict for it
			}
			if slo(s) >= loose {
				continue // no looser request to evict for it
			}
			r := p.residualTokens(s)
			if t+r*stepSeconds(m, len(run), ctx, r) > float64(s.Deadline)/1e6 && p.rescuable(t, m, run, i, sub) {
				at = s
				break
			}
		}
		if at == nil {
			return
		}
		// The victim: latest deadline, then least generated tokens (least lost work, QLM §5).
		var v *seq
		for _, s := range run {
			if s.Deadline <= at.Deadline || s.Prio < at.Prio || slo(s) <= slo(at) {
				continue
			}
			if v == nil || s.Deadline > v.Deadline || (s.Deadline == v.Deadline && (s.Gen < v.Gen || (s.Gen == v.Gen && s.ID > v.ID))) {
				v = s
			}
		}
		if v == nil {
			return
		}
		p.preempt(in, v, m)
	}
}
