package serve

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/kserve"
)

// The transport-neutral entry points for front ends other than the HTTP/JSON handler (the
// KServe v2 gRPC service, serve/kservegrpc): the same door, in-flight bound, driver, engine,
// admission and metrics as POST /v2/models/{model}/infer, without HTTP.

// Answer is the outcome of Infer.
type Answer struct {
	// Status is what the HTTP API would answer: 200, 400 (bad input), 404 (unknown model),
	// 500, 502 or 503 (dropped or refused: Reason, Stage).
	Status int
	// Output is the model's output tensor (Status 200).
	Output  kserve.TensorJSON
	Outcome string
	Timing  kserve.Timing
	// Reason and Stage say why and where a 503 was dropped ("overload" at "intake" when the
	// server refused it for lack of room); EstimateUs is the policy's estimate, RetryUs how
	// long the door stays closed.
	Reason, Stage       string
	EstimateUs, RetryUs int64
	// Err is the message of any non-200 answer.
	Err string
	// Result is what the request's stages last reported about it (Engine.SetResult): the
	// branch a workflow took, the certainty and label of the cascade stage that answered.
	Result dataplane.Result
	// AnsweredBy is the model whose output answered the request when the models report
	// certainties (a cascade: the stage where the request left); "" otherwise.
	AnsweredBy string
}

// Infer serves one request for model: in is its one input tensor (Data a JSON array, as in
// the HTTP API; its name may be empty). The request arrives when Infer is called; ctx
// ending before the answer returns ctx's error (the driver's answer is then discarded).
func (s *Server) Infer(ctx context.Context, model, id string, in kserve.TensorJSON) (*Answer, error) {
	return s.Submit(ctx, Request{Model: model, ID: id, Input: &in})
}

// Submit serves one request through the same door, in-flight bound, driver, engine, admission
// and metrics as POST /v2/models/{model}/infer: the entry point of every front end that is
// not the KServe HTTP/JSON handler (KServe gRPC, a system's own API: serve.Frontend). ctx
// ending before the answer (the client disconnected, a gRPC deadline passed) returns ctx's
// error and cancels the request: the driver withdraws it from the engine (Engine.Cancel) and
// counts it as cancelled, so a request nobody waits for stops costing GPU time.
func (s *Server) Submit(ctx context.Context, req Request) (*Answer, error) {
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
		return &Answer{Status: 404, Err: fmt.Sprintf("model %q not found: this server serves %s", model, names)}, nil
	}
	refuse := func(reason, msg string, retry dataplane.Time) *Answer {
		code := 503
		if req.RefusedStatus != nil {
			code = req.RefusedStatus(reason)
		}
		s.m.reject(code, reason)
		s.m.drop(model, "intake", reason)
		return &Answer{Status: 503, Reason: reason, Stage: "intake", RetryUs: int64(retry), Err: msg}
	}
	if s.closing.Load() {
		return refuse(string(dataplane.DropShutdown), "the server is shutting down", 0), nil
	}
	s.observeArrival(at, model, req.Attrs)
	app := g.apps[model]
	dr := &g.doors[app]
	if until := dataplane.Time(dr.closedUntil.Load()); at < until {
		reason := "overload"
		if p := dr.reason.Load(); p != nil {
			reason = *p
		}
		return refuse(reason, fmt.Sprintf("refused at the door (%s): a request arriving now cannot finish within its SLO", reason), until-at), nil
	}
	var in kserve.TensorJSON
	if req.Input != nil {
		in = *req.Input
		if err := kserve.CheckInput(&in, spec.in); err != nil {
			s.m.reject(400, "bad-request")
			return &Answer{Status: 400, Err: err.Error()}, nil
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
		return refuse("overload", fmt.Sprintf("the server holds %d requests (--max-inflight)", s.opts.MaxInFlight), 0), nil
	}
	defer s.inflight.Add(-1)
	c := newCall(model, spec.series, req.ID, at, &in)
	c.attrs, c.deadline, c.onHop = req.Attrs, deadline, req.OnHop
	if !s.d.submit(c) {
		return refuse(string(dataplane.DropShutdown), "the server is shutting down", 0), nil
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		// The caller's client left (or its deadline passed): withdraw the request.
		s.d.cancel(c)
		return nil, ctx.Err()
	}
	res := &c.res
	if res.status == 200 {
		// Up to the front end's hand-off: its own write follows.
		s.d.delivery.observe(int64(s.d.clk.Now() - res.finished))
	}
	a := &Answer{Status: res.status, Outcome: res.outcome, Timing: res.timing, Reason: res.reason, Stage: res.stage, EstimateUs: res.estimate, Result: res.res, AnsweredBy: res.answeredBy}
	switch res.status {
	case 200:
		a.Output = kserve.TensorJSON{Name: spec.out.Name, Datatype: spec.out.Datatype}
		if res.payload != nil && req.Input != nil {
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

// ModelInfo returns the metadata GET /v2/models/{model} answers (false: unknown model).
func (s *Server) ModelInfo(model string) (kserve.ModelMetadata, bool) {
	spec, g, ok := s.model(model)
	if !ok {
		return kserve.ModelMetadata{}, false
	}
	return kserve.ModelMetadata{Name: model, Versions: []string{kserve.ModelVersion}, Platform: "plan-" + g.exec.Kind(), Inputs: []kserve.TensorSpec{spec.in},
		Outputs: []kserve.TensorSpec{spec.out}, SLOUs: spec.sloUs, RateRPS: spec.rateRPS}, true
}

// Ready reports what GET /v2/health/ready answers: not shutting down, and workers ready.
func (s *Server) Ready() bool { return !s.closing.Load() && s.m.isReady() }

// Models lists the models (applications) of the plan being served.
func (s *Server) Models() []string {
	g := s.active.Load()
	if g == nil {
		return nil
	}
	out := make([]string, len(g.dep.Apps))
	for i, a := range g.dep.Apps {
		out[i] = a.Name
	}
	return out
}

// Specs returns a model's input and output tensor specs (false: unknown model), without
// ModelInfo's allocations (the gRPC hot path).
func (s *Server) Specs(model string) (in, out kserve.TensorSpec, ok bool) {
	spec, _, ok := s.model(model)
	if !ok {
		return kserve.TensorSpec{}, kserve.TensorSpec{}, false
	}
	return spec.in, spec.out, true
}

// parameters are the answer's KServe v2 response parameters: which model answered, at which
// stage after how many hops, and with what certainty and label (nil when no model reported
// a certainty).
func (r *result) parameters() map[string]any {
	if r.answeredBy == "" {
		return nil
	}
	p := map[string]any{"answered_by": r.answeredBy, "hops": len(r.timing.Stages),
		"certainty": math.Round(float64(r.res.Certainty)*1e6) / 1e6, "label": r.res.Label}
	if n := len(r.timing.Stages); n > 0 {
		p["stage"] = r.timing.Stages[n-1].Stage
	}
	return p
}
