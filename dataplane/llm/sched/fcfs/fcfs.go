// Package fcfs is vLLM's default scheduling policy as an engine Queue: waiting requests by
// arrival, a preempted one back at the front (LLM engine digest §2.2; llm-engine-2 §1,
// waiting.prepend_request), the most recently admitted preempted first (the engine's default
// victim).
package fcfs

import "github.com/plan-dev/plan/dataplane/llm"

// Name is the policy's registry name (vLLM's scheduling_policy value).
const Name = "fcfs"

// New makes an empty FCFS queue.
func New() llm.Queue { return &llm.Ordered{Less: llm.ByArrival, FrontRequeue: true} }
