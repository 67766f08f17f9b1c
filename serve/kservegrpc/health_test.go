package kservegrpc

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/plan-dev/plan/serve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
)

// gateFront is a front end whose readiness the test sets (as a durable queue's reachability
// would).
type gateFront struct{ down atomic.Bool }

func (f *gateFront) Routes(*serve.Server, *http.ServeMux) {}
func (f *gateFront) Ready(context.Context) error {
	if f.down.Load() {
		return errors.New("queue unreachable")
	}
	return nil
}

// startFull runs s's gRPC protocol through Start (the listener `plan serve --grpc-addr`
// opens) and returns its address.
func startFull(t *testing.T, o serve.Options) (*serve.Server, string) {
	t.Helper()
	o.Plan, o.Deploy, o.Policies = loadPlan(t, "wide.json"), testDeploy, testPolicies
	s, err := serve.New(o)
	if err != nil {
		t.Fatal(err)
	}
	addr, stop, err := Start(context.Background(), s, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); _ = s.Shutdown(context.Background()) })
	return s, addr
}

// TestHealth: grpc.health.v1 answers for the whole server ("") and the inference service,
// SERVING exactly while GET /v2/health/ready would be 200: a front end's failed check and a
// shutdown make it NOT_SERVING; an unknown service is NOT_FOUND.
func TestHealth(t *testing.T) {
	f := &gateFront{}
	s, addr := startFull(t, serve.Options{Frontends: []serve.Frontend{f}})
	conn, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("Check(%q): %v", service, err)
		}
		return r.GetStatus()
	}
	services := []string{"", pb.GRPCInferenceService_ServiceDesc.ServiceName}
	for _, step := range []struct {
		name string
		act  func()
		want healthpb.HealthCheckResponse_ServingStatus
	}{
		{"ready", func() {}, healthpb.HealthCheckResponse_SERVING},
		{"front end not ready", func() { f.down.Store(true) }, healthpb.HealthCheckResponse_NOT_SERVING},
		{"front end back", func() { f.down.Store(false) }, healthpb.HealthCheckResponse_SERVING},
		{"shutting down", func() { _ = s.Shutdown(context.Background()) }, healthpb.HealthCheckResponse_NOT_SERVING},
	} {
		step.act()
		for _, svc := range services {
			if got := check(svc); got != step.want {
				t.Errorf("%s: Check(%q) = %v, want %v", step.name, svc, got, step.want)
			}
		}
	}
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope.Service"}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown service: %v, want NOT_FOUND", err)
	}
}

// TestHealthWatch: a Watch stream (what grpc-go's client-side health checking uses) sees
// readiness change without a Check.
func TestHealthWatch(t *testing.T) {
	f := &gateFront{}
	_, addr := startFull(t, serve.Options{Frontends: []serve.Frontend{f}})
	conn, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING} {
		if i == 1 {
			f.down.Store(true)
		}
		r, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetStatus() != want {
			t.Fatalf("update %d: %v, want %v", i, r.GetStatus(), want)
		}
	}
}

// TestReflection: the reflection service lists the inference, health and reflection
// services, as `grpcurl list` asks it, and describes the inference service's file.
func TestReflection(t *testing.T) {
	_, addr := startFull(t, serve.Options{})
	conn, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.CloseSend() }()
	if err := st.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"inference.GRPCInferenceService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v: no %s", names, want)
		}
	}
	if err := st.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "inference.GRPCInferenceService"}}); err != nil {
		t.Fatal(err)
	}
	if r, err = st.Recv(); err != nil || len(r.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Errorf("describe inference.GRPCInferenceService: %v %v", r.GetErrorResponse(), err)
	}
}

// TestHealthReserve: with the connection cap reached but for the reserve, the connection
// accepted into the reserve answers health checks and refuses inference calls
// (RESOURCE_EXHAUSTED), so a flood of clients never starves a kubelet's probe.
func TestHealthReserve(t *testing.T) {
	// MaxConns 2: the reserve is 1 slot (connlimit.Caps), the second connection's.
	_, addr := startFull(t, serve.Options{MaxConns: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := pb.NewGRPCInferenceServiceClient(first).ServerLive(ctx, &pb.ServerLiveRequest{}); err != nil {
		t.Fatalf("first connection: %v", err)
	}
	second, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	r, err := healthpb.NewHealthClient(second).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health check on the reserve connection: %v %v", r, err)
	}
	if _, err := pb.NewGRPCInferenceServiceClient(second).ServerLive(ctx, &pb.ServerLiveRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("inference call on the reserve connection: %v, want RESOURCE_EXHAUSTED", err)
	}
	if _, err := pb.NewGRPCInferenceServiceClient(first).ServerLive(ctx, &pb.ServerLiveRequest{}); err != nil {
		t.Errorf("first connection: %v", err)
	}
	// The refused client's connection was closed, so the reserve slot is free again: a new
	// probe connects (waiting for the slot rather than failing at the first refusal) and is
	// answered.
	probe, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	r, err = healthpb.NewHealthClient(probe).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("a new probe after the refusal: %v %v", r, err)
	}
}

// TestModelVersions: the one version rule (kserve.CheckModelVersion): "" and "1" are served,
// any other version is NOT_FOUND on every RPC that names one, as HTTP answers 404.
func TestModelVersions(t *testing.T) {
	_, c, _ := start(t, serve.Options{Plan: loadPlan(t, "wide.json")})
	ctx := context.Background()
	in := []*pb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 4}, Contents: &pb.InferTensorContents{Fp32Contents: []float32{1, 2, 3, 4}}}}
	for _, tc := range []struct {
		version string
		want    codes.Code
	}{{"", codes.OK}, {"1", codes.OK}, {"7", codes.NotFound}, {"latest", codes.NotFound}} {
		_, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "w", Version: tc.version})
		if status.Code(err) != tc.want {
			t.Errorf("ModelReady version %q: %v, want %v", tc.version, err, tc.want)
		}
		md, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "w", Version: tc.version})
		if status.Code(err) != tc.want {
			t.Errorf("ModelMetadata version %q: %v, want %v", tc.version, err, tc.want)
		} else if err == nil && !slices.Equal(md.GetVersions(), []string{"1"}) {
			t.Errorf("ModelMetadata versions %v, want [1]", md.GetVersions())
		}
		r, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "w", ModelVersion: tc.version, Inputs: in})
		if tc.want == codes.OK {
			// The emulated engine may drop under its own load; a served answer says version 1.
			if err == nil && r.GetModelVersion() != "1" {
				t.Errorf("ModelInfer version %q answered model_version %q, want \"1\"", tc.version, r.GetModelVersion())
			}
			if status.Code(err) == codes.NotFound {
				t.Errorf("ModelInfer version %q: %v", tc.version, err)
			}
		} else if status.Code(err) != tc.want {
			t.Errorf("ModelInfer version %q: %v, want %v", tc.version, err, tc.want)
		}
	}
}

// TestStopWithWatch: stopping the gRPC listener ends open health Watch streams (after
// NOT_SERVING) instead of waiting for their clients: a graceful stop waits for every
// stream, and a Watch never ends on its own, so `plan serve` would never exit while a
// client-side health checker watched it.
func TestStopWithWatch(t *testing.T) {
	s, err := serve.New(serve.Options{Plan: loadPlan(t, "wide.json"), Deploy: testDeploy, Policies: testPolicies})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	addr, stop, err := Start(context.Background(), s, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first update: %v %v", r, err)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("stop still waits for the Watch stream after a minute")
	}
	for {
		r, err := w.Recv()
		if err != nil {
			break // the stream ended
		}
		if r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("update while stopping: %v, want NOT_SERVING", r.GetStatus())
		}
	}
}
