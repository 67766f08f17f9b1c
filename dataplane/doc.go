// Package dataplane is plan's data-plane core: requests with deadlines, applications as graphs
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
// # Writing a driver
//
// A wall-clock driver (serve) owns one goroutine, the event loop, which is the only caller
// of the engine:
//
//	start := time.Now()
//	now := func() runtime.Time { return runtime.Time(time.Since(start) / time.Microsecond) }
//	for ev := range events {            // arrivals, worker completions, timer fires
//		switch ev.kind {
//		case arrival:                   // an HTTP request: remember its reply channel by ReqID
//			id, err := eng.Arrive(now(), ev.app, 0)
//		default:                        // EvBatchDone / EvTransferDone / EvTimer from Effects
//			err = eng.Handle(now(), ev.event)
//		}
//	}
//
// and implements Effects without blocking: RunBatch hands the batch to the worker's
// goroutine, which measures the actual start and end and sends back EvBatchDone (with
// Start/End in engine time); Transfer likewise (or completes at once when stages share a
// process); SetTimer arms a time.AfterFunc that sends EvTimer{Key} to the loop (firing late
// is harmless, stale keys are ignored); Finish answers the request (completed, late, or a
// 503 carrying Request.Reason and Request.DropStage). Every accepted request gets exactly
// one Finish. The request and batch tables grow with every arrival; a long-running driver
// calls Engine.Compact now and then (from the loop) to forget finished requests and closed
// batches (and lets the policy forget them: Forgetter), and starts a fresh engine when it
// reloads a plan.
//
// Times are integer microseconds (Time) since the start of the run; durations use the same
// type. Identifiers are dense small integers so state lives in slices, not maps.
//
// # Extension points
//
// Kubernetes-scheduler-framework style: one small interface per extension point — Policy for
// batching, dispatch and dropping, Ticker for periodic control loops, Order for queue
// ordering (fifo, edf), Door for admission at the door — and a Registry of policies by name
// built explicitly from the systems' lists (internal/registry/systems), never from init(). Each system
// lives in a sub-package (ppipe, pard, ...) with its policies, its deployer (plan section →
// Deployment, whose Kind names the section) and a Sample deployment generator for the
// conformance harness; Registry.New refuses a policy that does not serve the deployment's
// kind. Policies read engine state through the read-only View and write only into Decisions,
// so a test can record every decision (Nomad style) with Engine.Observe.
//
// # The contract for every system
//
// Requests carry attributes (Attrs: class, priority, token counts, sample) and the last
// stage's Result (branch, exit, certainty, label), reported by the driver with each batch's
// completion (Engine.SetResult; Deployment.Emulated for emulated workers). Routed stages send
// each request to the successor its result names, or finish it early (a cascade's confident
// answer); DComplete finishes a request at any stage; Manual stages leave every request to
// the policy after each batch (an LLM instance's iterations, with PathHop.Dur as the
// iteration's cost); DLoad/DEvict move models on workers with durations and memory
// (EvModelLoaded reports a finished load).
//
// # Cancel and forget
//
// A driver withdraws a request with Engine.Cancel (serve: its client disconnected or its
// deadline passed at the client; sim: Options.CancelFraction). A request no batch holds is
// finished at once as Dropped with DropCancelled; one a batch holds is marked
// (Request.CancelRequested) and finished so when the LAST batch holding it ends: its last
// hop, a Manual stage's batch, a routed stage, a path ending before its application, a
// lost batch of a failed worker, the second branch of a DAG fan-out. Its result is
// discarded: it never travels on, completes or arrives at a stage (View.Arrived leaves it
// out). Either way Effects.Finish is called once and the policy gets exactly one EvCancel,
// before the event that ended the batch (so a Manual stage's policy skips non-Pending
// requests in EvBatchDone). Cancelling a finished, unknown or forgotten request is a no-op.
// Every policy must handle EvCancel: one that leaves a cancelled request in its queues
// would later dispatch a finished request, which the engine refuses.
//
// Engine.Compact retires finished requests held by no open batch; a policy that keeps
// per-request state (tables indexed or keyed by ReqID) implements Forgetter, and Compact
// calls Forget(id) for each retired request in increasing ID order, so the policy's memory,
// like the engine's, depends on what is in flight and not on how many requests have passed
// (internal/registry/conformance's BenchmarkForget measures it per policy).
package dataplane
