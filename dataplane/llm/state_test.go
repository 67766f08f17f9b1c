package llm_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/edf"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/dataplane/llm/sched/priority"
	"github.com/plan-dev/plan/formats"
)

// TestEngineInvariants drives engines through random interleavings of every call that
// changes them from outside (arrivals, Step, Done, Preempt with and without a swap, Abort of
// running, swapped and waiting requests, Reset, output-only steps) over a KV cache of ten
// blocks, so preemptions and swaps are frequent, and checks the invariants documented on
// Engine after each one: KVUsed is the blocks the running requests hold (the pool's blocks
// in use with a prefix cache), CPUUsed the swapped ones' bytes, no request in two lists, and
// every call bumps the version. Drained, the engine holds nothing.
func TestEngineInvariants(t *testing.T) {
	one := 1
	hybrid := &formats.LLMKVGroups{Full: 1, Sliding: 2, SlidingWindow: 24, LayersPerGroup: 1}
	for _, tc := range []struct {
		name   string
		engine formats.LLMEngine
		groups *formats.LLMKVGroups
	}{
		{"chunk, recompute", formats.LLMEngine{KVAllocation: formats.KVAllocChunk, PreemptionMode: formats.PreemptionRecompute, EnablePrefixCaching: new(false)}, nil},
		{"admission, next-step release, output delay", formats.LLMEngine{KVAllocation: formats.KVAllocAdmission, Release: formats.ReleaseNextStep, OutputDelaySteps: &one, EnablePrefixCaching: new(false)}, nil},
		{"swap", formats.LLMEngine{SwapSpace: 1, EnablePrefixCaching: new(false)}, nil},
		{"full-prompt check, partial prefills", formats.LLMEngine{KVAllocation: formats.KVAllocChunkFullPrompt, MaxNumPartialPrefills: 2, EnablePrefixCaching: new(false)}, nil},
		{"prefix cache, swap", formats.LLMEngine{SwapSpace: 1, EnablePrefixCaching: new(true)}, nil},
		{"prefix cache, output delay", formats.LLMEngine{OutputDelaySteps: &one, EnablePrefixCaching: new(true)}, nil},
		{"hybrid KV, chunk, swap", formats.LLMEngine{KVAllocation: formats.KVAllocChunk, SwapSpace: 1, EnablePrefixCaching: new(false)}, hybrid},
		{"hybrid KV, prefix cache", formats.LLMEngine{EnablePrefixCaching: new(true)}, hybrid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := flatProfile(tc.engine)
			p.KVBytesPerToken = 1000
			p.KVGroups = tc.groups
			if tc.engine.OutputDelaySteps != nil { // flatProfile has none
				p.Engine.OutputDelaySteps = tc.engine.OutputDelaySteps
			}
			m := llm.NewModel(p)
			var swaps, evictions int64
			for seed := range uint64(8) {
				s, ev := driveEngine(t, m, seed)
				swaps, evictions = swaps+s, evictions+ev
			}
			// The interleavings reach what the invariants are about.
			if evictions == 0 || (tc.engine.SwapSpace > 0) != (swaps > 0) {
				t.Errorf("%d swaps and %d recompute preemptions over the seeds", swaps, evictions)
			}
		})
	}
}

// driveEngine runs one random interleaving on a fresh engine of m, checking after each call
// (with a prefix cache half the longer prompts share a 32-token prefix), and returns the preemptions that swapped and those that recomputed.
func driveEngine(t *testing.T, m *llm.Model, seed uint64) (swaps, evictions int64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	q := fcfs.New()
	e := &llm.Engine{AllowSwap: true, Ctr: &llm.Counters{}}
	e.SetScheduler(q)
	sys := &dataplane.Prefix{Group: "sys", GroupTokens: 32}
	var all []*llm.Seq // the requests not aborted
	id := dataplane.ReqID(0)
	now, end, oend := dataplane.Time(0), dataplane.Never, dataplane.Never
	emit := func(llm.Output) {}
	op := 0
	check := func(what string, ver uint64) {
		t.Helper()
		if err := e.Check(m); err != nil {
			t.Fatalf("seed %d, op %d (%s): %v", seed, op, what, err)
		}
		if !m.PrefixCaching {
			held := 0
			for _, s := range e.Running() {
				held += s.KV
			}
			if e.KVUsed() != held || e.KVUsed()%m.Block != 0 {
				t.Fatalf("seed %d, op %d (%s): KV used %d, the running requests hold %d", seed, op, what, e.KVUsed(), held)
			}
		}
		if e.Version() == ver {
			t.Fatalf("seed %d, op %d (%s): the version did not move", seed, op, what)
		}
	}
	// advance applies the step or output-only step that ends by to, else moves now to it.
	advance := func(to dataplane.Time) {
		switch {
		case end <= to && end <= oend:
			now, end = end, dataplane.Never
			ver := e.Version()
			e.Done(now, m, emit)
			check("done", ver)
		case oend <= to:
			now, oend = oend, dataplane.Never
			if e.EndOutputStep(now, emit) {
				oend = e.OutputStep(now, m, emit)
			}
		default:
			now = to
		}
	}
	step := func() {
		if e.Busy() {
			return
		}
		ver := e.Version()
		it, ok, _ := e.Step(now, m, true)
		check("step", ver)
		if ok {
			end = now + max(it.Dur, 1)
		} else if oend == dataplane.Never {
			oend = e.OutputStep(now, m, emit)
		}
	}
	for op = range 600 {
		advance(now + dataplane.Time(r.IntN(3000)))
		switch k := r.IntN(12); {
		case k < 5:
			prompt, out := 1+r.IntN(100), 1+r.IntN(12)
			if m.Refuses(prompt, out) {
				break
			}
			id++
			s := &llm.Seq{ID: id, Model: m.Name, Prompt: prompt, Out: out, Arrival: now, Inst: -1}
			if m.PrefixCaching && prompt > 40 && r.IntN(2) == 0 {
				s.Prefix = sys
			}
			all = append(all, s)
			q.Push(s)
		case k == 5 && !e.Busy() && len(e.Running()) > 0:
			v := e.Running()[r.IntN(len(e.Running()))]
			ver := e.Version()
			e.Preempt(v, m, e.Scheduler(), r.IntN(2) == 0)
			check("preempt", ver)
			if slices.Contains(e.Running(), v) {
				t.Fatalf("seed %d, op %d: preempted request %d still runs", seed, op, v.ID)
			}
		case k == 6 && len(all) > 0:
			i := r.IntN(len(all))
			if sw := e.Swapped(); len(sw) > 0 && r.IntN(2) == 0 {
				i = slices.Index(all, sw[r.IntN(len(sw))]) // swapped ones are few and brief
			}
			s := all[i]
			all = slices.Delete(all, i, i+1)
			ver := e.Version()
			if e.Abort(s) {
				check("abort", ver)
			} else {
				q.Remove(s) // waiting, or finished already
			}
		case k == 7 && r.IntN(10) == 0:
			ver := e.Version()
			for _, s := range e.Reset() {
				q.Push(s)
			}
			end = dataplane.Never // the iteration in flight is lost with the instance
			check("reset", ver)
			if e.KVUsed() != 0 || e.CPUUsed() != 0 || e.Busy() {
				t.Fatalf("seed %d, op %d: reset engine holds KV %d, CPU %d, busy %v", seed, op, e.KVUsed(), e.CPUUsed(), e.Busy())
			}
		}
		step()
	}
	// Drained: every request ends (what fits is admitted in time) and nothing is held.
	for n := 0; e.Busy() || len(e.Running()) > 0 || len(e.Swapped()) > 0 || q.Len() > 0; n++ {
		if n > 100000 {
			t.Fatalf("seed %d: not drained: %d running, %d swapped, %d waiting", seed, len(e.Running()), len(e.Swapped()), q.Len())
		}
		advance(now + 1000)
		step()
	}
	if e.KVUsed() != 0 || e.CPUUsed() != 0 {
		t.Errorf("seed %d: drained engine holds KV %d, CPU %d bytes", seed, e.KVUsed(), e.CPUUsed())
	}
	return e.Ctr.KVSwaps, e.Ctr.Evictions
}

// TestEnginePlace: Place seats requests with the KV they hold, counted in KVUsed; Abort
// frees it; Check catches a request placed with KV that is not whole blocks, and Place
// refuses a request the engine holds already.
func TestEnginePlace(t *testing.T) {
	m := llm.NewModel(flatProfile(formats.LLMEngine{}))
	e := &llm.Engine{}
	a := &llm.Seq{ID: 1, Prompt: 20, Out: 4, Comp: 20, Gen: 1, KV: 32}
	b := &llm.Seq{ID: 2, Prompt: 40, Out: 4, Comp: 40, Gen: 1, KV: 48}
	e.Place(a)
	e.Place(b)
	if e.KVUsed() != 80 || len(e.Running()) != 2 || e.Check(m) != nil {
		t.Fatalf("placed: KV %d, %d running, %v", e.KVUsed(), len(e.Running()), e.Check(m))
	}
	if !e.Abort(a) || e.KVUsed() != 48 || e.Check(m) != nil {
		t.Fatalf("aborted: KV %d, %v", e.KVUsed(), e.Check(m))
	}
	e.Place(&llm.Seq{ID: 3, Prompt: 5, KV: 5})
	if e.Check(m) == nil {
		t.Error("Check passed a request holding 5 KV tokens (blocks of 16)")
	}
	defer func() {
		if recover() == nil {
			t.Error("Place of a running request did not panic")
		}
	}()
	e.Place(b)
}

// TestHooksResolvedOnce: NewHooks finds each in-tree policy's optional hooks, a *Hooks is
// kept as it is, and the engine calls the hooks its scheduler was given.
func TestHooksResolvedOnce(t *testing.T) {
	h := llm.NewHooks(priority.New())
	if h.Victim == nil || h.Preempt != nil || h.Waiting == nil || h.Gate != nil {
		t.Errorf("priority: victim %v, preempt %v, waiting %v, gate %v", h.Victim != nil, h.Preempt != nil, h.Waiting != nil, h.Gate != nil)
	}
	if llm.NewHooks(h) != h {
		t.Error("NewHooks made a new Hooks of a Hooks")
	}
	if x := llm.NewHooks(edf.New()); x.Preempt == nil || x.Victim != nil {
		t.Errorf("edf: preempt %v, victim %v", x.Preempt != nil, x.Victim != nil)
	}
	c := &countingQueue{Queue: fcfs.New()}
	m := llm.NewModel(flatProfile(formats.LLMEngine{}))
	e := &llm.Engine{}
	e.SetScheduler(c)
	c.Push(&llm.Seq{ID: 1, Model: m.Name, Prompt: 10, Out: 2, Inst: -1})
	if _, ok, _ := e.Step(0, m, true); !ok || c.ends != 1 {
		t.Errorf("step: started %v, AdmitEnd called %d times, want once", ok, c.ends)
	}
}

// countingQueue is a Queue with an AdmitEnder hook that counts its calls.
type countingQueue struct {
	llm.Queue
	ends int
}

func (c *countingQueue) AdmitEnd(*llm.Engine) { c.ends++ }

// TestAbortFreesSwappedKV: a request swapped out to CPU memory and then aborted (its client
// left) frees the bytes it was swapped out with, whatever model the engine runs by then:
// QLM aborts on an instance that has moved to another model, and CPUUsed must not keep the
// request's bytes until the instance fails.
func TestAbortFreesSwappedKV(t *testing.T) {
	p := flatProfile(formats.LLMEngine{SwapSpace: 1, EnablePrefixCaching: new(false)})
	p.KVBytesPerToken = 1000
	m := llm.NewModel(p)
	e := &llm.Engine{AllowSwap: true, Ctr: &llm.Counters{}}
	e.SetScheduler(fcfs.New())
	a := &llm.Seq{ID: 1, Prompt: 20, Out: 4, Comp: 20, Gen: 1, KV: 32}
	b := &llm.Seq{ID: 2, Prompt: 20, Out: 4, Comp: 20, Gen: 1, KV: 32}
	e.Place(a)
	e.Place(b)
	e.Preempt(a, m, e.Scheduler(), true)
	if !a.Swapped || e.CPUUsed() != 32*m.KVBytes || e.Check(m) != nil {
		t.Fatalf("swapped: %v, CPU %d bytes (want %d), %v", a.Swapped, e.CPUUsed(), 32*m.KVBytes, e.Check(m))
	}
	if !e.Abort(a) || e.CPUUsed() != 0 || e.KVUsed() != 32 || len(e.Swapped()) != 0 || e.Check(nil) != nil {
		t.Fatalf("aborted: CPU %d bytes, KV %d, %d swapped, %v", e.CPUUsed(), e.KVUsed(), len(e.Swapped()), e.Check(nil))
	}
	if a.Swapped || a.KV != 0 {
		t.Errorf("aborted request still marked swapped (%v) or holding KV %d", a.Swapped, a.KV)
	}
}
