package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

// resultExecutor is an emulated executor that reports a model output for every request, as
// an ONNX executor reports real certainties (Job.Results).
type resultExecutor struct {
	*worker.Emulated
	res dataplane.Result
}

func (e *resultExecutor) Run(job *worker.Job, done func(*worker.Job)) {
	e.Emulated.Run(job, func(j *worker.Job) {
		j.Results = make([]dataplane.Result, len(j.Payload))
		for i := range j.Results {
			j.Results[i] = e.res
		}
		done(j)
	})
}

// testFrontend registers one route that submits through the server, and records Close.
type testFrontend struct {
	mu     sync.Mutex
	closed bool
}

func (f *testFrontend) Routes(s *Server, mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/test/{model}", func(w http.ResponseWriter, r *http.Request) {
		a, err := s.Submit(r.Context(), Request{Model: r.PathValue("model"), ID: "fe", Attrs: dataplane.Attrs{Priority: 2}})
		if err != nil {
			writeJSON(w, 500, kserve.ErrorResponse{Error: err.Error()})
			return
		}
		writeJSON(w, a.Status, map[string]any{"status": a.Status, "kind": s.Deployment().Kind})
	})
}

func (f *testFrontend) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// submitRetry submits until the answer is not a 503 (a loaded machine can make a lone request
// late enough to be dropped).
func submitRetry(t *testing.T, s *Server, req Request) *Answer {
	t.Helper()
	for try := 0; ; try++ {
		a, err := s.Submit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != 503 || try == 3 {
			return a
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSubmit(t *testing.T) {
	p := loadPlan(t, "demo-plan.json")
	model := ppipesec.PlanOf(p).Models[0].Model
	want := dataplane.Result{Certainty: 0.75, Label: 3}
	fe := &testFrontend{}
	s, ts := testServer(t, Options{Plan: p, Frontends: []Frontend{fe},
		NewExecutor: func(clk worker.Clock, _ *dataplane.Deployment, _ *formats.Plan) (worker.Executor, error) {
			return &resultExecutor{Emulated: worker.NewEmulated(clk, 0, 1), res: want}, nil
		}})

	t.Run("hops and results", func(t *testing.T) {
		var mu sync.Mutex
		var hops []HopEvent
		in := kserve.Float32Tensor("", []int64{1, 2}, []float32{1, 2})
		a := submitRetry(t, s, Request{Model: model, ID: "h", Input: &in, OnHop: func(h HopEvent) {
			mu.Lock()
			hops = append(hops, h)
			mu.Unlock()
		}})
		if a.Status != 200 {
			t.Fatalf("status %d: %s", a.Status, a.Err)
		}
		if a.Result != want {
			t.Errorf("Result = %+v, want the executor's %+v", a.Result, want)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(hops) == 0 || len(hops) != len(a.Timing.Stages) {
			t.Fatalf("%d hop events for %d stages in the timing", len(hops), len(a.Timing.Stages))
		}
		for i, h := range hops {
			if h.Stage != a.Timing.Stages[i].Stage || h.EndUs < h.StartUs || h.Result != want {
				t.Errorf("hop %d = %+v, timing stage %+v", i, h, a.Timing.Stages[i])
			}
		}
		if string(a.Output.Data) != "[1,2]" {
			t.Errorf("output %s, want the input carried through", a.Output.Data)
		}
	})

	// The old arrival must fall after the server's clock started (earlier ones are clamped).
	for s.Clock().Now() <= dataplane.Time(ppipesec.PlanOf(p).Models[0].SLO.D()/time.Microsecond)+1000 {
		time.Sleep(10 * time.Millisecond)
	}
	cases := []struct {
		name   string
		req    Request
		status int
	}{
		{"no input", Request{Model: model}, 200},
		{"unknown model", Request{Model: "nope"}, 404},
		{"negative deadline", Request{Model: model, Deadline: -time.Second}, 400},
		// A deadline no stage can meet: the policy drops it (503) or it is answered late.
		{"impossible deadline", Request{Model: model, Deadline: time.Microsecond}, 503},
		// An arrival an SLO ago: the request is already too old to finish in time.
		{"old arrival", Request{Model: model, Arrived: time.Now().Add(-ppipesec.PlanOf(p).Models[0].SLO.D())}, 503},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := s.Submit(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.status == 200 && a.Status == 503 {
				a = submitRetry(t, s, tc.req)
			}
			if a.Status != tc.status && !(tc.status == 503 && a.Outcome == "late") {
				t.Errorf("status %d (%s, %s), want %d", a.Status, a.Outcome, a.Err, tc.status)
			}
		})
	}

	t.Run("frontend route", func(t *testing.T) {
		resp, err := http.Post(ts.URL+"/v1/test/"+model, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if out["kind"] != "ppipe" || (resp.StatusCode != 200 && resp.StatusCode != 503) {
			t.Errorf("frontend answered %d %v", resp.StatusCode, out)
		}
	})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	fe.mu.Lock()
	defer fe.mu.Unlock()
	if !fe.closed {
		t.Error("Shutdown did not close the frontend")
	}
}
