package dataplane

// EventKind says what happened.
type EventKind uint8

// Events. Drivers deliver EvArrival (via Engine.Arrive), EvBatchDone, EvTransferDone and
// EvTimer; the engine itself generates EvStageArrival and EvTick for the policy.
const (
	// EvArrival: request Req arrived (Engine.Arrive created it).
	EvArrival EventKind = iota + 1
	// EvBatchDone: Worker finished hop Hop of Batch; Start and End are the ACTUAL times the
	// driver observed. Reported by the driver after an Effects.RunBatch.
	EvBatchDone
	// EvTransferDone: the transfer after hop Hop of Batch finished; Start and End are actual.
	// Reported by the driver after an Effects.Transfer.
	EvTransferDone
	// EvTimer: a timer fired. Drivers echo the Key of Effects.SetTimer; the engine translates
	// it back to the policy's key (and drops stale timers) before the policy sees it.
	EvTimer
	// EvStageArrival (engine → policy): the requests of Batch arrived at Stage, which the
	// batch's path left unassigned; the policy queues and re-batches them. When Req is not
	// NoReq only that request arrived (the batch left a Routed stage, whose requests go
	// their own ways); View.Arrived lists the arriving requests either way.
	EvStageArrival
	// EvTick (engine → policy): the periodic control loop of a Ticker policy.
	EvTick
	// EvModelLoaded (engine → policy): the load of Model Key on Worker finished; the worker
	// is free again.
	EvModelLoaded
	// EvWorkerDown (driver → engine → policy): Worker failed. Its resident models and every
	// batch it ran or held queued are lost; the requests of those batches are out of flight
	// again. A FailReroute policy re-routes them itself; under FailDrop the engine drops
	// them (DropWorkerFailed) before the policy sees the event. Until EvWorkerUp, a dispatch
	// to the worker drops its requests the same way. Only FailureAware policies take it.
	EvWorkerDown
	// EvWorkerUp (driver → engine → policy): Worker is back, empty (no model resident).
	EvWorkerUp
	// EvCancel (engine → policy): request Req was withdrawn (Engine.Cancel: its client left
	// or its deadline passed) and is already finished: Outcome Dropped, Reason DropCancelled.
	// The policy removes it from its queues and frees what it held for it (an LLM sequence's
	// KV cache). Delivered exactly once per cancelled request: at once for a request that is
	// not in flight, and for one in flight when the batch holding it ends (its result is
	// discarded: it never travels on, completes or reaches EvStageArrival).
	EvCancel
)

func (k EventKind) String() string {
	switch k {
	case EvArrival:
		return "arrival"
	case EvBatchDone:
		return "batch-done"
	case EvTransferDone:
		return "transfer-done"
	case EvTimer:
		return "timer"
	case EvStageArrival:
		return "stage-arrival"
	case EvTick:
		return "tick"
	case EvModelLoaded:
		return "model-loaded"
	case EvWorkerDown:
		return "worker-down"
	case EvWorkerUp:
		return "worker-up"
	case EvCancel:
		return "cancel"
	}
	return "unknown"
}

// Event is one input to the state machine. It is a plain value (no pointers) so drivers can
// queue millions of them cheaply. Fields that do not apply to a kind are zero.
type Event struct {
	Kind   EventKind
	Req    ReqID
	Batch  BatchID
	Hop    int32
	Stage  StageID
	Worker WorkerID
	// Start and End are the actual start and end of a batch or transfer.
	Start, End Time
	// Key identifies a timer.
	Key int64
}

// DecisionKind is the kind of a policy decision.
type DecisionKind uint8

// Decisions a policy can make.
const (
	// DDispatch: send requests Reqs of App as one batch along Path. Hops with Worker ==
	// NoWorker are routed later by the policy (EvStageArrival); a path may end before the
	// application's last stage, likewise.
	DDispatch DecisionKind = iota + 1
	// DDrop: drop request Req at Stage for Reason (Estimate = the estimate behind it).
	DDrop
	// DSetTimer: fire EvTimer with Key at At (replacing any timer with the same key).
	DSetTimer
	// DCancelTimer: forget the timer with Key.
	DCancelTimer
	// DComplete: request Req finished at Stage (an answer before the application's sink:
	// a cascade's early exit, an LLM sequence's last token). The request must be pending
	// and not in flight.
	DComplete
	// DLoad: load Model (Bytes of memory) on Worker, taking Dur; the worker runs nothing
	// meanwhile and the policy gets EvModelLoaded when it is done.
	DLoad
	// DEvict: unload Model from Worker, freeing its memory at once.
	DEvict
	// DFirstToken: request Req's first output token reached its client At (an LLM engine's
	// time to first token, digest §3); the engine records it once in Request.FirstToken.
	DFirstToken
)

func (k DecisionKind) String() string {
	switch k {
	case DDispatch:
		return "dispatch"
	case DDrop:
		return "drop"
	case DSetTimer:
		return "set-timer"
	case DCancelTimer:
		return "cancel-timer"
	case DComplete:
		return "complete"
	case DLoad:
		return "load"
	case DEvict:
		return "evict"
	case DFirstToken:
		return "first-token"
	}
	return "unknown"
}

// PathHop is one stage of a dispatched batch's route and, for reserving policies, the
// reservation made for it.
type PathHop struct {
	Stage  StageID
	Worker WorkerID
	// ResStart is the reserved start on Worker (0 = no reservation: run in arrival order).
	// Workers and links execute their queued work in (ResStart, dispatch order) order, so a
	// consistent reservation schedule can never deadlock and is kept under jitter.
	ResStart Time
	// OutStart is the reserved start of the transfer LEAVING this hop for the next hop.
	OutStart Time
	// Dur, when > 0, is the hop's nominal duration instead of the stage's profiled latency
	// at the batch's size (an LLM iteration whose cost depends on its tokens, not its size).
	Dur Time
}

// Decision is one policy output. Its slices belong to the Decisions buffer and are valid
// until the policy's next Handle call.
type Decision struct {
	Kind     DecisionKind
	App      AppID
	Reqs     []ReqID
	Path     []PathHop
	Req      ReqID
	Stage    StageID
	Reason   DropReason
	Estimate Time
	At       Time
	Key      int64
	Worker   WorkerID
	Model    string
	Bytes    int64
}

// Decisions is the buffer a policy appends its decisions to. It copies the slices a policy
// passes, so a policy may keep mutating its queues and scratch buffers after deciding.
type Decisions struct {
	list []Decision
	reqs []ReqID
	path []PathHop
}

// Reset empties the buffer (the engine does this before each policy call; benchmarks that
// drive a policy directly do it themselves).
func (d *Decisions) Reset() { d.reset() }

func (d *Decisions) reset() {
	d.list = d.list[:0]
	d.reqs = d.reqs[:0]
	d.path = d.path[:0]
}

// Dispatch sends reqs of app as one batch along path.
func (d *Decisions) Dispatch(app AppID, reqs []ReqID, path []PathHop) {
	// Append-only arenas: a reallocation leaves earlier decisions' slices intact.
	n, m := len(d.reqs), len(d.path)
	d.reqs = append(d.reqs, reqs...)
	d.path = append(d.path, path...)
	d.list = append(d.list, Decision{Kind: DDispatch, App: app,
		Reqs: d.reqs[n:len(d.reqs):len(d.reqs)], Path: d.path[m:len(d.path):len(d.path)]})
}

// Drop drops request r at stage for reason; estimate is the latency estimate behind the
// decision (0 if none).
func (d *Decisions) Drop(r ReqID, stage StageID, reason DropReason, estimate Time) {
	d.list = append(d.list, Decision{Kind: DDrop, Req: r, Stage: stage, Reason: reason, Estimate: estimate})
}

// SetTimer asks for an EvTimer with key at time at (replacing a pending one with that key).
func (d *Decisions) SetTimer(at Time, key int64) {
	d.list = append(d.list, Decision{Kind: DSetTimer, At: at, Key: key})
}

// CancelTimer forgets the timer with key.
func (d *Decisions) CancelTimer(key int64) {
	d.list = append(d.list, Decision{Kind: DCancelTimer, Key: key})
}

// Complete finishes request r at stage (completed or late by its deadline).
func (d *Decisions) Complete(r ReqID, stage StageID) {
	d.list = append(d.list, Decision{Kind: DComplete, Req: r, Stage: stage})
}

// Load loads model (bytes of memory) on worker w, taking dur.
func (d *Decisions) Load(w WorkerID, model string, bytes int64, dur Time) {
	d.list = append(d.list, Decision{Kind: DLoad, Worker: w, Model: model, Bytes: bytes, At: dur})
}

// Evict unloads model from worker w.
func (d *Decisions) Evict(w WorkerID, model string) {
	d.list = append(d.list, Decision{Kind: DEvict, Worker: w, Model: model})
}

// FirstToken records that request r's first output token reached its client at (not before
// the request's arrival, not after now): the TTFT every LLM report and metric reads.
func (d *Decisions) FirstToken(r ReqID, at Time) {
	d.list = append(d.list, Decision{Kind: DFirstToken, Req: r, At: at})
}

// List returns the decisions made so far (borrowed).
func (d *Decisions) List() []Decision { return d.list }

// Len returns the number of decisions.
func (d *Decisions) Len() int { return len(d.list) }

// Effects is what the engine asks its driver to do. Every call happens inside
// Engine.Handle; the driver must not call back into the engine from an effect (queue the
// resulting event instead). Durations are NOMINAL (from the profile); the driver decides
// the actual time (sim: nominal × seeded jitter; serve: however long the worker takes) and
// reports it in the completion event.
type Effects interface {
	// RunBatch starts hop hop of batch b (size requests of stage) on worker w at now. The
	// driver later delivers Event{Kind: EvBatchDone, Batch: b, Hop: hop, Worker: w, Start,
	// End}.
	RunBatch(now Time, w WorkerID, b BatchID, hop int, stage StageID, size int, nominal Time)
	// Transfer starts moving the output of hop hop of batch b from server from to server to
	// (NoServer = into a pool queue, receive side not modelled). The driver later delivers
	// Event{Kind: EvTransferDone, Batch: b, Hop: hop, Start, End}.
	Transfer(now Time, b BatchID, hop int, from, to ServerID, bytes int64, nominal Time)
	// SetTimer asks for Event{Kind: EvTimer, Key: key} at time at (≥ now). Timers are never
	// cancelled through the driver: the engine ignores stale keys, so a driver may simply
	// deliver every timer it was given.
	SetTimer(at Time, key int64)
	// Finish reports that request r reached its outcome (completed, late or dropped). serve
	// answers the client here; sim records metrics.
	Finish(now Time, r *Request)
}

// ModelEffects is implemented by drivers that act on model loads and evictions (serve
// opening or closing a real session). The engine times the load itself with a timer, so a
// driver without it still serves deployments whose policies load models.
type ModelEffects interface {
	LoadModel(now Time, w WorkerID, model string, bytes int64, dur Time)
	EvictModel(now Time, w WorkerID, model string)
}
