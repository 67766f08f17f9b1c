// Package edf is earliest-deadline-first as an engine Queue (QLM §8's EDF baseline): waiting
// requests by deadline, then arrival, and preemptive: when the head does not fit the KV
// cache and a running request has a later deadline, the latest-deadline one is evicted
// (recompute, never a swap) for it.
package edf

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
)

// Name is the policy's registry name.
const Name = "edf"

// Queue is the deadline order plus its preemptive admission.
type Queue struct{ llm.Ordered }

// New makes an empty EDF queue.
func New() llm.Queue { return &Queue{llm.Ordered{Less: less}} }

func less(a, b *llm.Seq) bool {
	if a.Deadline != b.Deadline {
		return a.Deadline < b.Deadline
	}
	return llm.ByArrival(a, b)
}

// PreemptFor implements llm.Preemptor: evict the running request with the latest deadline
// (ties: the larger request ID) when it is later than head h's.
func (q *Queue) PreemptFor(_ dataplane.Time, e *llm.Engine, m *llm.Model, h *llm.Seq) bool {
	if len(e.Running()) == 0 || e.Busy() {
		return false
	}
	var v *llm.Seq
	for _, s := range e.Running() {
		if v == nil || s.Deadline > v.Deadline || (s.Deadline == v.Deadline && s.ID > v.ID) {
			v = s
		}
	}
	if v.Deadline <= h.Deadline {
		return false
	}
	e.Preempt(v, m, q, false)
	return true
}
