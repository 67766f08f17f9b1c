// Package worker holds the workers of plan serve behind one interface, Executor: a job is
// one hop of a batch on one worker, started on the driver's goroutine without blocking and
// reported done exactly once. The kinds are the emulated executor (the profiled latency on a
// timer, no hardware), ONNX Runtime sessions of the plan's partitions or whole models (cgo;
// a build without cgo refuses them with a clear error), and remote KServe v2 endpoints (HTTP,
// or a registered transport such as KServe gRPC). The driver (package serve) depends on this
// package and never the other way.
package worker

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve/kserve"
)

// Payload is what travels with one request from stage to stage: the client's input tensor at
// the first stage, then whatever the previous stage produced (fp16 feature maps for ONNX
// workers). Err marks a request a worker failed; later stages pass it through untouched and
// the client gets a 502 naming the stage.
type Payload struct {
	// Tensor is the client's input (and, for carried-through payloads, the output).
	Tensor kserve.TensorJSON
	// Features are named intermediate tensors (ONNX workers), per sample, fp16.
	Features []Feature
	// Input is the client's input once a stage replaced Tensor with its model's output:
	// whole-model stages after the first (a cascade's) run on it again.
	Input    *kserve.TensorJSON
	Err      error
	ErrStage string
}

// Feature is one per-sample intermediate tensor stored as IEEE half floats (the wire format
// PPipe assumes for feature maps between stages).
type Feature struct {
	Name  string
	Shape []int64 // per sample (no batch dimension)
	F16   []uint16
}

// Job is one hop of a batch handed to a worker. The driver fills everything up to Start (and
// Gen); the executor sets End (from the shared clock) and may replace Payload entries.
type Job struct {
	Worker  dataplane.WorkerID
	Batch   dataplane.BatchID
	Hop     int
	Stage   dataplane.StageID
	Nominal dataplane.Time
	// Start is the driver's time when it handed the job over.
	Start   dataplane.Time
	End     dataplane.Time
	Payload []*Payload
	// Results, when the executor fills it (one entry per request of the batch, in the
	// batch's order) before calling done, are the models' own outputs (a cascade stage's
	// certainty and label, a workflow step's branch): the driver hands each to
	// Engine.SetResult, so real outputs decide forwarding and branching.
	Results []dataplane.Result
	// Gen is the driver's own tag: the plan generation whose workers the job ran on, so a
	// hop of a plan that was since replaced is recognized when it ends. Executors leave it
	// alone.
	Gen int
}

// live lists the payloads still carrying a request (not nil, not failed).
func (j *Job) live() []int {
	var out []int
	for i, p := range j.Payload {
		if p != nil && p.Err == nil {
			out = append(out, i)
		}
	}
	return out
}

// failLive fails every payload still carrying a request with err at stage.
func (j *Job) failLive(err error, stage string) {
	for i, p := range j.Payload {
		if p != nil && p.Err == nil {
			j.Payload[i] = &Payload{Err: err, ErrStage: stage}
		}
	}
}

// runAsync is Executor.Run for executors whose hop blocks (a session, an HTTP request): run
// does the hop on its own goroutine, then the job's end is stamped and done called.
func runAsync(clk Clock, job *Job, done func(*Job), run func(*Job)) {
	go func() {
		run(job)
		job.End = clk.Now()
		done(job)
	}()
}

// Executor runs jobs for the workers of one deployment. Run is called on the driver's
// goroutine and must not block: it starts the work (a timer, a goroutine) and calls done
// exactly once, from any goroutine, when the hop finished. The engine guarantees a worker
// runs one job at a time.
type Executor interface {
	// Kind is emulated, onnx or remote.
	Kind() string
	Run(job *Job, done func(*Job))
	// Close releases sessions and connections; it is called after the last job finished.
	Close() error
}

// ExecutorFactory builds the executor for a deployment (called at start and for every plan
// reload, before intake pauses: the preload step).
type ExecutorFactory func(clk Clock, dep *dataplane.Deployment, plan *formats.Plan) (Executor, error)

// SpecProvider is implemented by executors that know their models' tensors (ONNX); others
// get the emulated default (Options.InputShape).
type SpecProvider interface {
	Spec(app dataplane.AppID) (in, out kserve.TensorSpec)
}

// Clock is the server's monotonic clock in µs since the driver started.
type Clock struct{ epoch time.Time }

// NewClock starts a clock now.
func NewClock() Clock { return Clock{epoch: time.Now()} }

// Now returns µs since the epoch (monotonic: time.Since uses the monotonic reading).
func (c Clock) Now() dataplane.Time { return dataplane.Time(time.Since(c.epoch) / time.Microsecond) }

// At returns the wall-clock instant of t.
func (c Clock) At(t dataplane.Time) time.Time {
	return c.epoch.Add(time.Duration(t) * time.Microsecond)
}

// Emulated is the executor that needs no hardware: each hop takes its profiled (nominal)
// latency, optionally with seeded uniform jitter, measured by a timer (no busy waiting).
// Payloads are carried through. The driver recognizes it and keeps its hops in its own
// timer heap (no goroutine, no runtime timer per hop); Run is the same thing for callers
// outside a driver.
type Emulated struct {
	clk    Clock
	jitter float64
	rng    *rand.Rand
}

// NewEmulated makes an emulated executor. jitter is the relative half-width of the uniform
// noise (0.05 = ±5%); the seed makes the noise sequence reproducible.
func NewEmulated(clk Clock, jitter float64, seed uint64) *Emulated {
	return &Emulated{clk: clk, jitter: jitter, rng: rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))}
}

// Kind implements Executor.
func (e *Emulated) Kind() string { return "emulated" }

// Duration returns the emulated duration of nominal (driver goroutine only: the rng is not
// shared).
func (e *Emulated) Duration(nominal dataplane.Time) dataplane.Time {
	if e.jitter <= 0 || nominal <= 0 {
		return nominal
	}
	f := 1 + e.jitter*(2*e.rng.Float64()-1)
	return max(dataplane.Time(math.Round(float64(nominal)*f)), 0)
}

// Run implements Executor: the hop ends when a timer armed for Start + duration fires.
func (e *Emulated) Run(job *Job, done func(*Job)) {
	d := e.Duration(job.Nominal)
	wait := time.Until(e.clk.At(job.Start + d))
	time.AfterFunc(wait, func() {
		job.End = e.clk.Now()
		done(job)
	})
}

// Close implements Executor.
func (e *Emulated) Close() error { return nil }

// From converts a wall-clock instant to the clock's µs (negative before the clock started).
func (c Clock) From(t time.Time) dataplane.Time {
	return dataplane.Time(t.Sub(c.epoch) / time.Microsecond)
}
