package llm

import "github.com/plan-dev/plan/dataplane"

// Admission at the door: would a request arriving now at engine e finish within its SLO, and
// would the requests already admitted still finish within theirs? Serve's OpenAI front end
// and the simulator both drive QLM's policy, which asks Judge at every arrival
// (dataplane/qlm, admit.go), so a refusal is one decision, made once, from the same state in
// both clocks.
//
// The prediction replays the engine's own rules (LLM engine digest §2) on an abstract copy of
// its state, a step per prefill chunk and one jump per completion in between:
//
//   - the running sequences (prompt chunks left, output tokens left, context), then the
//     swapped-out ones and the waiting ones ahead, in queue order, then the new request;
//   - a waiting sequence joins the batch while a sequence slot (max_num_seqs) is free and the
//     KV cache holds its whole context at its last token (prompt + output, in whole blocks):
//     the peak every admitted sequence reaches, so the replay never needs a preemption, which
//     would only make the true completion later (llm-engine-2 §1);
//   - a step with prompt tokens to compute takes them in admission order under the token
//     budget (max_num_batched_tokens) beside one token per decoding sequence, and lasts
//     Model.StepUs (the one piecewise-linear lookup the engine uses); a prompt whose last
//     chunk is computed yields its first token;
//   - between two events (a completion, a prefill) the batch is fixed, so its decode steps
//     all last StepUs of that batch at its mean context: the replay jumps to the next
//     completion in one go;
//   - every token reaches its client OutDelay steps after it was computed (digest §2.5).
//
// A new request costs the others: its prompt's steps are prefill steps for every running
// sequence (digest §2.4: a chunk of 4,096 tokens can take a hundred decode steps' time), so
// under sustained overload each admission pushes the batch's completions later, and a door
// that looked only at the newcomer admitted requests that all finished late. Judge therefore
// replays twice, with the newcomer and without, and refuses it also when a sequence ahead of
// it that would finish in time without it finishes late with it: what the door admitted stays
// on time as long as the prediction holds.
//
// [ours] Speculative decoding, prefix caching and a model switch are left out: each makes the
// true completion earlier (the first two) or is refused by placement (the third), so the
// prediction errs towards refusing. Arrivals after the newcomer are not foreseen: each is
// judged in turn.
//
// [ours] Cost: the replay keeps the batch's decoding sequences sorted by the step count at
// which each finishes (all of them advance together), so a completion leaves from the
// front instead of costing a pass over the batch; a Door keeps, per engine, the replay up to
// the admission of the last request queued, and an arrival at the same engine state resumes
// from there (door.go): a burst of arrivals between two steps replays the queue once, not
// once per arrival. The decisions are the full replay's, to the microsecond
// (TestDoorMatchesFullReplay).

// Prediction is when a request arriving now would see its first token (TTFT) and its last
// (E2E), as durations from now, at an engine in its current state.
type Prediction struct {
	TTFT, E2E dataplane.Time
}

// Verdict is the admission decision on a request.
type Verdict struct {
	Prediction
	// Late: the request would finish after its SLO (or see its first token after its TTFT
	// SLO), or would make a sequence ahead of it late that is on time without it (Harms
	// counts those): refuse it at the door.
	Late  bool
	Harms int
	// Wait is how much later it would have to arrive to fit: the engine drains the work ahead
	// meanwhile, so a request arriving Wait later finishes about Wait sooner after its
	// arrival (with no other arrival in between); when it would make a sequence ahead late,
	// at least until that sequence is predicted done. 0 when it fits.
	Wait dataplane.Time
}

// RetryAfter is the Retry-After header's value for a late verdict: the predicted wait in
// whole seconds, rounded up, at least 1 (RFC 9110 §10.2.3: a delay in seconds).
func RetryAfter(wait dataplane.Time) int64 {
	return max(1, (int64(wait)+int64(dataplane.Second)-1)/int64(dataplane.Second))
}

// Arrival is the request Judge and Predict consider: its prompt and output tokens, its
// end-to-end SLO and TTFT SLO (0: none), the time it arrives (the sequences' deadlines are
// read against it), and which of the engine's running or swapped sequences would give way
// to it (Yields; nil: none): a scheduler that preempts for an earlier deadline (QLM §5
// eviction, EDF) runs the arrival before them, and their lateness is not counted against it.
type Arrival struct {
	Prompt, Out  int
	SLO, TTFTSLO dataplane.Time
	Now          dataplane.Time
	Yields       func(*Seq) bool
	// Busy is how long the engine's iteration in flight still runs (0: idle): the replay
	// starts when it ends, with its tokens computed.
	Busy dataplane.Time
	// Pace scales every step's profiled time (≤ 1: as profiled): the ratio of the engine's
	// observed step times to its profile's, when a wall-clock engine runs slower than the
	// profile says.
	Pace float64
	// Headroom is the share of each request's SLO the prediction keeps free (0: none): a
	// request is on time when predicted to finish within (1 − Headroom) of its SLO. The
	// door packs admissions until the earliest admitted has no slack left, so a wall-clock
	// server's scheduling delays (a loaded machine) would make it late without some.
	Headroom float64
	// Guarded: the scheduler holds a waiting request back while admitting it would make a
	// running one of a tighter SLO late (QLM §5's deadline guard). Such a sequence is not
	// counted as harmed when the arrival's own SLO leaves room to wait for it. Requests of
	// one SLO are not held back for each other (the guard admits below the batch's decode
	// knee), so harm among them always counts.
	Guarded bool
}

// Judge is the verdict on request a arriving at engine e of model m, queued behind waiting
// (the swapped-out sequences of e come first by the engine's rule).
func Judge(m *Model, e *Engine, waiting []*Seq, a Arrival) Verdict {
	var d Door
	return d.Judge(m, e, waiting, a)
}

// Predict is when request a's first and last tokens would reach its client, from now, at
// engine e of model m with waiting queued after its running and swapped sequences (less
// those that yield to a).
func Predict(m *Model, e *Engine, waiting []*Seq, a Arrival) Prediction {
	var d Door
	d.sync(m, e, waiting, a)
	p, _ := d.with(m, a)
	return p
}
