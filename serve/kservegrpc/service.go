// Package kservegrpc serves the KServe v2 gRPC protocol (Open Inference Protocol, ecosystem
// digest §1) in front of a serve.Server: `plan serve --grpc-addr`. Every RPC goes
// through the server's transport-neutral API (serve.Server.Infer, ModelInfo, Ready), so gRPC
// requests share the HTTP path's door, in-flight bound, driver, engine, admission policy and
// metrics. Sender is the client side `plan load --grpc` uses.
//
// Status codes: a request the policy dropped is UNAVAILABLE with the drop reason and stage in
// the message (and in the trailers plan-drop-reason, plan-drop-stage, retry-after-ms); one
// refused for overload (the in-flight bound or a door closed for overload) is
// RESOURCE_EXHAUSTED; bad input is INVALID_ARGUMENT naming the tensor; an unknown model
// NOT_FOUND, and so is an unknown model version (kserve.CheckModelVersion: "1" or empty, the
// same rule as HTTP's /v2/models/{model}/versions/{version} routes).
//
// Beside the inference service the server registers grpc.health.v1 (Kubernetes gRPC probes;
// SERVING exactly while GET /v2/health/ready is 200) and server reflection (grpcurl list and
// describe), see health.go.
package kservegrpc

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/kserve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
)

// Service implements GRPCInferenceService over a serve.Server.
type Service struct {
	pb.UnimplementedGRPCInferenceServiceServer
	s *serve.Server
}

// New returns a gRPC server with the inference, health and reflection services registered.
// Health checks answer from s's readiness at each Check; Start also keeps Watch streams
// current.
func New(s *serve.Server, opts ...grpc.ServerOption) *grpc.Server {
	g, _ := newServer(s, opts...)
	return g
}

// newServer is New, also returning the health service (Start keeps it current for Watch).
func newServer(s *serve.Server, opts ...grpc.ServerOption) (*grpc.Server, *health) {
	opts = append([]grpc.ServerOption{serverCreds(), grpc.ChainUnaryInterceptor(reserveOnlyHealth), grpc.ChainStreamInterceptor(reserveOnlyHealthStream)}, opts...)
	g := grpc.NewServer(opts...)
	pb.RegisterGRPCInferenceServiceServer(g, &Service{s: s})
	h := registerHealth(g, s)
	reflection.Register(g)
	return g, h
}

// gracefulStopTimeout bounds Serve's graceful stop: streams still open then (a client's
// reflection stream left open) are cut.
const gracefulStopTimeout = 30 * time.Second

// Serve runs g on ln until ctx ends, then stops gracefully (in-flight RPCs finish, within
// gracefulStopTimeout).
func Serve(ctx context.Context, g *grpc.Server, ln net.Listener) error {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			t := time.AfterFunc(gracefulStopTimeout, g.Stop)
			g.GracefulStop()
			t.Stop()
		case <-done:
		}
	}()
	err := g.Serve(ln)
	close(done)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// ServerLive implements the RPC: a server that answers is live.
func (x *Service) ServerLive(context.Context, *pb.ServerLiveRequest) (*pb.ServerLiveResponse, error) {
	return &pb.ServerLiveResponse{Live: true}, nil
}

// ServerReady implements the RPC as GET /v2/health/ready.
func (x *Service) ServerReady(ctx context.Context, _ *pb.ServerReadyRequest) (*pb.ServerReadyResponse, error) {
	return &pb.ServerReadyResponse{Ready: x.s.Readiness(ctx) == nil}, nil
}

// ModelReady implements the RPC: NOT_FOUND for a model the plan does not serve or a version
// it does not have.
func (x *Service) ModelReady(ctx context.Context, r *pb.ModelReadyRequest) (*pb.ModelReadyResponse, error) {
	if _, ok := x.s.ModelInfo(r.GetName()); !ok {
		return nil, x.notFound(r.GetName())
	}
	if err := kserve.CheckModelVersion(r.GetName(), r.GetVersion()); err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	return &pb.ModelReadyResponse{Ready: x.s.Readiness(ctx) == nil}, nil
}

// ServerMetadata implements the RPC as GET /v2.
func (x *Service) ServerMetadata(context.Context, *pb.ServerMetadataRequest) (*pb.ServerMetadataResponse, error) {
	return &pb.ServerMetadataResponse{Name: "plan", Version: "v2", Extensions: []string{}}, nil
}

// ModelMetadata implements the RPC as GET /v2/models/{model}.
func (x *Service) ModelMetadata(_ context.Context, r *pb.ModelMetadataRequest) (*pb.ModelMetadataResponse, error) {
	md, ok := x.s.ModelInfo(r.GetName())
	if !ok {
		return nil, x.notFound(r.GetName())
	}
	if err := kserve.CheckModelVersion(r.GetName(), r.GetVersion()); err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	out := &pb.ModelMetadataResponse{Name: md.Name, Versions: md.Versions, Platform: md.Platform}
	for _, t := range md.Inputs {
		out.Inputs = append(out.Inputs, &pb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
	}
	for _, t := range md.Outputs {
		out.Outputs = append(out.Outputs, &pb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
	}
	return out, nil
}

func (x *Service) notFound(name string) error {
	return status.Errorf(codes.NotFound, "model %q not found: this server serves %v", name, x.s.Models())
}

// ModelInfer implements the RPC: one input tensor (typed contents or raw; FP16 raw), served
// by serve.Server.Infer.
func (x *Service) ModelInfer(ctx context.Context, r *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	spec, outSpec, ok := x.s.Specs(r.GetModelName())
	if !ok {
		return nil, x.notFound(r.GetModelName())
	}
	if err := kserve.CheckModelVersion(r.GetModelName(), r.GetModelVersion()); err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	if len(r.GetInputs()) != 1 {
		return nil, status.Errorf(codes.InvalidArgument, "inputs: %d tensors: the model takes exactly one (%s)", len(r.GetInputs()), spec.Name)
	}
	isRaw := len(r.GetRawInputContents()) > 0
	if isRaw && len(r.GetRawInputContents()) != len(r.GetInputs()) {
		return nil, status.Errorf(codes.InvalidArgument, "raw_input_contents: %d entries for %d inputs: one per input, in order", len(r.GetRawInputContents()), len(r.GetInputs()))
	}
	for _, o := range r.GetOutputs() {
		if o.GetName() != outSpec.Name {
			return nil, status.Errorf(codes.InvalidArgument, "outputs: %s", kserve.UnexpectedOutput(r.GetModelName(), o.GetName(), outSpec.Name))
		}
	}
	in := r.GetInputs()[0]
	var raw []byte
	if isRaw {
		raw = r.GetRawInputContents()[0]
	}
	data, dtype, err := inputJSON(in, raw, isRaw, spec.Datatype)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	half := isRaw && in.GetDatatype() == "FP16" && dtype != "FP16"
	var trace int64
	var inTok, outTok int32
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(traceKey); len(v) > 0 {
			if trace, err = kserve.ParseTraceIndex(v[0]); err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
		}
		// An exactly replayed LLM trace's tokens (kserve.TraceTokensHeader).
		if v := md.Get(tokensKey); len(v) > 0 {
			if inTok, outTok, err = kserve.ParseTraceTokens(v[0]); err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
		}
	}
	a, err := x.s.Submit(ctx, serve.Request{Model: r.GetModelName(), ID: r.GetId(), Input: &kserve.TensorJSON{Name: in.GetName(), Shape: in.GetShape(), Datatype: dtype, Data: data},
		Attrs: dataplane.Attrs{Trace: trace, InTokens: inTok, OutTokens: outTok}, RefusedStatus: refusedStatus})
	if err != nil {
		return nil, status.FromContextError(err).Err()
	}
	if a.Status != 200 {
		if a.Status == 503 {
			_ = grpc.SetTrailer(ctx, dropTrailer(a))
		}
		return nil, answerError(in.GetName(), a)
	}
	out, rawOut, err := outputTensor(a.Output, isRaw, half)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	resp := &pb.ModelInferResponse{ModelName: r.GetModelName(), ModelVersion: kserve.ModelVersion, Id: r.GetId(),
		Outputs: []*pb.ModelInferResponse_InferOutputTensor{out},
		Parameters: map[string]*pb.InferParameter{
			"outcome":    {ParameterChoice: &pb.InferParameter_StringParam{StringParam: a.Outcome}},
			"latency_us": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: a.Timing.LatencyUs}},
		}}
	if a.Timing.FirstTokenUs > 0 {
		resp.Parameters["first_token_us"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: a.Timing.FirstTokenUs}}
	}
	if a.AnsweredBy != "" {
		// The models report certainties (a cascade): which one answered, as the HTTP
		// answer's parameters say.
		resp.Parameters["answered_by"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: a.AnsweredBy}}
		resp.Parameters["hops"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: int64(len(a.Timing.Stages))}}
		// The protocol's parameters have no floating-point choice: the certainty is a decimal.
		resp.Parameters["certainty"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: strconv.FormatFloat(float64(a.Result.Certainty), 'f', 6, 64)}}
		resp.Parameters["label"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: int64(a.Result.Label)}}
	}
	if isRaw {
		resp.RawOutputContents = [][]byte{rawOut}
	}
	return resp, nil
}

// refusedStatus is the HTTP equivalent of the gRPC status a refusal at intake is answered
// with (answerError): RESOURCE_EXHAUSTED for overload is 429, UNAVAILABLE 503 (gRPC's own
// HTTP mapping), the code plan_rejected_total counts it under.
func refusedStatus(reason string) int {
	if reason == "overload" {
		return 429
	}
	return 503
}

// traceKey is kserve.TraceIndexHeader as gRPC metadata (whose keys are lower case).
var traceKey = strings.ToLower(kserve.TraceIndexHeader)

// tokensKey is kserve.TraceTokensHeader as gRPC metadata.
var tokensKey = strings.ToLower(kserve.TraceTokensHeader)

// dropTrailer carries a drop's reason, stage, estimate and retry hint.
func dropTrailer(a *serve.Answer) metadata.MD {
	return metadata.Pairs("plan-drop-reason", a.Reason, "plan-drop-stage", a.Stage,
		"plan-estimate-us", strconv.FormatInt(a.EstimateUs, 10), "retry-after-ms", strconv.FormatInt((a.RetryUs+999)/1000, 10))
}

// answerError maps a non-200 answer to its status: 400 INVALID_ARGUMENT naming the tensor,
// 404 NOT_FOUND, 503 RESOURCE_EXHAUSTED for overload and UNAVAILABLE with the reason for
// every other drop, 502 (a worker failed) UNAVAILABLE, else INTERNAL.
func answerError(tensor string, a *serve.Answer) error {
	switch a.Status {
	case 400:
		return status.Errorf(codes.InvalidArgument, "input %q: %s", tensor, a.Err)
	case 404:
		return status.Error(codes.NotFound, a.Err)
	case 503:
		code := codes.Unavailable
		if a.Reason == "overload" {
			code = codes.ResourceExhausted
		}
		return status.Errorf(code, "%s (reason %s, stage %s)", a.Err, a.Reason, a.Stage)
	case 502:
		return status.Error(codes.Unavailable, a.Err)
	}
	return status.Error(codes.Internal, a.Err)
}

// DropReason returns the drop reason and stage from a failed ModelInfer's trailers (empty
// when the error was not a drop).
func DropReason(trailer metadata.MD) (reason, stage string) {
	if v := trailer.Get("plan-drop-reason"); len(v) > 0 {
		reason = v[0]
	}
	if v := trailer.Get("plan-drop-stage"); len(v) > 0 {
		stage = v[0]
	}
	return reason, stage
}

// Start listens on addr and serves the gRPC protocol for s in the background until ctx ends
// or stop is called (which waits for the server to stop). It returns the bound address.
func Start(ctx context.Context, s *serve.Server, addr string) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	// The same caps on open connections as the HTTP listener, with a
	// reserve for health checks (health.go).
	ln = s.LimitListener(ln)
	g, h := newServer(s)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.follow(ctx) // until ctx ends
		// Probes see NOT_SERVING while in-flight calls drain; Watch streams end.
		h.stop()
	}()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = Serve(ctx, g, ln)
	}()
	return ln.Addr().String(), func() { cancel(); <-done; <-served }, nil
}
