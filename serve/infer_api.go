package serve

import (
	"context"

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
	// finished is the engine's time of a 200's completion, from which Delivered measures the
	// delivery; held says the answer still holds its --max-inflight slot (Delivered frees it).
	finished dataplane.Time
	held     bool
	// refused: the driver refused the request at intake (Refused).
	refused bool
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
// counts it as cancelled, so a request nobody waits for stops costing GPU time. It is Arrive,
// the input's check, Ticket.Submit and Delivered back to back.
func (s *Server) Submit(ctx context.Context, req Request) (*Answer, error) {
	t, refused := s.Arrive(req)
	if refused != nil {
		return refused, nil
	}
	// The input is checked on a copy (CheckInput names an unnamed tensor), the caller's left
	// as it is.
	var in kserve.TensorJSON
	var pin *kserve.TensorJSON
	if req.Input != nil {
		in, pin = *req.Input, &in
		if err := kserve.CheckInput(pin, t.spec.in); err != nil {
			s.m.reject(400, "bad-request")
			return &Answer{Status: 400, Err: err.Error()}, nil
		}
	}
	a, err := t.submit(ctx, req, pin)
	// Up to the front end's hand-off: its own write follows.
	s.Delivered(a)
	return a, err
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
