package serve

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

// A request whose client left before its answer (Server.Submit's ctx ended, the HTTP
// connection closed) is withdrawn from the engine and counted with outcome "cancelled";
// its status, never sent, is nginx's 499 "client closed request".
const (
	outcomeCancelled = "cancelled"
	statusCancelled  = 499
)

// Request is one request for Server.Submit.
type Request struct {
	// Model is the plan's application name.
	Model string
	ID    string
	// Input is the request's input tensor; nil means none (emulated workers need no data; a
	// front end whose requests carry text, such as an LLM API, gives token counts in Attrs).
	Input *kserve.TensorJSON
	// Attrs are handed to the engine at arrival: class, priority, prompt and output tokens,
	// the validation sample a cascade request stands for.
	Attrs dataplane.Attrs
	// Arrived is the request's true arrival (when the front end read it off the socket);
	// zero means now. The deadline counts from it.
	Arrived time.Time
	// Deadline, when > 0, overrides the application's SLO for this request (an LLM request
	// class's own objective).
	Deadline time.Duration
	// OnHop, when set, is called on the driver's goroutine each time one of the request's
	// hops finishes (a stage's batch, an LLM instance's iteration), before the request's
	// answer. It must not block: a streaming front end hands the event to its own goroutine.
	OnHop func(HopEvent)
	// RefusedStatus, when set, is the HTTP status the front end answers a request refused
	// before intake with (the door closed for reason, the in-flight bound: "overload", a
	// shutdown: "shutdown"); the refusal is counted under it in plan_rejected_total{code},
	// so the metrics say what the client saw (the OpenAI API answers an
	// overload 429). nil: 503, the KServe HTTP answer. The Answer's Status stays 503.
	RefusedStatus func(reason string) int
	// Size, when > 0, is the request's declared size in bytes before its body is read (HTTP's
	// Content-Length): Arrive refuses one above --max-body (413) before the door.
	Size int64
	// RefuseStale has Ticket.Submit refuse at intake (503, reason deadline) a request already
	// as old as its model's SLO: a front end whose reading and decoding of the body may take
	// that long (a slow client, a starved machine) spares the driver an event on it.
	RefuseStale bool
	// Choices, when set, is the group of engine requests this one is a choice of: one client
	// request asking for several (the OpenAI API's n), each served as its own sequence.
	// Metrics that vLLM keeps per client request count the group once.
	Choices *ChoiceGroup
}

// HopEvent is one finished hop of a request (Request.OnHop).
type HopEvent struct {
	// Stage and Worker name the hop; both are empty (and Hop −1) for tokens a policy timer
	// showed (TimerTokenReporter).
	Stage, Worker string
	Hop           int
	// StartUs and EndUs are the hop's execution on the server's clock.
	StartUs, EndUs int64
	// Result is what the stage reported about the request (branch, exit, certainty, label).
	Result dataplane.Result
	// Tokens, when HasTokens, is how many output tokens of an LLM request have reached its
	// client after this hop (TokenReporter): a streaming front end sends up to it. Without
	// it, a front end counts one token per hop.
	Tokens    int
	HasTokens bool
}

// TokenReporter is implemented by LLM policies that know how many of a request's output
// tokens its client has seen (QLM's engine model: prefill chunks produce none, and the output
// delay holds a token one step, LLM engine digest §2.5). The driver then reports each hop
// after the policy has applied it, with the count, so a stream shows its tokens when the
// simulator stamps them.
type TokenReporter interface {
	VisibleTokens(id dataplane.ReqID) (n int, ok bool)
}

// TimerTokenReporter is a TokenReporter whose own timers can show tokens: an idle LLM engine
// still ends the output-only steps that deliver what its output delay holds (LLM engine
// digest §2.5), with no batch ending. After the policy has handled a timer, TimerTokens
// names the requests still streaming whose count it grew; the driver
// reports each as it reports a hop, so with output_delay_steps ≥ 2 a tail's tokens show a
// step apart, as the simulator stamps them, not together at the completion. The list is the
// policy's to reuse: it is valid until the policy handles the next event.
type TimerTokenReporter interface {
	TokenReporter
	TimerTokens() []dataplane.ReqID
}

// Frontend is a system's own API on `plan serve` (QLM's OpenAI-compatible API, DyOrc's
// workflow runs), beside the KServe v2 API every plan gets. Routes is called once when the
// server starts and registers its handlers on mux ("POST /v1/completions"); they reach the
// engine through s.Submit. A reload may switch the plan to another system, so a handler
// checks s.Deployment().Kind and answers a clear error when the active plan is not its own.
type Frontend interface {
	Routes(s *Server, mux *http.ServeMux)
}

// FrontendOptions is implemented by a Frontend with `plan serve` settings of its own (a
// durable queue's directory, remote engines): Options is a pointer to the struct that holds
// them at their defaults, its `flag`-tagged fields bound to flags of `plan serve` before
// parsing (internal/base/optflag), as a planner's are to `plan solve`'s.
type FrontendOptions interface {
	Options() any
}

// A Frontend that holds resources (a queue, connections) implements io.Closer: Shutdown
// closes it after the drain.

// Logger returns the server's logger (Options.Log), for front ends' own messages.
func (s *Server) Logger() *slog.Logger { return s.opts.Log }

// Deployment returns the deployment being served now (read-only: it belongs to the driver).
func (s *Server) Deployment() *dataplane.Deployment {
	if g := s.active.Load(); g != nil {
		return g.dep
	}
	return nil
}

// Clock returns the server's clock (µs since start), on which Timing and HopEvent are given.
func (s *Server) Clock() worker.Clock { return s.clk }

// WriteTimeout is the longest one write to a client may block (`--write-timeout`): a front
// end that writes several times (a stream) sets it before each, so a client that stops
// reading is cut off instead of holding its connection and handler.
func (s *Server) WriteTimeout() time.Duration { return s.opts.WriteTimeout }
