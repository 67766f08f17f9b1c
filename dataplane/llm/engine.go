package llm

import (
	"math"
	"sync/atomic"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm/prefixcache"
	"github.com/plan-dev/plan/formats"
)

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
// use and the iteration in flight. The owner keeps it, sets its scheduler (SetScheduler),
// calls Step when the instance is idle and Done when the iteration it started ends.
//
// Its state is the engine's alone: owners and schedulers read it through the accessors
// (Running, Swapped, KVUsed, CPUUsed, Busy, Iter, IterPrefill, Outputs) and change it only
// through the methods that keep these invariants (Step, Done, Preempt, Abort, Reset, Place,
// the output steps), which Check verifies:
//
//   - KV in whole blocks: KVUsed is the GPU KV held, in tokens of whole blocks; without a
//     prefix cache it is the sum of the running sequences' Seq.KV, with one the pool's blocks
//     in use (a block shared by several sequences counts once). It never exceeds the cache.
//   - One list per sequence: a sequence is in Running (admission order, Seq.Swapped false) or
//     in Swapped (swap-out order, Seq.Swapped true, its Seq.KV in CPU memory), never both
//     nor twice; CPUUsed is the swapped sequences' KV in bytes, each priced when it was
//     swapped out, and a running sequence holds none.
//   - The iteration: Busy while an iteration is in flight; Iter its sequences (empty when
//     not Busy), IterPrefill whether it computes prompt or recomputed tokens; no
//     output-only step is in flight while Busy (a real step takes over, outputstep.go).
//   - Version: every call that changes the batch, its sequences or the queue's bumps it, so a
//     Door's checkpoint (door.go) holds exactly while it stands still.
//
// The slices the accessors return are the engine's own, read-only by contract: valid until
// the next call that changes the engine.
type Engine struct {
	// ID names the engine to its owner and schedulers (Seq.Inst). It, AllowSwap and Ctr
	// are the owner's settings, set before the first Step; no invariant ties them.
	ID int

	// running and swapped are the sequences on the GPU and those swapped out; kvUsed and
	// cpuUsed the KV they hold (the invariants above).
	running, swapped []*Seq
	kvUsed           int
	cpuUsed          int64
	// busy and iterPrefill share a word: the record stays three cache lines, which
	// dataplane/qlm's instance records rely on (its TestInstanceLayout).
	busy, iterPrefill bool
	iter              []*Seq
	// outq are the tokens computed but not yet at their clients (the output delay, digest
	// §2.5): first tokens and completions, stamped at the end of a later step.
	outq []Output
	// outEnd is the end of the output-only step in flight (outputstep.go; 0: none); outSteps
	// counts those ended since the last real step (Visible).
	outEnd   dataplane.Time
	outSteps int

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
	// Preempt, Abort, Reset, Place): a Door's checkpoint holds while it stands still.
	ver uint64
	// sch is the scheduler with its optional hooks resolved (SetScheduler).
	sch *Hooks
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
func (e *Engine) Step(now dataplane.Time, m *Model, admit bool) (it Iteration, ok bool, wake dataplane.Time) {
	e.ver++
	e.pool(m)
	e.swapIn(now, m)
	for _, s := range e.running {
		s.Sched, s.spec = 0, false
	}
	e.slot = e.prefillSlot(now, m)
	preempted := e.scheduleRunning(now, m)
	if !preempted && admit && len(e.swapped) == 0 {
		e.admitWaiting(now, m)
		if a := e.sch.AdmitEnd; a != nil {
			a.AdmitEnd(e)
		}
	}
	iter := e.iter[:0]
	wake = dataplane.Never
	for _, s := range e.running {
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
	e.iter = iter
	if len(iter) == 0 {
		return it, false, wake
	}
	it.Dur = m.StepUs(it.Tokens, it.Prefill, it.Ctx) + e.draftUs(m)
	e.iterPrefill = it.Prefill > 0
	c := e.counters()
	c.Iterations++
	if e.iterPrefill {
		c.Prefills++
	}
	e.busy = true
	e.outEnd, e.outSteps = 0, 0 // a real step takes over from output-only ones (OutputStep)
	return it, true, dataplane.Never
}

// swapIn brings swapped-out sequences back first (QLM §5 request pulling), while KV and the
// sequence cap allow; each is ready once its KV crossed the host link.
func (e *Engine) swapIn(now dataplane.Time, m *Model) {
	g := e.sch.Gate
	for len(e.swapped) > 0 && len(e.running) < m.MaxSeqs {
		s := e.swapped[0]
		need := m.Blocks(s.Ctx() + 1)
		if e.kvUsed+need > m.KVCap || (g != nil && !g.MaySwapIn(now, e, m, s)) {
			break
		}
		e.swapped = e.swapped[1:]
		e.cpuUsed -= s.swapBytes
		s.KV, s.swapBytes = 0, 0 // its swapped KV is back: it holds GPU blocks again
		e.grow(s, need, s.Comp)
		s.Swapped = false
		s.ReadyAt = now + dataplane.Time(math.Ceil(float64(int64(s.Ctx())*m.KVBytes)/m.HostBytesPerUs))
		e.running = append(e.running, s)
	}
}

// prefillSlot is the most prompt tokens one sequence computes in this step. With
// max_num_partial_prefills N > 1, vLLM splits the token budget evenly among the prefills it
// can schedule: the running sequences still mid-prompt plus the waiting ones, k of them at
// most N, each chunk at most max_num_batched_tokens / k (vLLM's scheduler,
// partial_prefill_budget_lookup_list; digest §2). N = 1: the whole budget. [ours] vLLM's
// long_prefill_token_threshold is not modelled.
func (e *Engine) prefillSlot(now dataplane.Time, m *Model) int {
	if m.MaxPartial <= 1 || !m.Chunked {
		return m.MaxBatched
	}
	k := 0
	for _, s := range e.running {
		if s.Need() > 1 && s.ReadyAt <= now {
			k++
		}
	}
	if c := e.sch.Waiting; c != nil && k < m.MaxPartial {
		k += c.Waiting(e, m.Name, m.MaxPartial-k)
	}
	return m.MaxBatched / max(1, min(k, m.MaxPartial))
}

// budgetLeft is the token budget the running sequences leave in this step.
func (e *Engine) budgetLeft(m *Model) int {
	b := m.MaxBatched
	for _, s := range e.running {
		b -= s.Sched
	}
	return b
}

// victim is the running sequence preempted when blocks run out.
func (e *Engine) victim() *Seq {
	if vp := e.sch.Victim; vp != nil {
		if v := vp.Victim(e); v != nil {
			return v
		}
	}
	// vLLM preempts the most recently admitted running request (digest §2.3).
	return e.running[len(e.running)-1]
}

// scheduleRunning is rule 2 of the step: the running sequences in admission order, each
// with KV blocks for its computed tokens plus those it computes now (under admission
// allocation it holds its prompt's already); it reports whether it preempted one (then no
// waiting sequence is admitted in this step, as vLLM).
func (e *Engine) scheduleRunning(now dataplane.Time, m *Model) bool {
	budget := m.MaxBatched
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
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
		for e.kvUsed-s.KV+want > m.KVCap {
			v := e.victim()
			j := e.index(v)
			budget += v.Sched // a victim scheduled earlier in this step gives its tokens back
			e.preempt(v, m, e.sch.Scheduler, e.sch.Finish, e.AllowSwap)
			preempted = true
			if v == s {
				break
			}
			if j < i {
				i--
			}
		}
		if i >= len(e.running) || e.running[i] != s {
			break
		}
		e.grow(s, want, s.Comp+n)
		s.Sched = n
		budget -= n
	}
	return preempted
}

func (e *Engine) index(s *Seq) int {
	for i, x := range e.running {
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
	free := m.KVCap - e.kvUsed
	wm := 0
	if m.Alloc == formats.KVAllocAdmission || len(e.running) > 0 {
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
func (e *Engine) admitWaiting(now dataplane.Time, m *Model) {
	partial := 0
	for _, s := range e.running {
		if s.Comp+s.Sched < s.Prompt+s.Gen {
			partial++
		}
	}
	sch, pf, g := e.sch.Scheduler, e.sch.Preempt, e.sch.Gate
	for len(e.running) < m.MaxSeqs {
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
			if pf == nil || !pf.PreemptFor(now, e, m, h) {
				return
			}
			continue
		}
		if g != nil {
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
		e.running = append(e.running, h)
	}
}
