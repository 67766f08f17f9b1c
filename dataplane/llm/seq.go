package llm

import "github.com/plan-dev/plan/dataplane"

// Seq is one request as an engine sequence (LLM engine digest §1): its prompt and output
// lengths, the tokens computed and generated so far, the KV it holds and its part in the
// iteration in flight. Policies read and keep Seqs; the engine alone changes KV, Comp,
// Sched, ReadyAt, Swapped, Fin, spec, freeNow and the fields from Started on.
type Seq struct {
	// The fields that every step reads of every running sequence (Engine.scheduleRunning,
	// Done, admitWaiting) come first, on the first of the record's four cache lines (248
	// bytes: the allocator's 256-byte class, so a record starts a line): with 100-250
	// sequences running on each of an LLM fleet's engines, a step's passes over the batch
	// missed the cache on up to five lines of each when they lay where their meaning put
	// them (cachegrind: 19% fewer L1 misses in a QLM simulation of the llmdeploy plan).

	// Prompt and Out are the prompt and output lengths in tokens; Gen the tokens generated.
	Prompt, Out, Gen int
	// KV is the KV cache it holds, in tokens of whole blocks (0 while waiting).
	KV int
	// Comp is how many of its tokens the KV cache holds computed (vLLM's
	// num_computed_tokens): prompt chunks, then one per generated token; back to 0 after a
	// recompute preemption (prompt + generated are computed again).
	Comp int
	// Sched is the tokens the iteration in flight computes for it (0 when not in it).
	Sched int
	// Swapped: preempted by a GPU→CPU KV swap; ReadyAt is when its swap-in ends.
	ReadyAt dataplane.Time
	Swapped bool
	// Fin: its last token is computed; its completion waits for the output delay.
	Fin bool
	// spec: in the step being formed it decodes speculatively (spec.go); specAcc (below)
	// carries the fraction of an expected token its verify steps emitted beyond whole ones.
	spec bool
	// freeNow: finished under release next_step, it ran its extra step and its blocks free
	// at this iteration's end.
	freeNow bool
	// App fills the line: the QLM policy reads it of every running sequence at every step
	// (its residual work, its per-application batches).
	App dataplane.AppID

	ID    dataplane.ReqID
	Model string
	// Arrival and Deadline are the request's; Prio its priority (vLLM's: lower first).
	Arrival, Deadline dataplane.Time
	Prio              int32
	// Inst is the engine that holds or queues it (Engine.ID; -1: none yet).
	Inst int
	// TTFT is its time to first token once stamped (0 before).
	TTFT dataplane.Time
	// Tag is the scheduler policy's own per-request data (QLM: its request group).
	Tag any
	// Prefix is what its prompt shares with others' (the trace's, dataplane.Arrival.Prefix;
	// nil: all its tokens its own): the engine's prefix cache names its blocks by it.
	Prefix *dataplane.Prefix

	// Started: it was admitted once; Admitted is when it last joined a running batch.
	Started  bool
	Admitted dataplane.Time
	// Preemptions counts its preemptions (vLLM V1's per-request num_preemptions).
	Preemptions int
	// Cached is the tokens its admissions found in the prefix cache (vLLM V1's
	// num_cached_tokens, summed over re-admissions after a preemption).
	Cached  int
	specAcc float64
	// The prefix cache's fields start the last line (Engine.register reads them together).
	// blockHashes are its full blocks' chained hashes at block size hashBlock (apc.go).
	blockHashes []uint64
	hashBlock   int
	// regBlocks is how many of its held blocks are registered in the pool (Pool.Cache).
	regBlocks int
	// A sequence whose tokens are all its own (ownTokens) registers its blocks only when it
	// leaves the GPU unfinished (apc.go): regTokens are the computed tokens whose blocks it
	// would have registered by then, ownCached that it did so and may find them cached.
	regTokens int
	ownCached bool
	// swapBytes is the CPU memory its swapped-out KV takes (0 unless Swapped), priced by the
	// model it was swapped out under: what leaving the swapped set frees, even after the
	// engine moved to another model (the record grows to 256 bytes, its allocator class).
	swapBytes int64
}

// Ctx is the tokens of its context: prompt plus generated.
func (s *Seq) Ctx() int { return s.Prompt + s.Gen }

// Need is the tokens it must compute before its next output token: its whole prompt (plus
// generated tokens after a recompute) less what is computed, 1 in decode.
func (s *Seq) Need() int { return s.Prompt + s.Gen - s.Comp }

// Prefilling: its next tokens are prompt (or recomputed) tokens, not a decode.
func (s *Seq) Prefilling() bool { return s.Need() > 1 || s.Comp < s.Prompt }
