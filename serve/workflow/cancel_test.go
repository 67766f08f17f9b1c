package workflow

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve"
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

// TestClientGoneCancelsRun: a workflow run whose client disconnects is cancelled in the
// server: counted as cancelled, never completed.
func TestClientGoneCancelsRun(t *testing.T) {
	var ex *gatedExecutor
	s, _ := newServer(t, readPlan(t, planFile), serve.Options{
		NewExecutor: func(clk worker.Clock, _ *dataplane.Deployment, _ *formats.Plan) (worker.Executor, error) {
			ex = &gatedExecutor{Emulated: worker.NewEmulated(clk, 0, 1), gate: make(chan struct{})}
			return ex, nil
		}})
	defer ex.open()
	// The run's handler returns only once the driver has withdrawn its request.
	handled := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/run") {
			handled <- struct{}{}
		}
	}))
	defer ts.Close()
	metric := func(series string) bool {
		resp, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(b), series)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/workflows/image/run", strings.NewReader(`{"seed": 1}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	wait := func(what, series string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if metric(series) {
				return
			}
		}
		t.Fatalf("timed out waiting for %s (%s)", what, series)
	}
	wait("the run in flight", `plan_requests_in_flight{model="image"} 1`)
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled client got an answer")
	}
	<-handled
	ex.open()
	wait("the run cancelled", `plan_responses_total{model="image",outcome="cancelled"} 1`)
	wait("nothing in flight", `plan_requests_in_flight{model="image"} 0`)
}
