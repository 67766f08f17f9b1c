package llm

import (
	"math"
	"sync/atomic"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm/prefixcache"
	"github.com/plan-dev/plan/formats"
)

// Scheduler is the waiting-queue policy of an engine: which waiting request is admitted next
// (vLLM's scheduling_policy; QLM's virtual queues). The engine calls it only from Step and
// Preempt, on the goroutine that drives the engine.
type Scheduler interface {
	// Head is the waiting request the engine admits next (nil: none). The engine stops
	// admitting at the first head it cannot admit (head-of-line, digest §2.2).
	Head(e *Engine) *Seq
	// Admit takes s, the head, out of the waiting queue: it joined e's running batch.
	Admit(e *Engine, s *Seq)
	// Requeue puts s back among the waiting: e preempted it (recompute).
	Requeue(e *Engine, s *Seq)
}

// VictimPicker is a Scheduler that chooses the running sequence preempted when KV blocks
// run out (nil: the engine's default, the most recently admitted; vLLM V1 under priority
// takes the lowest priority, latest arrival, llm-engine-2 §1).
type VictimPicker interface {
	Victim(e *Engine) *Seq
}

// Preemptor is a Scheduler that may free KV for a head that does not fit by preempting a
// running sequence itself (e.Preempt); it reports whether it did, and the engine tries the
// head again.
type Preemptor interface {
	PreemptFor(now dataplane.Time, e *Engine, m *Model, h *Seq) bool
}

// Gate is a Scheduler that vets admissions: Pick returns the waiting request to admit given
// head h whose KV fits (h, another waiting one, or nil to stop admitting), MaySwapIn whether
// swapped-out s may come back now (QLM's deadline guard, QLM §5).
type Gate interface {
	Pick(now dataplane.Time, e *Engine, m *Model, h *Seq) *Seq
	MaySwapIn(now dataplane.Time, e *Engine, m *Model, s *Seq) bool
}

// WaitingCounter is a Scheduler that counts, up to limit, the waiting requests of model e
// could admit next: the prefills that share a step's budget (max_num_partial_prefills).
type WaitingCounter interface {
	Waiting(e *Engine, model string, limit int) int
}

// AdmitEnder is told when a step's admission is over.
type AdmitEnder interface {
	AdmitEnd(e *Engine)
}

// Finisher is told when a finished sequence leaves the running batch (its blocks freed).
type Finisher interface {
	Finished(e *Engine, s *Seq)
}

// Counters are an engine's (or a set of engines') event counts. Preemptions counts events
// (recompute and swap), as vLLM's vllm:num_preemptions_total (llm-engine-2 §1, Counter);
// PreemptedReqs the distinct requests preempted at least once.
type Counters struct {
	Iterations, Prefills int64
	Evictions, KVSwaps   int64
	PreemptedReqs        int64
	Preemptions          atomic.Int64
	// PrefixQueries and PrefixHits are the prefix cache's lookups at admission and the
	// tokens found cached, in tokens, as vLLM V1's vllm:prefix_cache_queries and
	// vllm:prefix_cache_hits (llm-engine-2 §2; read by serve's /metrics, hence atomic).
	PrefixQueries, PrefixHits atomic.Int64
	// OffloadQueries and OffloadHits are the tokens the GPU's prefix cache missed that
	// were looked up in the CPU offload tier, and those found there and loaded back (vLLM's
	// vllm:external_prefix_cache_queries and _hits for a KV connector).
	OffloadQueries, OffloadHits atomic.Int64
}

// Engine is one continuous-batching LLM instance: its running and swapped sequences, its KV
// use and the iteration in flight. The owner keeps it, and calls Step when the instance is
// idle and Done when the iteration it started ends.
type Engine struct {
	// ID names the engine to its owner and schedulers (Seq.Inst).
	ID int
	// Running are the admitted sequences in admission order; Swapped those whose KV is in
	// CPU memory, in swap-out order.
	Running, Swapped []*Seq
	// KVUsed is the KV cache held, in tokens of whole blocks; CPUUsed the swapped bytes.
	KVUsed  int
	CPUUsed int64
	// Busy: an iteration is in flight; Iter its sequences; IterPrefill: it computes prompt
	// (or recomputed) tokens.
	Busy        bool
	Iter        []*Seq
	IterPrefill bool
	// Outq are the tokens computed but not yet at their clients (the output delay, digest
	// §2.5): first tokens and completions, stamped at the end of a later step.
	Outq []Output
	// OutEnd is the end of the output-only step in flight (outputstep.go; 0: none); OutSteps
	// counts those ended since the last real step (Visible).
	OutEnd   dataplane.Time
	OutSteps int
	// AllowSwap: the policy lets preemption swap KV to CPU memory (QLM §5; swap_space or
	// preemption_mode swap force it whatever this says).
	AllowSwap bool
	// Ctr receives the counts (shared by a policy's engines; nil: a private one).
	Ctr *Counters
	// apc is the KV block pool when the model caches prefixes (apc.go; nil: none).
	apc *prefixcache.Pool
	// slot is the most prompt tokens one sequence takes in the step being formed.
	slot int
	// ver counts the calls that change the batch, its sequences or the queue's (Step, Done,
	// Preempt, Abort, Reset): a Door's checkpoint holds while it stands still.
	ver uint64
}

// Iteration is a step Step formed: the tokens it computes, how many of them are prompt (or
// recomputed) tokens, the context its caches will hold, and its time.
type Iteration struct {
	Tokens, Prefill, Ctx int
	Dur                  dataplane.Time
}

func (e *Engine) counters() *Counters {
	if e.Ctr == nil {
		e.Ctr = &Counters{}
	}
	return e.Ctr
}

// Step forms the engine's next iteration of model m (LLM engine digest §2):
//
//  1. swapped-out sequences come back first while KV and the sequence cap allow;
//  2. running sequences in admission order: a decode takes 1 token, an unfinished prompt a
//     chunk of min(P − c, budget left); a sequence whose KV blocks cannot grow preempts the
//     Victim (default: the most recently admitted), itself last;
//  3. then, when nothing was preempted, nothing is swapped out and admit holds, waiting
//     sequences in the Scheduler's order while budget, a sequence slot and KV blocks
//     remain, stopping at the first that cannot be admitted (head-of-line).
//
// It reports the iteration and true when one starts (Busy is then set), else, in wake, when
// a sequence swapping in becomes ready (dataplane.Never: nothing to wait for).
func (e *Engine) Step(now dataplane.Time, m *Model, sch Scheduler, admit bool) (it Iteration, ok bool, wake dataplane.Time) {
	e.ver++
	e.pool(m)
	e.swapIn(now, m, sch)
	for _, s := range e.Running {
		s.Sched, s.spec = 0, false
	}
	e.slot = e.prefillSlot(now, m, sch)
	preempted := e.scheduleRunning(now, m, sch)
	if !preempted && admit && len(e.Swapped) == 0 {
		e.admitWaiting(now, m, sch)
		if a, ok := sch.(AdmitEnder); ok {
			a.AdmitEnd(e)
		}
	}
	iter := e.Iter[:0]
	wake = dataplane.Never
	for _, s := range e.Running {
		if s.Sched == 0 {
			if s.ReadyAt > now {
				wake = min(wake, s.ReadyAt)
			}
			continue
		}
		iter = append(iter, s)
		it.Tokens += s.Sched
		if s.Prefilling() {
			it.Prefill += s.Sched
		}
		it.Ctx += s.Comp + s.Sched
	}
	e.Iter = iter
	if len(iter) == 0 {
		return it, false, wake
	}
	it.Dur = m.StepUs(it.Tokens, it.Prefill, it.Ctx) + e.draftUs(m)
	e.IterPrefill = it.Prefill > 0
	c := e.counters()
	c.Iterations++
	if e.IterPrefill {
		c.Prefills++
	}
	e.Busy = true
	e.OutEnd, e.OutSteps = 0, 0 // a real step takes over from output-only ones (OutputStep)
	return it, true, dataplane.Never
}

// swapIn brings swapped-out sequences back first (QLM §5 request pulling), while KV and the
// sequence cap allow; each is ready once its KV crossed the host link.
func (e *Engine) swapIn(now dataplane.Time, m *Model, sch Scheduler) {
	g, gated := sch.(Gate)
	for len(e.Swapped) > 0 && len(e.Running) < m.MaxSeqs {
		s := e.Swapped[0]
		need := m.Blocks(s.Ctx() + 1)
		if e.KVUsed+need > m.KVCap || (gated && !g.MaySwapIn(now, e, m, s)) {
			break
		}
		e.Swapped = e.Swapped[1:]
		e.CPUUsed -= int64(s.KV) * m.KVBytes
		s.KV = 0 // its swapped KV is back: it holds GPU blocks again
		e.grow(s, need, s.Comp)
		s.Swapped = false
		s.ReadyAt = now + dataplane.Time(math.Ceil(float64(int64(s.Ctx())*m.KVBytes)/m.HostBytesPerUs))
		e.Running = append(e.Running, s)
	}
}

// prefillSlot is the most prompt tokens one sequence computes in this step. With
// max_num_partial_prefills N > 1, vLLM splits the token budget evenly among the prefills it
// can schedule: the running sequences still mid-prompt plus the waiting ones, k of them at
// most N, each chunk at most max_num_batched_tokens / k (vLLM's scheduler,
// partial_prefill_budget_lookup_list; digest §2). N = 1: the whole budget. [ours] vLLM's
// long_prefill_token_threshold is not modelled.
func (e *Engine) prefillSlot(now dataplane.Time, m *Model, sch Scheduler) int {
	if m.MaxPartial <= 1 || !m.Chunked {
		return m.MaxBatched
	}
	k := 0
	for _, s := range e.Running {
		if s.Need() > 1 && s.ReadyAt <= now {
			k++
		}
	}
	if c, ok := sch.(WaitingCounter); ok && k < m.MaxPartial {
		k += c.Waiting(e, m.Name, m.MaxPartial-k)
	}
	return m.MaxBatched / max(1, min(k, m.MaxPartial))
}

// budgetLeft is the token budget the running sequences leave in this step.
func (e *Engine) budgetLeft(m *Model) int {
	b := m.MaxBatched
	for _, s := range e.Running {
		b -= s.Sched
	}
	return b
}

// victim is the running sequence preempted when blocks run out.
func (e *Engine) victim(sch Scheduler) *Seq {
	if vp, ok := sch.(VictimPicker); ok {
		if v := vp.Victim(e); v != nil {
			return v
		}
	}
	// vLLM preempts the most recently admitted running request (digest §2.3).
	return e.Running[len(e.Running)-1]
}

// scheduleRunning is rule 2 of the step: the running sequences in admission order, each
// with KV blocks for its computed tokens plus those it computes now (under admission
// allocation it holds its prompt's already); it reports whether it preempted one (then no
// waiting sequence is admitted in this step, as vLLM).
func (e *Engine) scheduleRunning(now dataplane.Time, m *Model, sch Scheduler) bool {
	budget := m.MaxBatched
	preempted := false
	for i := 0; i < len(e.Running) && budget > 0; i++ {
		s := e.Running[i]
		if s.ReadyAt > now {
			continue
		}
		n := min(s.Need(), budget)
		if s.Need() > 1 {
			n = min(n, e.slot)
		}
		if n < s.Need() && !m.Chunked {
			continue
		}
		if m.Spec != nil && n == 1 && !s.Fin && !s.Prefilling() && budget > m.Spec.DraftTokens {
			// A speculative decode verifies k drafted tokens plus its own: k + 1 tokens of
			// the budget and KV slots for all of them (spec.go).
			n, s.spec = m.Spec.DraftTokens+1, true
		}
		want := m.Blocks(s.Comp + n)
		if m.Alloc == formats.KVAllocAdmission {
			want = max(want, s.KV)
		}
		for e.KVUsed-s.KV+want > m.KVCap {
			v := e.victim(sch)
			j := e.index(v)
			budget += v.Sched // a victim scheduled earlier in this step gives its tokens back
			e.Preempt(v, m, sch, e.AllowSwap)
			preempted = true
			if v == s {
				break
			}
			if j < i {
				i--
			}
		}
		if i >= len(e.Running) || e.Running[i] != s {
			break
		}
		e.grow(s, want, s.Comp+n)
		s.Sched = n
		budget -= n
	}
	return preempted
}

func (e *Engine) index(s *Seq) int {
	for i, x := range e.Running {
		if x == s {
			return i
		}
	}
	return -1
}

// admitBlocks is the KV a waiting h takes when admitted to compute n tokens now, and whether
// the engine's allocation rule lets it in (llm-engine-2 §1):
//   - chunk (V1): blocks for its computed tokens plus this chunk;
//   - chunk_full_prompt_check (V1 with scheduler_reserve_full_isl): the same, admitted only
//     when the whole prompt (plus generated tokens after a recompute) would fit;
//   - admission (V0): blocks for all its tokens, taken now; later chunks take none.
//
// Under admission the free blocks left must stay ≥ the watermark; under the chunk rules a
// watermark (V1's, default 0) applies only while some request runs. With prefix caching,
// hit tokens of h are cached (computed) and what the blocks cost is kvCost: hit blocks
// other requests hold are free of charge (llm-engine-2 §1: "the whole prompt (minus prefix
// hits) to fit"). Tokens loaded back from the CPU offload tier (load) count as computed but
// take new blocks.
func (e *Engine) admitBlocks(m *Model, h *Seq, n, hit, load int) (int, bool) {
	free := m.KVCap - e.KVUsed
	wm := 0
	if m.Alloc == formats.KVAllocAdmission || len(e.Running) > 0 {
		wm = m.WatermarkTokens()
	}
	comp := h.Comp + hit + load
	switch m.Alloc {
	case formats.KVAllocAdmission:
		want := m.Blocks(h.Prompt + h.Gen)
		return want, free-e.kvCost(h, want, hit) >= wm
	case formats.KVAllocChunkFullPrompt:
		want := m.Blocks(comp + n)
		return want, free-e.kvCost(h, want, hit) >= wm && free-e.kvCost(h, m.Blocks(h.Prompt+h.Gen), hit) >= 0
	default:
		want := m.Blocks(comp + n)
		return want, free-e.kvCost(h, want, hit) >= wm
	}
}

// admitWaiting is rule 3 of the step: waiting sequences in the scheduler's order while the
// budgets and KV allow.
func (e *Engine) admitWaiting(now dataplane.Time, m *Model, sch Scheduler) {
	partial := 0
	for _, s := range e.Running {
		if s.Comp+s.Sched < s.Prompt+s.Gen {
			partial++
		}
	}
	pf, preemptive := sch.(Preemptor)
	g, gated := sch.(Gate)
	for len(e.Running) < m.MaxSeqs {
		budget := e.budgetLeft(m)
		if budget <= 0 {
			return
		}
		h := sch.Head(e)
		if h == nil || h.Model != m.Name {
			return
		}
		hit := e.probe(h)
		load := e.loadable(h, hit)
		n := min(h.Need()-hit-load, budget, e.slot)
		if n < h.Need()-hit-load && (!m.Chunked || partial >= m.MaxPartial) {
			return
		}
		want, fits := e.admitBlocks(m, h, n, hit, load)
		if !fits {
			if !preemptive || !pf.PreemptFor(now, e, m, h) {
				return
			}
			continue
		}
		if gated {
			x := g.Pick(now, e, m, h)
			if x == nil {
				return
			}
			if x != h {
				h = x
				hit = e.probe(h)
				load = e.loadable(h, hit)
				n = min(h.Need()-hit-load, budget, e.slot)
				if n < h.Need()-hit-load && (!m.Chunked || partial >= m.MaxPartial) {
					return
				}
				if want, fits = e.admitBlocks(m, h, n, hit, load); !fits {
					return
				}
			}
		}
		sch.Admit(e, h)
		if load > 0 {
			// Its offloaded blocks cross the host link first (loaded asynchronously, as a
			// swap-in): it computes nothing until they are back (ReadyAt).
			n = 0
		}
		e.take(now, m, h, want, hit, load, n)
		h.Inst = e.ID
		h.Started = true
		h.Admitted = now
		h.Sched, h.spec = n, false
		if n < h.Need() {
			partial++
		}
		e.Running = append(e.Running, h)
	}
}
