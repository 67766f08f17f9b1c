// Package runtime is plan's data-plane core: requests with deadlines, applications as graphs
// of stages, pools of (v)GPU workers grouped into servers with NIC links, and the pluggable
// scheduling policies (PPipe's reservation dispatcher, the reactive per-pool baseline, and
// later PARD's dropper, CascadeServe's gears, QLM's virtual queues, DyOrc's speculation).
//
// # One policy, two clocks
//
// Everything here is a deterministic state machine. Nothing reads a clock, sleeps or starts a
// goroutine. A driver owns time and execution:
//
//   - sim (virtual time) pops events from a heap and calls Engine.Handle(now, ev);
//   - serve (wall time) receives events on channels in ONE goroutine, reads the wall clock
//     once per event, converts it to µs since the engine started, and calls the same Handle.
//
// Handle lets the policy decide (Decisions: dispatch a batch along a path, drop a request,
// set a timer) and the engine turn those decisions into Effects on the driver: run this batch
// on that worker now, start this transfer now, fire a timer at t, this request finished. The
// driver performs the effect (sim: schedule the completion event at now+duration; serve: hand
// the batch to a worker goroutine, arm a time.Timer) and later reports back with an Event
// (BatchDone, TransferDone, Timer) carrying the ACTUAL start and end times. Those reports are
// also the policies' feedback (PPipe's reservation correction).
//
// Times are integer microseconds (Time) since the start of the run; durations use the same
// type. Identifiers are dense small integers so state lives in slices, not maps.
//
// # Extension points
//
// Kubernetes-scheduler-framework style: one small interface per extension point (Policy for
// batching/dispatch, Order for queue ordering, Dropper for drop tests, Ticker for periodic
// control loops), each with a registry by name (RegisterPolicy, RegisterOrder,
// RegisterDropper). A Config names what to run. Policies read engine state through the
// read-only View and write only into Decisions, so a test can record every decision (Nomad
// style) with Engine.Observe.
package runtime
