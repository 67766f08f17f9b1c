package kservegrpc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
)

// gatedExecutor holds every hop until its gate opens.
type gatedExecutor struct {
	*serve.Emulated
	gate    chan struct{}
	once    sync.Once
	started chan struct{} // closed when the first hop reaches the gate
	first   sync.Once
}

func (e *gatedExecutor) Run(job *serve.Job, done func(*serve.Job)) {
	if e.started != nil {
		e.first.Do(func() { close(e.started) })
	}
	go func() {
		<-e.gate
		e.Emulated.Run(job, done)
	}()
}

func (e *gatedExecutor) open() { e.once.Do(func() { close(e.gate) }) }

// TestDeadlineCancels: a gRPC call whose deadline passes before its answer has its request
// cancelled in the server (issue 29 item 2): counted as cancelled, never completed, and no
// longer in flight once its batch ends.
func TestDeadlineCancels(t *testing.T) {
	var ex *gatedExecutor
	s, c, _ := start(t, serve.Options{Plan: loadPlan(t, "wide.json"),
		NewExecutor: func(clk serve.Clock, _ *dataplane.Deployment, _ *formats.Plan) (serve.Executor, error) {
			ex = &gatedExecutor{Emulated: serve.NewEmulated(clk, 0, 1), gate: make(chan struct{}), started: make(chan struct{})}
			return ex, nil
		}})
	defer ex.open()
	// A deadline generous enough that the call reaches a worker first on a loaded machine;
	// the gate then holds it past its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := &pb.ModelInferRequest{ModelName: "w", Inputs: []*pb.ModelInferRequest_InferInputTensor{
		{Name: "input", Datatype: "FP32", Shape: []int64{1, 4}, Contents: &pb.InferTensorContents{Fp32Contents: []float32{1, 2, 3, 4}}}}}
	if _, err := c.ModelInfer(ctx, req); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("%v: want DEADLINE_EXCEEDED", err)
	}
	select {
	case <-ex.started:
	default:
		t.Fatal("the call's deadline passed before it reached a worker: nothing to cancel in flight")
	}
	ex.open()
	ts := httptest.NewServer(s)
	defer ts.Close()
	var text string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text = string(b)
		if strings.Contains(text, `plan_responses_total{model="w",outcome="cancelled"} 1`) && strings.Contains(text, `plan_requests_in_flight{model="w"} 0`) {
			return
		}
	}
	t.Errorf("the call past its deadline is not counted as cancelled:\n%s", text)
}
