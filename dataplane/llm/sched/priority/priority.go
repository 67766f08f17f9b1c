// Package priority is vLLM's scheduling_policy priority as an engine Queue: waiting requests
// by priority (lower first), then arrival; a preempted request goes back to its place in that
// order, and the victim when KV runs out is the running request of the lowest priority (the
// largest value), latest arrival first (vLLM V1, llm-engine-2 §1 "Preemption").
package priority

import "github.com/plan-dev/plan/dataplane/llm"

// Name is the policy's registry name (vLLM's scheduling_policy value).
const Name = "priority"

// Queue is the priority order plus its preemption victim.
type Queue struct{ llm.Ordered }

// New makes an empty priority queue.
func New() llm.Queue { return &Queue{llm.Ordered{Less: less}} }

func less(a, b *llm.Seq) bool {
	if a.Prio != b.Prio {
		return a.Prio < b.Prio
	}
	return llm.ByArrival(a, b)
}

// Victim implements llm.VictimPicker: max(priority, arrival) over the running requests.
func (q *Queue) Victim(e *llm.Engine) *llm.Seq {
	var v *llm.Seq
	for _, s := range e.Running() {
		if v == nil || less(v, s) {
			v = s
		}
	}
	return v
}
