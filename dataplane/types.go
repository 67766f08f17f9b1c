package dataplane

import "math"

// Time is a point in time or a duration in integer microseconds. Points are measured from the
// start of the run (sim: virtual time 0; serve: the instant the engine was created).
type Time int64

// Common durations.
const (
	Microsecond Time = 1
	Millisecond Time = 1000
	Second      Time = 1000 * Millisecond
	// Never is a time after every other time.
	Never Time = math.MaxInt64
)

// Dense identifiers: each indexes a slice in the engine or the deployment.
type (
	// ReqID identifies a request: an index into the engine's request table.
	ReqID int32
	// AppID identifies an application (for PPipe: one model) in Deployment.Apps.
	AppID int32
	// StageID identifies a stage within Deployment.Stages (global across applications).
	StageID int32
	// WorkerID identifies a worker (a whole GPU or a 1/v slice) in Topology.Workers.
	WorkerID int32
	// ServerID identifies a server (a NIC) in Topology.Servers.
	ServerID int32
	// BatchID identifies a dispatched batch in the engine's batch table.
	BatchID int32
)

// NoStage, NoWorker, NoServer and NoReq mark unset identifiers.
const (
	NoReq    ReqID    = -1
	NoStage  StageID  = -1
	NoWorker WorkerID = -1
	NoServer ServerID = -1
)

// Outcome is a request's terminal state. Every request reaches exactly one.
type Outcome uint8

// Outcomes.
const (
	Pending   Outcome = iota // not finished yet
	Completed                // finished by its deadline
	Late                     // finished after its deadline
	Dropped                  // discarded by a policy (see Request.Reason)
)

func (o Outcome) String() string {
	switch o {
	case Pending:
		return "pending"
	case Completed:
		return "completed"
	case Late:
		return "late"
	case Dropped:
		return "dropped"
	}
	return "unknown"
}

// DropReason says why a policy dropped a request. It is an open set of strings so that new
// policies add reasons without touching this package; reports group drops by reason.
type DropReason string

// Drop reasons used by the policies in this package.
const (
	// DropDeadline: no batch size lets the request finish by its deadline (PPipe step 2,
	// reactive budget test).
	DropDeadline DropReason = "deadline"
	// DropAdmission: the first time at the head of the queue not even a near-planned batch
	// fits (PPipe's [code] admission refinement; the reactive baseline's 95% rule).
	DropAdmission DropReason = "admission"
	// DropWaitCorner: waiting for one more request would break the head's deadline because
	// latency is not monotone in batch size (PPipe's corner case).
	DropWaitCorner DropReason = "wait-corner"
	// DropNoPath: the application has no usable pipeline.
	DropNoPath DropReason = "no-path"
	// DropShutdown: the driver stopped (serve drains, then drops what is left).
	DropShutdown DropReason = "shutdown"
	// DropWorkerFailed: the worker running or holding the request's batch failed (EvWorkerDown)
	// and the policy does not re-route such requests (FailDrop), or no live worker can serve it.
	DropWorkerFailed DropReason = "worker-failed"
	// DropCancelled: the driver withdrew the request (Engine.Cancel): its client disconnected
	// or gave up, or its deadline passed at the client. Reports count it as cancelled, never
	// as completed.
	DropCancelled DropReason = "cancelled"
)

// Request is one inference request and its life-cycle record. The engine owns requests;
// policies read them through View and must not modify them.
//
// The record holds no pointers and is two cache lines (128 bytes). The engine's table holds
// every request from the oldest unfinished one on (at 16× the cluster, half a million
// records), and a record with pointers made the table a scanned allocation: each GC cycle
// read the pointer words of every held record. So what points elsewhere lives beside the
// record, in tables the engine keeps by ReqID: the batch list past the first batch
// (Engine.RequestBatches), the prompt prefix (Engine.Prefix); the drop reason is a code into
// a table of reason strings (Reason). The fields are laid out by when a run touches them:
// at scale a request is evicted between the phases of its life, so each line a phase reads
// is a miss. The first line holds what finishing a batch reads (outcome, hold count, times,
// GPU work, result); the second what dispatching and emulating one reads (Dispatch, the
// first batch, the attributes) and what drops and LLM timings read. layout_test.go checks
// the offsets.
type Request struct {
	ID  ReqID
	App AppID
	// Outcome is the request's terminal state (Pending until then).
	Outcome Outcome
	// CancelRequested: the driver withdrew the request while a batch held it; the engine
	// finishes it as cancelled when that batch ends. Policies may read it to stop extending
	// its work (an LLM sequence is not scheduled for another iteration).
	CancelRequested bool
	// reason codes a drop's reason (Reason).
	reason reasonCode
	// held counts the dispatched batches the request is in (engine-owned; policies cannot
	// drop it while > 0). Only the branches of a DAG fan-out hold a request twice.
	held uint8
	// nBatch is the number of batches the request travelled in: the first is batch0, and
	// from the second on the whole list is in the engine's multi table.
	nBatch int32
	// Arrival and Deadline (= Arrival + the application's SLO unless the driver set it).
	Arrival, Deadline Time
	// Done is when the request reached its outcome.
	Done Time
	// WorkGPU is the GPU time spent on this request in GPU-µs (a batch's duration divided by
	// its size and by the worker's slice level v); for a dropped request it is wasted work.
	WorkGPU float64
	// Result is what the last stage that ran the request said about it (Engine.SetResult).
	Result Result
	// Dispatch is when the request first joined a dispatched batch (Never before).
	Dispatch Time
	batch0   [1]BatchID
	// DropStage and Estimate describe a drop with Reason: at which stage (NoStage = before
	// the first stage), and the latency estimate that caused it (0 if none).
	DropStage StageID
	// Attrs are the attributes the driver gave at arrival.
	Attrs    Attrs
	Estimate Time
	// FirstToken is when an LLM request's first output token reached its client (Never until
	// its policy records it with Decisions.FirstToken): TTFT = FirstToken − Arrival, TPOT =
	// (Done − FirstToken) / (OutTokens − 1), LLM engine digest §3.
	FirstToken Time
}

// InFlight reports whether the request is inside a dispatched batch right now.
func (r *Request) InFlight() bool { return r.held > 0 }

// Reason is why a policy or the engine dropped the request ("" unless it was dropped).
func (r *Request) Reason() DropReason { return r.reason.reason() }

// NumBatches is the number of batches the request travelled in (Engine.RequestBatches lists
// them).
func (r *Request) NumBatches() int { return int(r.nBatch) }

// Server is a machine with one NIC; every GPU of the server shares it.
type Server struct {
	Name string
	// UpMbps and DownMbps are the effective send/receive bandwidths in Mbit/s = bit/µs.
	UpMbps, DownMbps float64
}

// GPU is a physical GPU.
type GPU struct {
	Type   string
	Class  string // high | low | "" (PPipe's classes, for utilization reports)
	Server ServerID
	// Count is the physical GPUs this one stands for (0 = 1): a tensor-parallel LLM
	// instance runs as one GPU of the topology but occupies Count of the type, which the
	// utilization reports count.
	Count int
}

// Physical is the GPUs g stands for: Count, at least 1.
func (g GPU) Physical() int { return max(g.Count, 1) }

// Worker is one execution slot: a whole GPU (VGPU = 1) or one 1/VGPU slice of it.
type Worker struct {
	Name   string
	GPU    int // index into Topology.GPUs
	Server ServerID
	Type   string
	Class  string
	VGPU   int
	// Stage is the stage whose pool this worker belongs to (NoStage = unassigned).
	Stage StageID
	// MemBytes is the memory models may occupy on the worker (0 = not tracked).
	MemBytes int64
}

// Topology is the physical cluster a deployment runs on.
type Topology struct {
	Servers []Server
	GPUs    []GPU
	Workers []Worker
}

// Stage is one node of an application graph served by a pool of workers: for PPipe a
// partition (blocks [i,j) of a model) of one pipeline; for PARD a module.
type Stage struct {
	Name string
	App  AppID
	// Pipeline groups the stages of one PPipe pipeline (index within the app; -1 = none).
	Pipeline int
	// Index is the stage's position within its pipeline (0 = entry).
	Index int
	// Next lists successor stages. Empty = sink. Chains have one successor; a DAG fan-out
	// sends the batch's requests to every successor (one EvStageArrival each), and the
	// policy joins the branches where they merge (PARD's da).
	Next []StageID
	// Pool lists the workers serving the stage.
	Pool []WorkerID
	// Batch is the planned batch size.
	Batch int
	// LatUs[b] is the nominal latency of a batch of b (1 ≤ b < len(LatUs)); LatUs[0] = 0.
	LatUs []Time
	// OutBytes is the per-sample size of the stage's output (0 for the last stage).
	OutBytes int64
	// XferPerSampleUs is the planned per-sample transfer time of the output (µs, may be
	// fractional); the transfer of b samples takes ceil(b·XferPerSampleUs).
	XferPerSampleUs float64
	// Routed: each request leaving the stage goes to the one successor its Result.Branch
	// names (a workflow's choice, a sampled Edge.Probability), or finishes here when
	// Result.Exit is set (a cascade stage confident enough answers early). Without Routed a
	// request goes to every successor (a DAG fan-out) and finishes only at a sink.
	Routed bool
	// NextProb[i] is the probability that a request takes Next[i] (Routed stages whose
	// branching the driver samples; nil = the driver's results decide).
	NextProb []float64
	// Manual: the engine neither forwards nor finishes requests when a batch of this stage
	// ends; the policy completes, drops or re-dispatches them (iteration-level instances
	// such as an LLM's continuous batching, where one batch is one engine iteration).
	Manual bool
	// SkipProb is the probability that a request reaching the stage is not processed there
	// (a conditional module: a workload edge with probability p gives 1 − p). Policies that
	// serve conditional graphs pass a skipped request on as if the stage had run, deciding
	// per request with SkipCoin so that sim and serve skip the same requests.
	SkipProb float64
	// Model names the model the stage runs (for load/evict decisions; "" = none tracked).
	Model string
	// Active is how many workers of Pool serve from the start (PARD's autoscaler activates
	// the rest after a cold start, up to len(Pool)); 0 = all of Pool.
	Active int
}

// Lat returns the nominal latency of a batch of b on the stage, extrapolating linearly past the
// table (a batch larger than profiled is a policy bug, but the engine must not panic on it).
func (s *Stage) Lat(b int) Time {
	if b <= 0 {
		return 0
	}
	if b < len(s.LatUs) {
		return s.LatUs[b]
	}
	n := len(s.LatUs) - 1
	if n <= 0 {
		return 0
	}
	return s.LatUs[n] * Time(b) / Time(n)
}

// Xfer returns the planned transfer time of a batch of b leaving the stage.
func (s *Stage) Xfer(b int) Time {
	if len(s.Next) == 0 || b <= 0 {
		return 0
	}
	return Time(math.Ceil(float64(b) * s.XferPerSampleUs))
}

// App is an application: a graph of stages with one end-to-end SLO. For PPipe an app is one
// model, and each pooled pipeline is a separate chain of stages; Entry lists the first stage
// of every pipeline (the dispatcher picks one per batch).
type App struct {
	Name string
	SLO  Time
	// Weight is the app's share of requests in multi-app workloads.
	Weight float64
	// RateRPS is the rate at load factor 1.0: the plan's guaranteed rate (target_rps), else
	// its throughput.
	RateRPS float64
	// RangeRPS is the highest rate the plan states it was sized for (a CascadeServe plan's
	// last gear's q_hi, from --qps-max); 0 = none stated. A run above it is extrapolation:
	// simulate says so.
	RangeRPS float64
	Entry    []StageID
	// Pipelines[p] lists the stages of pipeline p in order (PPipe plans); empty for
	// non-pipeline apps.
	Pipelines [][]StageID
	// Params are policy parameters the plan carries (PARD's λ, windows, autoscaling); a
	// Config parameter of the same name wins.
	Params map[string]string
	// SLOPercentile is the percentile the SLO is judged at (CascadeServe's "p95 latency ≤
	// SLO", §6.1): reports give the latency at it beside the attainment; 0 = judged per
	// request only.
	SLOPercentile float64
}

// Result is a stage's verdict on one request, reported by the driver with the batch's
// completion (sim draws it from the stage's NextProb or a system's model of its outputs;
// serve reads it from the worker's real output).
type Result struct {
	// Branch indexes Stage.Next: the successor a Routed stage sends the request to.
	Branch int32
	// Exit finishes the request at a Routed stage (an early answer).
	Exit bool
	// Certainty is the model's confidence in its output (a cascade's max softmax probability).
	Certainty float32
	// Label is the model's output class (-1 = none).
	Label int32
}

// Emulator says what an emulated model outputs for request r at stage st: the branch a
// routed stage sends it to, a cascade stage's certainty. u is a uniform number in [0, 1)
// the driver draws from its seeded generator for this request and stage, so sim and serve's
// emulated workers make the same choices for the same seed.
type Emulator func(st *Stage, r *Request, u float64) Result

// Deployment is what an engine serves: applications, their stages and the cluster.
type Deployment struct {
	// Emulate, when set, is the system's model of its stages' outputs (nil: a routed
	// stage samples its NextProb; other stages report nothing).
	Emulate Emulator
	// Route, when set, is the system's map from what a stage's model really answered (out:
	// its class and certainty, as an executor reports them) to where the request goes next:
	// out with Branch or Exit set. A workflow's branches are then decided by real outputs
	// (DyOrc with onnx workers); nil keeps the reported result as it is.
	Route func(st *Stage, r *Request, out Result) Result
	// Work, when set, is how long a batch of reqs at stage st really takes when the policy
	// planned nominal: work that depends on each request's own data, which no policy knows
	// before it runs (an LLM's output length; the policy plans at its expectation). The
	// simulator and serve's emulated workers run it (ScaledDuration); real workers take
	// what they take. It must be a function of its arguments alone, and of each request
	// only through TraceKey, so a request costs the same simulated and served.
	Work func(st *Stage, reqs []*Request, nominal Time) Time
	// Judge, when set, says whether a request was answered right (a cascade's emulator
	// replays records with ground truth); the simulator's reports then carry the accuracy
	// over answered requests, on the records JudgeOn names ("test records", ...).
	Judge   func(r *Request) bool
	JudgeOn string
	// AccuracyTarget is the accuracy the plan promises over answered requests (a cascade
	// plan's accuracy SLO, CascadeServe §3); 0 = none. Reports flag a run below it.
	AccuracyTarget float64
	// Kind names the plan section the deployment came from ("ppipe", "pard", ...): the
	// policy registry serves it only with policies that declare that kind.
	Kind   string
	Apps   []App
	Stages []Stage
	Topo   Topology
}

// Worker returns worker w.
func (d *Deployment) Worker(w WorkerID) *Worker { return &d.Topo.Workers[w] }
