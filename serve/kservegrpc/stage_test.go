package kservegrpc

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plan-dev/plan/serve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
	"github.com/plan-dev/plan/serve/worker"
)

// fakeTriton is a KServe v2 gRPC endpoint that takes batches (as Triton does) and answers
// f(x) per element, raw in raw out; "fail" fails every request.
type fakeTriton struct {
	pb.UnimplementedGRPCInferenceServiceServer
	model string
	f     func(float32) float32
}

func (x *fakeTriton) ServerReady(context.Context, *pb.ServerReadyRequest) (*pb.ServerReadyResponse, error) {
	return &pb.ServerReadyResponse{Ready: true}, nil
}

func (x *fakeTriton) ModelMetadata(_ context.Context, r *pb.ModelMetadataRequest) (*pb.ModelMetadataResponse, error) {
	if r.Name != x.model {
		return nil, status.Errorf(codes.NotFound, "no model %q", r.Name)
	}
	return &pb.ModelMetadataResponse{Name: x.model, Platform: "fake",
		Inputs:  []*pb.ModelMetadataResponse_TensorMetadata{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}},
		Outputs: []*pb.ModelMetadataResponse_TensorMetadata{{Name: "y", Datatype: "FP32", Shape: []int64{-1, 3}}}}, nil
}

func (x *fakeTriton) ModelInfer(_ context.Context, r *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	if len(r.RawInputContents) != 1 || r.Inputs[0].Datatype != "FP32" {
		return nil, status.Error(codes.InvalidArgument, "want one raw FP32 input")
	}
	in := r.RawInputContents[0]
	out := make([]byte, 0, len(in))
	for i := 0; i+4 <= len(in); i += 4 {
		v := x.f(math.Float32frombits(binary.LittleEndian.Uint32(in[i:])))
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return &pb.ModelInferResponse{ModelName: x.model, Outputs: []*pb.ModelInferResponse_InferOutputTensor{{Name: "y", Datatype: "FP32", Shape: r.Inputs[0].Shape}},
		RawOutputContents: [][]byte{out}}, nil
}

func fakeEndpoint(t *testing.T, f *fakeTriton) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	pb.RegisterGRPCInferenceServiceServer(g, f)
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	return ln.Addr().String()
}

// TestRemoteStagesOverGRPC: `plan serve --workers remote` with grpc:// endpoints — every stage
// of a two-stage pipeline is a gRPC server taking batches; the answer is the composition.
func TestRemoteStagesOverGRPC(t *testing.T) {
	add := fakeEndpoint(t, &fakeTriton{model: "add", f: func(x float32) float32 { return x + 1 }})
	mul := fakeEndpoint(t, &fakeTriton{model: "mul", f: func(x float32) float32 { return x * 10 }})
	eps, err := worker.DecodeEndpoints("endpoints.yaml", []byte(fmt.Sprintf(`apiVersion: plan/v1
kind: Endpoints
stages:
  - stage: "m2/*/s0"
    model: add
    urls: [grpc://%s]
  - stage: "*"
    model: mul
    urls: [grpc://%s]
`, add, mul)))
	if err != nil {
		t.Fatal(err)
	}
	sc := NewStageClient()
	defer sc.Close()
	eps.SetTransport("grpc", sc)
	_, c, _ := start(t, serve.Options{Plan: loadPlan(t, "nic.json"), NewExecutor: worker.RemoteFactory(eps, nil)})
	r, err := c.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "m2", Inputs: []*pb.ModelInferRequest_InferInputTensor{{
		Name: "x", Datatype: "FP32", Shape: []int64{1, 3}, Contents: &pb.InferTensorContents{Fp32Contents: []float32{1, 2, 3}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Outputs[0].GetContents().GetFp32Contents(); fmt.Sprint(got) != "[20 30 40]" || r.Outputs[0].Name != "y" {
		t.Errorf("output %s %v, want y [20 30 40]", r.Outputs[0].Name, got)
	}

	// Without the transport attached, a grpc:// endpoint is an error naming it; a model the
	// endpoint lacks too.
	eps2, _ := worker.DecodeEndpoints("endpoints.yaml", []byte(fmt.Sprintf("apiVersion: plan/v1\nkind: Endpoints\nstages:\n  - stage: \"*\"\n    model: add\n    urls: [grpc://%s]\n", add)))
	o := serve.Options{Plan: loadPlan(t, "nic.json"), NewExecutor: worker.RemoteFactory(eps2, nil), Deploy: testDeploy, Policies: testPolicies}
	if _, err := serve.New(o); err == nil || !strings.Contains(err.Error(), "grpc://") {
		t.Errorf("no transport: %v", err)
	}
	eps2.SetTransport("grpc", sc)
	eps2.Stages[0].Model = "nope"
	if _, err := serve.New(o); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown model at the endpoint: %v", err)
	}
}
