package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

// fakeKServe is a KServe v2 endpoint serving one model that maps every element x to
// f(x); it records the batch sizes it saw.
type fakeKServe struct {
	model   string
	f       func(float64) float64
	fail    atomic.Bool
	mu      sync.Mutex
	batches []int64
}

func (k *fakeKServe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v2/health/ready":
		w.WriteHeader(200)
	case r.Method == http.MethodGet && r.URL.Path == "/v2/models/"+k.model:
		json.NewEncoder(w).Encode(kserve.ModelMetadata{Name: k.model, Platform: "fake",
			Inputs:  []kserve.TensorSpec{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}},
			Outputs: []kserve.TensorSpec{{Name: "y", Datatype: "FP32", Shape: []int64{-1, 3}}}})
	case r.Method == http.MethodPost && r.URL.Path == "/v2/models/"+k.model+"/infer":
		if k.fail.Load() {
			http.Error(w, "model crashed", 500)
			return
		}
		var req kserve.InferRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Inputs) != 1 || req.Inputs[0].Name != "x" {
			http.Error(w, fmt.Sprintf("bad request: %v", err), 400)
			return
		}
		in := req.Inputs[0]
		vals, err := in.Float32s()
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		k.mu.Lock()
		k.batches = append(k.batches, in.Shape[0])
		k.mu.Unlock()
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = strconv.FormatFloat(k.f(float64(v)), 'g', -1, 64)
		}
		json.NewEncoder(w).Encode(kserve.InferResponse{ModelName: k.model, Outputs: []kserve.TensorJSON{{Name: "y", Shape: in.Shape, Datatype: "FP32",
			Data: json.RawMessage("[" + strings.Join(out, ",") + "]")}}})
	default:
		http.NotFound(w, r)
	}
}

func TestRemoteWorkers(t *testing.T) {
	add := &fakeKServe{model: "add", f: func(x float64) float64 { return x + 1 }}
	mul := &fakeKServe{model: "mul", f: func(x float64) float64 { return x * 10 }}
	fa, fm := httptest.NewServer(add), httptest.NewServer(mul)
	defer fa.Close()
	defer fm.Close()
	eps, err := worker.DecodeEndpoints("endpoints.yaml", []byte(fmt.Sprintf(`apiVersion: plan/v1
kind: Endpoints
stages:
  - stage: "m2/*/s0"
    model: add
    urls: [%s]
  - stage: "*"
    model: mul
    urls: [%s/]
`, fa.URL, fm.URL)))
	if err != nil {
		t.Fatal(err)
	}
	p := loadPlan(t, "nic.json")
	s, ts := testServer(t, Options{Plan: p, NewExecutor: worker.RemoteFactory(eps, nil)})
	code, body := get(t, ts.URL+"/v2/models/m2")
	if code != 200 || !strings.Contains(string(body), `"name":"x"`) || !strings.Contains(string(body), "plan-remote") {
		t.Errorf("metadata: %d %s", code, body)
	}
	req := `{"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","data":[1,2,3]}]}`
	code, _, body = post(t, ts.URL+"/v2/models/m2/infer", req)
	var r kserve.InferResponse
	if err := json.Unmarshal(body, &r); code != 200 || err != nil {
		t.Fatalf("infer: %d %s", code, body)
	}
	if got := string(r.Outputs[0].Data); got != "[20,30,40]" || r.Outputs[0].Name != "y" {
		t.Errorf("output %s %s, want y [20,30,40]", r.Outputs[0].Name, got)
	}
	// A failing endpoint: 502 naming the stage, the server keeps serving.
	mul.fail.Store(true)
	code, _, body = post(t, ts.URL+"/v2/models/m2/infer", req)
	if code != 502 || !strings.Contains(string(body), "m2/p0/s1") || !strings.Contains(string(body), "500") {
		t.Errorf("failing endpoint: %d %s", code, body)
	}
	mul.fail.Store(false)
	_ = s
}

// TestRemoteBatches checks that a batch is sent as one request and split back correctly.
func TestRemoteBatches(t *testing.T) {
	sq := &fakeKServe{model: "m1", f: func(x float64) float64 { return x * x }}
	fs := httptest.NewServer(sq)
	defer fs.Close()
	eps, err := worker.DecodeEndpoints("e.json", []byte(`{"apiVersion":"plan/v1","kind":"Endpoints","stages":[{"stage":"*","urls":["`+fs.URL+`"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, ts := testServer(t, Options{Plan: loadPlan(t, "one-gpu.json"), NewExecutor: worker.RemoteFactory(eps, nil)})
	const n = 6
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := float32(i + 1)
			code, _, body := post(t, ts.URL+"/v2/models/m1/infer", fmt.Sprintf(`{"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","data":[%g,%g,%g]}]}`, v, -v, 2*v))
			if code == 503 {
				return // the dispatcher may drop under this burst; drops are tested elsewhere
			}
			var r kserve.InferResponse
			if err := json.Unmarshal(body, &r); code != 200 || err != nil {
				t.Errorf("request %d: %d %s", i, code, body)
				return
			}
			want := fmt.Sprintf("[%g,%g,%g]", v*v, v*v, 4*v*v)
			if got := string(r.Outputs[0].Data); got != want {
				t.Errorf("request %d: output %s, want %s", i, got, want)
			}
		}()
	}
	wg.Wait()
	sq.mu.Lock()
	defer sq.mu.Unlock()
	t.Logf("batches seen by the endpoint: %v", sq.batches)
}
