package kservegrpc

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
	"github.com/plan-dev/plan/serve/worker"
)

// gatedExecutor holds every hop until its gate opens.
type gatedExecutor struct {
	*worker.Emulated
	gate chan struct{}
	once sync.Once
}

func (e *gatedExecutor) Run(job *worker.Job, done func(*worker.Job)) {
	go func() {
		<-e.gate
		e.Emulated.Run(job, done)
	}()
}

func (e *gatedExecutor) open() { e.once.Do(func() { close(e.gate) }) }

// TestDeadlineCancels: a gRPC call whose context ends (its deadline passes, its client
// cancels) before its answer has its request cancelled in the server:
// counted as cancelled, never completed, and no longer in flight once its batch ends.
func TestDeadlineCancels(t *testing.T) {
	var ex *gatedExecutor
	s, err := serve.New(serve.Options{Plan: loadPlan(t, "wide.json"), Deploy: testDeploy, Policies: testPolicies,
		NewExecutor: func(clk worker.Clock, _ *dataplane.Deployment, _ *formats.Plan) (worker.Executor, error) {
			ex = &gatedExecutor{Emulated: worker.NewEmulated(clk, 0, 1), gate: make(chan struct{})}
			return ex, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	defer ex.open()
	// The server's handler returns only once the driver has withdrawn the request.
	handled := make(chan struct{}, 1)
	g := New(s, grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		handled <- struct{}{}
		return resp, err
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(sctx, g, ln) }()
	defer func() { stop(); <-served }()
	conn, err := Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	var text string
	wait := func(series ...string) bool {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			resp, err := http.Get(ts.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			text = string(b)
			all := true
			for _, s := range series {
				all = all && strings.Contains(text, s)
			}
			if all {
				return true
			}
		}
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := &pb.ModelInferRequest{ModelName: "w", Inputs: []*pb.ModelInferRequest_InferInputTensor{
		{Name: "input", Datatype: "FP32", Shape: []int64{1, 4}, Contents: &pb.InferTensorContents{Fp32Contents: []float32{1, 2, 3, 4}}}}}
	errc := make(chan error, 1)
	go func() {
		_, err := pb.NewGRPCInferenceServiceClient(conn).ModelInfer(ctx, req)
		errc <- err
	}()
	if !wait(`plan_requests_in_flight{model="w"} 1`) {
		t.Fatalf("the call never reached the driver:\n%s", text)
	}
	cancel() // as its deadline passing would
	if err := <-errc; status.Code(err) != codes.Canceled {
		t.Fatalf("%v: want CANCELED", err)
	}
	<-handled
	ex.open()
	if !wait(`plan_responses_total{model="w",outcome="cancelled"} 1`, `plan_requests_in_flight{model="w"} 0`) {
		t.Errorf("the call whose context ended is not counted as cancelled:\n%s", text)
	}
}
