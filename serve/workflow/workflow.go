// Package workflow is DyOrc's own API on `plan serve`: POST
// /v1/workflows/{app}/run executes one request of a workflow application through the
// server's engine — the same door, in-flight bound, driver, speculative scheduler and metrics
// as the KServe v2 API (serve.Server.Submit) — and answers the path it took, one entry per
// service call with its stage, worker, queue and execution time and the branch chosen.
//
// The branching is real: after each call, the worker's output decides where the request goes
// (dataplane.Result.Branch, the workflow node next, or Exit). Emulated workers draw it from
// the workflow's probabilities (guards' p, choice weights, the loop's p_stop; DyOrc spec
// §1.3) with a per-request uniform seeded by (request, stage), or — when the body gives a
// seed — along the path that seed determines (dataplane/dyorc's ground truth, the same path
// the simulator's oracle reads); ONNX workers report the argmax of a real model's output
// (worker.Job.Results). The scheduler itself never sees a branch before the worker reports
// it: that is the workflow uncertainty DyOrc's Markov predictor speculates on (paper §3).
package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats/jsonx"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/kserve"
)

// MaxBody bounds a run request's body (it holds an id, a seed and at most a small input).
const MaxBody = 1 << 20

// Frontend serves /v1/workflows/{app}/run on `plan serve`.
type Frontend struct{}

// New returns the front end (internal/registry/systems/dyorcsys registers it).
func New() serve.Frontend { return &Frontend{} }

// RunRequest is the body of POST /v1/workflows/{app}/run; every field is optional (an empty
// body runs the workflow once with the driver's draws).
type RunRequest struct {
	// ID names the request in the answer.
	ID string `json:"id,omitempty"`
	// Seed > 0 makes emulated workers follow the path this seed determines (the same for
	// every policy, and what the oracle policy knows in advance).
	Seed int64 `json:"seed,omitempty"`
	// DeadlineMs > 0 overrides the application's SLO for this request.
	DeadlineMs float64 `json:"deadline_ms,omitempty"`
	// Input is the request's input tensor (ONNX workers run it; emulated ones carry it).
	Input *kserve.TensorJSON `json:"input,omitempty"`
}

// Step is one service call of the path taken (or the API server's ingress, node "$in").
type Step struct {
	Node    string `json:"node"`
	Service string `json:"service,omitempty"`
	Stage   string `json:"stage"`
	Worker  string `json:"worker"`
	Batch   int    `json:"batch"`
	// StartUs and EndUs are the call's execution on the server's clock.
	StartUs    int64 `json:"start_us"`
	EndUs      int64 `json:"end_us"`
	QueueUs    int64 `json:"queue_us"`
	ExecUs     int64 `json:"exec_us"`
	TransferUs int64 `json:"transfer_us,omitempty"`
	// Next is the node the worker's output chose ("" when the workflow ended here: Exit).
	Next string `json:"next"`
	Exit bool   `json:"exit,omitempty"`
}

// RunResponse is the answer of a run.
type RunResponse struct {
	App       string `json:"app"`
	ID        string `json:"id,omitempty"`
	Outcome   string `json:"outcome"`
	LatencyUs int64  `json:"latency_us"`
	SLOUs     int64  `json:"slo_us"`
	// Path lists the calls in the order they finished; Nodes is the path's node names.
	Path  []Step   `json:"path"`
	Nodes []string `json:"nodes"`
	// Timing is the server's latency breakdown (the KServe API's).
	Timing kserve.Timing `json:"timing"`
}

// runRoute is the one route this front end registers.
const runRoute = "POST /v1/workflows/{app}/run"

// RouteDocs implements serve.FrontendRoutes.
func (f *Frontend) RouteDocs() []serve.RouteDoc {
	return []serve.RouteDoc{{Pattern: runRoute, Doc: "run one request of a DyOrc workflow application (JSON)"}}
}

// Routes implements serve.Frontend.
func (f *Frontend) Routes(s *serve.Server, mux *http.ServeMux) {
	mux.HandleFunc(runRoute, func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		code, v := run(s, r, arrived)
		if e, ok := v.(ErrorResponse); ok && code == http.StatusServiceUnavailable && e.Reason == string(dataplane.DropShutdown) {
			// The server drains: the client's next request must go to another server, not
			// to this connection (as the KServe API's shutdown refusals).
			w.Header().Set("Connection", "close")
		}
		// The run may take long; its answer's write gets --write-timeout from now, so a
		// client that does not read it is cut off, as on the KServe API.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.WriteTimeout()))
		writeJSON(w, code, v)
	})
}

// BodyLimits implements serve.BodyLimiter: the server refuses a run body over MaxBody with
// 413 before the handler runs, on a declared length at once.
func (f *Frontend) BodyLimits() map[string]int64 {
	return map[string]int64{"POST /v1/workflows/{app}/run": MaxBody}
}

// ErrorResponse is the body of an error answer. Reason and Stage say why and where a 503
// was dropped.
type ErrorResponse struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
	Stage  string `json:"stage,omitempty"`
}

func run(s *serve.Server, r *http.Request, arrived time.Time) (int, any) {
	app := r.PathValue("app")
	dep := s.Deployment()
	if dep == nil || dep.Kind != dyorc.Kind {
		kind := "no"
		if dep != nil {
			kind = "a " + dep.Kind
		}
		return http.StatusConflict, ErrorResponse{Error: fmt.Sprintf("/v1/workflows serves dyorc plans; the active plan is %s plan (use /v2/models/{model}/infer)", kind)}
	}
	if _, ok := appOf(dep, app); !ok {
		return http.StatusNotFound, ErrorResponse{Error: fmt.Sprintf("workflow %q not found: this plan serves %s", app, appNames(dep))}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, ErrorResponse{Error: fmt.Sprintf("body: larger than %d bytes", MaxBody)}
		}
		return http.StatusBadRequest, ErrorResponse{Error: "body: " + err.Error()}
	}
	req, err := Decode(body)
	if err != nil {
		return http.StatusBadRequest, ErrorResponse{Error: err.Error()}
	}
	trace, err := kserve.ParseTraceIndex(r.Header.Get(kserve.TraceIndexHeader))
	if err != nil {
		return http.StatusBadRequest, ErrorResponse{Error: err.Error()}
	}
	var (
		mu   sync.Mutex
		hops []serve.HopEvent
	)
	sreq := serve.Request{Model: app, ID: req.ID, Input: req.Input, Arrived: arrived, Attrs: dataplane.Attrs{Sample: req.Seed, Trace: trace},
		Deadline: time.Duration(req.DeadlineMs * float64(time.Millisecond)),
		OnHop: func(h serve.HopEvent) {
			mu.Lock()
			hops = append(hops, h)
			mu.Unlock()
		}}
	a, err := s.Submit(r.Context(), sreq)
	if err != nil {
		return 499, ErrorResponse{Error: err.Error()} // the client went away
	}
	if a.Status != http.StatusOK {
		return a.Status, ErrorResponse{Error: a.Err, Reason: a.Reason, Stage: a.Stage}
	}
	mu.Lock()
	defer mu.Unlock()
	return http.StatusOK, Path(dep, app, req.ID, a, hops)
}

// Decode reads a run request strictly: unknown fields and trailing data are errors naming
// the field; the seed must not be negative, the deadline must be finite and not negative.
func Decode(body []byte) (*RunRequest, error) {
	req := &RunRequest{}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	if err := jsonx.Decode(body, req, jsonx.Options{Closed: true}); err != nil {
		if errors.Is(err, jsonx.ErrTrailing) {
			return nil, fmt.Errorf("body: data after the JSON object")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("body: field %s: got a JSON %s, want %s", te.Field, te.Value, te.Type)
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("body: field %s: unknown (want id, seed, deadline_ms, input)", f)
		}
		return nil, fmt.Errorf("body: %v", err)
	}
	if req.Seed < 0 {
		return nil, fmt.Errorf("body: field seed: %d: must not be negative", req.Seed)
	}
	if req.DeadlineMs < 0 || req.DeadlineMs > 1e9 {
		return nil, fmt.Errorf("body: field deadline_ms: %g: must be in [0, 1e9]", req.DeadlineMs)
	}
	return req, nil
}

// Path builds the answer from the request's hops (in the order they finished) and the
// server's per-stage timing.
func Path(dep *dataplane.Deployment, app, id string, a *serve.Answer, hops []serve.HopEvent) RunResponse {
	out := RunResponse{App: app, ID: id, Outcome: a.Outcome, LatencyUs: a.Timing.LatencyUs, SLOUs: a.Timing.SLOUs, Timing: a.Timing, Path: []Step{}, Nodes: []string{}}
	byName := map[string]dataplane.StageID{}
	for i := range dep.Stages {
		byName[dep.Stages[i].Name] = dataplane.StageID(i)
	}
	for i, h := range hops {
		st := Step{Stage: h.Stage, Worker: h.Worker, StartUs: h.StartUs, EndUs: h.EndUs, ExecUs: h.EndUs - h.StartUs}
		_, st.Node, _ = strings.Cut(h.Stage, "/")
		if sid, ok := byName[h.Stage]; ok {
			s := &dep.Stages[sid]
			st.Service = s.Model
			if h.Result.Exit {
				st.Exit = true
			} else if b := int(h.Result.Branch); b >= 0 && b < len(s.Next) {
				_, st.Next, _ = strings.Cut(dep.Stages[s.Next[b]].Name, "/")
			}
		}
		if i < len(a.Timing.Stages) && a.Timing.Stages[i].Stage == h.Stage {
			t := a.Timing.Stages[i]
			st.Batch, st.QueueUs, st.ExecUs, st.TransferUs = t.Batch, t.QueueUs, t.ExecUs, t.TransferUs
		}
		out.Path = append(out.Path, st)
		if st.Service != "" {
			out.Nodes = append(out.Nodes, st.Node)
		}
	}
	return out
}

func appOf(dep *dataplane.Deployment, name string) (dataplane.AppID, bool) {
	for i, a := range dep.Apps {
		if a.Name == name {
			return dataplane.AppID(i), true
		}
	}
	return 0, false
}

func appNames(dep *dataplane.Deployment) string {
	names := make([]string, len(dep.Apps))
	for i, a := range dep.Apps {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = 500, []byte(`{"error":"encoding the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
