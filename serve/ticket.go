package serve

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/kserve"
)

// A front end that reads a request's body itself (the KServe v2 HTTP/JSON handler) reaches
// the driver in two steps, so that the door is checked before the body is read and a refused
// client never costs the server its body: Arrive (the model, a shutdown, the declared size,
// the door, the arrival observer) when the headers are in, then Ticket.Submit (the
// request's age against its SLO, --max-inflight, the engine) once the body is decoded, and
// Delivered once the answer is written. Server.Submit is the two steps back to back.

// Ticket is a request that passed the door (Arrive) and may now be submitted once
// (Ticket.Submit). It is a value: taking one costs no allocation.
type Ticket struct {
	s     *Server
	model string
	spec  *modelSpec
	at    dataplane.Time
}

// Input is the model's input tensor spec, to decode the request's body against
// (kserve.DecodeInfer checks the tensor as Submit does).
func (t Ticket) Input() kserve.TensorSpec { return t.spec.in }

// Output is the model's output tensor spec (the one output a plan's model answers with).
func (t Ticket) Output() kserve.TensorSpec { return t.spec.out }

// Arrive admits req to the server before its body is read: it reads req's Model, Arrived,
// Size, RefusedStatus and Attrs (what the arrival observer sees). A nil Answer admits it with
// the Ticket; else the Answer is the refusal to send, already counted in the metrics: 404
// (unknown model), 413 (Size above --max-body, Reason "body-too-large") or 503 at stage
// intake (a shutdown, the door closed for Reason; RetryUs is how long the door stays closed).
func (s *Server) Arrive(req Request) (Ticket, *Answer) {
	now := s.clk.Now()
	at := now
	if !req.Arrived.IsZero() {
		// A front end that read the request off the socket earlier gives its true arrival;
		// never later than now, never before the server's clock started.
		at = min(max(s.clk.From(req.Arrived), 1), now) // the engine reads At 0 as "now"
	}
	model := req.Model
	s.arrivals.Add(1)
	spec, g, ok := s.model(model)
	if !ok {
		s.m.reject(404, "unknown-model")
		names := ""
		if g != nil {
			for i, a := range g.dep.Apps {
				if i > 0 {
					names += ", "
				}
				names += a.Name
			}
		}
		return Ticket{}, &Answer{Status: 404, Err: fmt.Sprintf("model %q not found: this server serves %s", model, names)}
	}
	if s.closing.Load() {
		return Ticket{}, s.refusal(req, string(dataplane.DropShutdown), "the server is shutting down", 0)
	}
	if req.Size > s.opts.MaxBody {
		s.m.reject(413, "body-too-large")
		return Ticket{}, &Answer{Status: 413, Reason: "body-too-large", Err: fmt.Sprintf("request body larger than --max-body %d bytes", s.opts.MaxBody)}
	}
	s.observeArrival(at, model, req.Attrs)
	dr := &g.doors[g.apps[model]]
	if until := dataplane.Time(dr.closedUntil.Load()); at < until {
		// The policy (or the driver's estimate) says a request arriving now cannot finish
		// by its deadline: refuse it before its body is read and decoded.
		reason := "overload"
		if p := dr.reason.Load(); p != nil {
			reason = *p
		}
		return Ticket{}, s.refusal(req, reason, fmt.Sprintf("refused at the door (%s): a request arriving now cannot finish within its SLO", reason), until-at)
	}
	return Ticket{s: s, model: model, spec: spec, at: at}, nil
}

// refusal counts and returns a refusal at intake: 503 (the front end's RefusedStatus in the
// metrics), with the reason and how long until the door reopens.
func (s *Server) refusal(req Request, reason, msg string, retry dataplane.Time) *Answer {
	code := 503
	if req.RefusedStatus != nil {
		code = req.RefusedStatus(reason)
	}
	s.m.reject(code, reason)
	s.m.drop(req.Model, "intake", reason)
	return &Answer{Status: 503, Reason: reason, Stage: "intake", RetryUs: int64(retry), Err: msg, refused: true}
}

// Refused reports whether the driver refused the request at intake, before the engine saw
// it (Arrive's door and shutdown, Ticket.Submit's age, --max-inflight and shutdown checks):
// a front end answers such a refusal with when to retry (RetryUs).
func (a *Answer) Refused() bool { return a.refused }

// Submit serves the ticket's request: it reads req's ID, Input (already checked against
// Input()), Attrs, Deadline, OnHop, RefusedStatus and RefuseStale, and waits for the answer.
// It refuses at intake (503, counted) a request already as old as its SLO (RefuseStale), one
// beyond --max-inflight, or one that meets a shutdown. ctx ending first returns ctx's error
// and cancels the request (the driver withdraws it from the engine). An answer from the
// engine holds its --max-inflight slot until Delivered.
func (t Ticket) Submit(ctx context.Context, req Request) (*Answer, error) {
	return t.submit(ctx, req, req.Input)
}

// submit is Submit with the input apart from req: the driver copies it into the call, so in
// does not escape, and Server.Submit's checked copy of it stays on its stack.
func (t Ticket) submit(ctx context.Context, req Request, in *kserve.TensorJSON) (*Answer, error) {
	s, spec, at := t.s, t.spec, t.at
	req.Model = t.model
	if req.RefuseStale {
		if age := s.clk.Now() - at; age >= dataplane.Time(spec.sloUs) {
			// Reading and decoding took the whole SLO (a slow client, a starved machine):
			// the request cannot finish in time, and the driver need not spend an event on it.
			a := s.refusal(req, string(dataplane.DropDeadline), fmt.Sprintf("refused at the door (deadline): the request is %d µs old, its SLO %d µs", age, spec.sloUs), 0)
			a.Timing = kserve.Timing{LatencyUs: int64(age), SLOUs: spec.sloUs, IntakeUs: int64(age)}
			return a, nil
		}
	}
	var deadline dataplane.Time
	if req.Deadline < 0 {
		s.m.reject(400, "bad-request")
		return &Answer{Status: 400, Err: fmt.Sprintf("deadline: %s: must not be negative", req.Deadline)}, nil
	}
	if req.Deadline > 0 {
		deadline = at + dataplane.Time(req.Deadline/time.Microsecond)
	}
	if s.inflight.Add(1) > int64(s.opts.MaxInFlight) {
		s.inflight.Add(-1)
		return s.refusal(req, "overload", fmt.Sprintf("the server holds %d requests (--max-inflight)", s.opts.MaxInFlight), 0), nil
	}
	c := newCall(t.model, spec.series, req.ID, at, in)
	c.attrs, c.deadline, c.onHop, c.group = req.Attrs, deadline, req.OnHop, req.Choices
	if !s.d.submit(c) {
		s.inflight.Add(-1)
		return s.refusal(req, string(dataplane.DropShutdown), "the server is shutting down", 0), nil
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		// The caller's client left (or its deadline passed): withdraw the request; its
		// answer lands in the call and its buffered channel.
		s.d.cancel(c)
		s.inflight.Add(-1)
		return nil, ctx.Err()
	}
	// The answer lives in the call, allocated already: the hot path allocates no Answer.
	res, a := &c.res, &c.ans
	*a = Answer{Status: res.status, Outcome: res.outcome, Timing: res.timing, Reason: res.reason, Stage: res.stage, EstimateUs: res.estimate, Result: res.res, AnsweredBy: res.answeredBy,
		finished: res.finished, held: true}
	switch res.status {
	case 200:
		a.Output = kserve.TensorJSON{Name: spec.out.Name, Datatype: spec.out.Datatype}
		if res.payload != nil && in != nil {
			// The worker's tensor as it is: its data is not copied.
			a.Output = res.payload.Tensor
			if a.Output.Name == "" || a.Output.Name == spec.in.Name {
				a.Output.Name = spec.out.Name
			}
		}
	case 503:
		a.Err = fmt.Sprintf("request dropped at %s: %s", res.stage, res.reason)
	default:
		a.Err = res.err
		if res.stage != "" {
			a.Err = fmt.Sprintf("stage %s: %s", res.stage, res.err)
		}
	}
	return a, nil
}

// Delivered tells the server that a's answer reached the front end's client (its write
// returned): a 200's delivery time (deliveryTracker, the margin the engine plans with) is
// measured up to now, and the request's --max-inflight slot is freed. It is safe on any
// Answer, and once only takes effect.
func (s *Server) Delivered(a *Answer) {
	if a == nil || !a.held {
		return
	}
	a.held = false
	if a.Status == 200 {
		s.d.delivery.observe(int64(s.d.clk.Now() - a.finished))
	}
	s.inflight.Add(-1)
}

// Reject counts a front end's own refusal of a request it could not read or decode (400 bad
// input, 408 a body too slow, 413 a body too large) in plan_rejected_total{code, reason}.
func (s *Server) Reject(code int, reason string) { s.m.reject(code, reason) }

// Parameters are the answer's KServe v2 response parameters: which model answered, at which
// stage after how many hops, and with what certainty and label (nil when no model reported
// a certainty).
func (a *Answer) Parameters() map[string]any {
	if a.AnsweredBy == "" {
		return nil
	}
	p := map[string]any{"answered_by": a.AnsweredBy, "hops": len(a.Timing.Stages),
		"certainty": math.Round(float64(a.Result.Certainty)*1e6) / 1e6, "label": a.Result.Label}
	if n := len(a.Timing.Stages); n > 0 {
		p["stage"] = a.Timing.Stages[n-1].Stage
	}
	return p
}
