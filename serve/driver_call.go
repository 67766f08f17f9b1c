package serve

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

// call is one accepted HTTP request on its way through the driver. The handler goroutine
// creates it and waits on resp; the driver answers exactly once.
type call struct {
	model   string
	ms      *modelSeries
	id      string
	payload *worker.Payload
	// at is the request's true arrival: when its first bytes were read off the socket (the
	// engine's deadline counts from it); received is the driver's time when it took
	// the call; fed when it was handed to the engine (later than received only across a
	// migration).
	at, received, fed dataplane.Time
	// attrs are the request's attributes for the engine; deadline, when > 0, overrides the
	// application's SLO; onHop is the front end's per-hop callback (Request.OnHop).
	attrs    dataplane.Attrs
	deadline dataplane.Time
	onHop    func(HopEvent)
	// group is the client request this one is a choice of (Request.Choices; nil: its only
	// choice).
	group *ChoiceGroup
	// req is the engine's ID of the request (valid once fed).
	req dataplane.ReqID
	// res is the driver's answer, written once before done is signalled (done has room for
	// the one signal, so the driver never waits for a handler that left). The answer
	// travels in the call rather than in the channel: a channel of a pointer-holding type
	// costs a second allocation for its buffer, and a result is large to copy twice.
	res  result
	done chan struct{}
	// ans is the front end's Answer built from res (Ticket.Submit): it lives in the call so
	// that answering allocates nothing more.
	ans      Answer
	answered bool
	// cancelled is set by the driver when the call's client left before its answer: the
	// answer is then counted as cancelled, whatever the engine made of the request.
	cancelled bool
	// cancelDone is closed once the driver has handled the call's cancellation (cancel).
	cancelDone chan struct{}
	// own is the request's payload as it arrived (payload points to it until a worker
	// replaces it) and stages the backing of its timing's first stage: both are allocated
	// with the call.
	own    worker.Payload
	stages [1]kserve.StageTiming
	// got is how many output tokens of an LLM request reached its client so far, and gotAt
	// when the last of them did (engine time): the inter-token intervals and, for a stream
	// its client left, the tokens it received (vllm:generation_tokens_total).
	got   int
	gotAt dataplane.Time
}

// newCall makes a call for a request whose input is in (nil: none).
func newCall(model string, ms *modelSeries, id string, at dataplane.Time, in *kserve.TensorJSON) *call {
	c := &call{model: model, ms: ms, id: id, at: at, done: make(chan struct{}, 1)}
	if in != nil {
		c.own.Tensor = *in
	}
	c.payload = &c.own
	return c
}

// reply hands the answer to the call's handler (exactly once: the caller checked answered).
func (c *call) reply(res result) {
	c.res = res
	c.done <- struct{}{}
}

// result is the driver's answer; the handler goroutine turns it into JSON so encoding never
// runs on the driver's single goroutine.
type result struct {
	status   int // 200, 404, 500 (engine error), 502 (worker error) or 503
	outcome  string
	reason   string
	stage    string
	estimate int64
	err      string
	timing   kserve.Timing
	payload  *worker.Payload
	res      dataplane.Result
	// answeredBy is the model (Stage.Model, else the stage) of the last hop when a model
	// reported its certainty (a cascade: the stage that answered); "" otherwise.
	answeredBy string
	// finished is the engine's time of a 200 answer's completion: the handler measures the
	// delivery from it (deliveryTracker).
	finished dataplane.Time
}

// tracker wraps an executor: it counts running jobs so that a retired executor (after a
// reload, or at exit) is closed only when its last job is done, whoever finishes last.
type tracker struct {
	worker.Executor
	running atomic.Int64
	retired atomic.Bool
	once    sync.Once
	log     *slog.Logger
}

func (t *tracker) start() { t.running.Add(1) }

func (t *tracker) finish() {
	if t.running.Add(-1) == 0 && t.retired.Load() {
		t.close()
	}
}

func (t *tracker) retire() {
	t.retired.Store(true)
	if t.running.Load() == 0 {
		t.close()
	}
}

func (t *tracker) close() {
	t.once.Do(func() {
		if err := t.Executor.Close(); err != nil && t.log != nil {
			t.log.Warn("closing workers", "kind", t.Executor.Kind(), "err", err)
		}
	})
}
