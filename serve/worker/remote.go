package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve/kserve"
)

// Remote is the executor whose workers are KServe v2 / Triton HTTP endpoints. A hop sends
// the batch as one request whose input has the batch dimension in front; the output is split
// back per request and becomes the next stage's input.
type Remote struct {
	epsSet  *Endpoints
	clk     Clock
	dep     *dataplane.Deployment
	eps     []resolved // per worker
	meta    map[string]*kserve.ModelMetadata
	client  *http.Client
	timeout time.Duration
}

// RemoteFactory returns the ExecutorFactory of remote workers. client nil = a pooled client.
func RemoteFactory(eps *Endpoints, client *http.Client) ExecutorFactory {
	return func(clk Clock, dep *dataplane.Deployment, _ *formats.Plan) (Executor, error) {
		return NewRemote(clk, dep, eps, client)
	}
}

// NewRemote resolves every worker's endpoint and checks that each endpoint answers its
// health check (GET /v2/health/ready) and describes its model (GET /v2/models/{model});
// a silent endpoint is an error naming its address.
func NewRemote(clk Clock, dep *dataplane.Deployment, eps *Endpoints, client *http.Client) (*Remote, error) {
	res, err := eps.resolve(dep)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}
	}
	var slo dataplane.Time
	for _, a := range dep.Apps {
		slo = max(slo, a.SLO)
	}
	r := &Remote{epsSet: eps, clk: clk, dep: dep, eps: res, meta: map[string]*kserve.ModelMetadata{}, client: client,
		timeout: max(10*time.Duration(slo)*time.Microsecond, 5*time.Second)}
	checked := map[string]bool{}
	for _, e := range res {
		key := e.url + "|" + e.model
		if checked[key] {
			continue
		}
		checked[key] = true
		if err := r.check(e); err != nil {
			if eps.file != "" {
				err = fmt.Errorf("%s: %w", eps.file, err)
			}
			return nil, err
		}
	}
	return r, nil
}

func (r *Remote) check(e resolved) error {
	if t, addr, err := r.epsSet.transport(e.url); t != nil || err != nil {
		if err != nil {
			return err
		}
		return r.checkTransport(t, addr, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	get := func(p string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+p, nil)
		if err != nil {
			return nil, err
		}
		resp, err := r.client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != 200 {
			return nil, fmt.Errorf("status %d", resp.StatusCode)
		}
		return b, nil
	}
	if _, err := get("/v2/health/ready"); err != nil {
		return fmt.Errorf("remote endpoint %s does not answer its health check (GET /v2/health/ready): %v", e.url, err)
	}
	b, err := get("/v2/models/" + e.model)
	if err != nil {
		return fmt.Errorf("remote endpoint %s: model %q: GET /v2/models/%s: %v", e.url, e.model, e.model, err)
	}
	var md kserve.ModelMetadata
	if err := json.Unmarshal(b, &md); err != nil || len(md.Inputs) == 0 || len(md.Outputs) == 0 {
		return fmt.Errorf("remote endpoint %s: model %q: metadata without inputs and outputs", e.url, e.model)
	}
	r.meta[e.url+"|"+e.model] = &md
	return nil
}

// Kind implements Executor.
func (r *Remote) Kind() string { return "remote" }

// Spec implements SpecProvider: the first stage's input and the last stage's output.
func (r *Remote) Spec(app dataplane.AppID) (in, out kserve.TensorSpec) {
	a := &r.dep.Apps[app]
	in = kserve.TensorSpec{Name: "input", Datatype: "FP32", Shape: []int64{-1, -1}}
	out = kserve.TensorSpec{Name: "output", Datatype: "FP32", Shape: []int64{-1, -1}}
	if len(a.Pipelines) == 0 || len(a.Pipelines[0]) == 0 {
		return in, out
	}
	first := &r.dep.Stages[a.Pipelines[0][0]]
	last := &r.dep.Stages[a.Pipelines[0][len(a.Pipelines[0])-1]]
	if md := r.metaOf(first.Pool[0]); md != nil {
		in = md.Inputs[0]
		in.Shape = batchShape(in.Shape)
	}
	if md := r.metaOf(last.Pool[0]); md != nil {
		out = md.Outputs[0]
		out.Shape = batchShape(out.Shape)
	}
	return in, out
}

// batchShape makes the first dimension the (variable) batch dimension.
func batchShape(s []int64) []int64 {
	if len(s) == 0 {
		return []int64{-1}
	}
	out := append([]int64(nil), s...)
	out[0] = -1
	return out
}

func (r *Remote) metaOf(w dataplane.WorkerID) *kserve.ModelMetadata {
	e := r.eps[w]
	return r.meta[e.url+"|"+e.model]
}

// Run implements Executor: one HTTP request per hop, on its own goroutine.
func (r *Remote) Run(job *Job, done func(*Job)) { runAsync(r.clk, job, done, r.run) }

func (r *Remote) run(job *Job) {
	stage := r.dep.Stages[job.Stage].Name
	fail := func(err error) { job.failLive(err, stage) }
	live := job.live()
	if len(live) == 0 {
		return
	}
	e := r.eps[job.Worker]
	md := r.metaOf(job.Worker)
	// Concatenate the samples: data arrays are flattened (KServe accepts row-major flat data).
	first := &job.Payload[live[0]].Tensor
	shape := append([]int64{int64(len(live))}, first.Shape[1:]...)
	var data bytes.Buffer
	data.WriteByte('[')
	for k, i := range live {
		t := &job.Payload[i].Tensor
		if t.Datatype != first.Datatype || !sameDims(t.Shape, first.Shape) {
			fail(fmt.Errorf("samples of one batch differ in shape or datatype"))
			return
		}
		if k > 0 {
			data.WriteByte(',')
		}
		data.Write(flatten(t.Data))
	}
	data.WriteByte(']')
	name := first.Name
	if md != nil {
		name = md.Inputs[0].Name
	}
	if t, addr, _ := r.epsSet.transport(e.url); t != nil {
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		defer cancel()
		o, err := t.Infer(ctx, addr, e.model, kserve.TensorJSON{Name: name, Shape: shape, Datatype: first.Datatype, Data: data.Bytes()})
		if err != nil {
			fail(fmt.Errorf("remote endpoint %s: %v", e.url, err))
			return
		}
		r.deliver(job, live, e, o, fail)
		return
	}
	body, err := json.Marshal(&kserve.InferRequest{Inputs: []kserve.TensorJSON{{Name: name, Shape: shape, Datatype: first.Datatype, Data: data.Bytes()}}})
	if err != nil {
		fail(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v2/models/"+e.model+"/infer", bytes.NewReader(body))
	if err != nil {
		fail(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		fail(fmt.Errorf("remote endpoint %s: %v", e.url, err))
		return
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		fail(fmt.Errorf("remote endpoint %s: reading the answer: %v", e.url, err))
		return
	}
	if resp.StatusCode != 200 {
		fail(fmt.Errorf("remote endpoint %s: status %d: %s", e.url, resp.StatusCode, strings.TrimSpace(string(rb[:min(len(rb), 300)]))))
		return
	}
	var out kserve.InferResponse
	if err := json.Unmarshal(rb, &out); err != nil || len(out.Outputs) == 0 {
		fail(fmt.Errorf("remote endpoint %s: answer is not a KServe v2 inference response", e.url))
		return
	}
	r.deliver(job, live, e, &out.Outputs[0], fail)
}

func sameDims(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// flatten drops the brackets of a nested JSON array of numbers or booleans (which contain
// none themselves), leaving the comma-separated row-major elements.
func flatten(raw json.RawMessage) []byte {
	out := make([]byte, 0, len(raw))
	for _, c := range raw {
		if c != '[' && c != ']' && c != ' ' && c != '\n' && c != '\t' && c != '\r' {
			out = append(out, c)
		}
	}
	// Nested arrays leave ",," where "],[" was only if rows were empty; drop empty elements.
	return bytes.Trim(out, ",")
}

// splitFlat returns the elements of a (nested) JSON array of numbers or booleans.
func splitFlat(raw json.RawMessage) []string {
	f := flatten(raw)
	if len(f) == 0 {
		return nil
	}
	parts := strings.Split(string(f), ",")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Close implements Executor.
func (r *Remote) Close() error {
	r.client.CloseIdleConnections()
	// Transports belong to the endpoints (shared across reloads): the server's owner closes
	// them.
	return nil
}
