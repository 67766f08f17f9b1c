package llm

import "github.com/plan-dev/plan/dataplane"

// A scheduler plugs into the engine through one required interface (Scheduler) and six
// optional hooks, each an interface of its own in the style of the Kubernetes scheduler
// framework's extension points: a scheduler implements those it needs. They are listed here,
// in one place, and found once, when the engine is given its scheduler (SetScheduler,
// NewHooks), not by a type assertion at every step.

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

// Hooks is a Scheduler with its optional hooks resolved: each field is the scheduler as
// that hook, nil where it does not implement it. One Hooks may serve many engines (a
// policy's scheduler over all its instances); it is read-only once made.
type Hooks struct {
	Scheduler
	Victim   VictimPicker
	Preempt  Preemptor
	Gate     Gate
	Waiting  WaitingCounter
	AdmitEnd AdmitEnder
	Finish   Finisher
}

// NewHooks resolves sch's optional hooks, the only place they are looked up. A *Hooks is
// returned as it is (its hooks are resolved already).
func NewHooks(sch Scheduler) *Hooks {
	if h, ok := sch.(*Hooks); ok {
		return h
	}
	h := &Hooks{Scheduler: sch}
	h.Victim, _ = sch.(VictimPicker)
	h.Preempt, _ = sch.(Preemptor)
	h.Gate, _ = sch.(Gate)
	h.Waiting, _ = sch.(WaitingCounter)
	h.AdmitEnd, _ = sch.(AdmitEnder)
	h.Finish, _ = sch.(Finisher)
	return h
}

// SetScheduler makes sch the engine's waiting-queue policy, its hooks resolved now
// (NewHooks; pass a *Hooks to share one among engines). An engine steps only once it has one.
func (e *Engine) SetScheduler(sch Scheduler) { e.sch = NewHooks(sch) }

// Scheduler is the engine's scheduler, its hooks resolved (nil before SetScheduler).
func (e *Engine) Scheduler() *Hooks { return e.sch }
