// Package llm is the LLM engine every LLM data plane runs: one continuous-batching instance
// (vLLM's V1 scheduler, LLM engine digest §2, with the KV rules of llm-engine-2 §1) as a
// deterministic state machine. An Engine holds an instance's running and swapped sequences,
// its KV blocks and the iteration in flight; Step forms the next iteration under the token
// budget (max_num_batched_tokens) and the sequence budget (max_num_seqs) — running sequences
// first with chunked prefill, then waiting ones in the order a Scheduler gives — allocating
// KV blocks (at admission or per chunk, Model.Alloc) and preempting (recompute, or a swap to
// CPU memory where configured) when blocks run out; Done applies the iteration at its end and
// reports each token that reaches its client after the output delay, an idle engine still
// ending the steps that deliver the tokens in flight (OutputStep: output-only steps).
//
// Which waiting request is admitted next is the Scheduler's choice: a small interface (Head,
// Admit, Requeue, plus optional hooks for the preemption victim, preemptive admission and an
// admission gate, hooks.go) in the style of the Kubernetes scheduler framework, its hooks
// resolved once when the engine is given it (SetScheduler). The engine's state is its own:
// read through accessors, changed only by the methods that keep its invariants (Engine). vLLM's FCFS and
// priority orders and EDF are per-engine Queues in their own packages under sched/, listed
// in one explicit registry (sched.InTree); QLM's virtual queues (dataplane/qlm) implement the
// same interface over many engines.
//
// The step's time comes from the profile (Model.StepUs: one piecewise-linear lookup, PWL);
// the token counts a request without them gets are drawn once, here (DrawTokens), for sim,
// QLM and serve alike. Replay runs one engine over a list of requests in virtual time, the
// engine alone (tests, one-engine replays).
package llm
