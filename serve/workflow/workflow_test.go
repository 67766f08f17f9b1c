package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dpd "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/fixture/servetest"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

// planFile is the bundled small example's plan (GILL and the image pipeline on 4 GPUs).
var planFile = filepath.Join("..", "..", "testdata", "export", "dyorc", "plan.json")

// deploy stands in for the system registry: DyOrc plans, and PPipe/PARD ones for the
// wrong-system answer.
func deploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	if dyorcsec.PlanOf(p) != nil {
		d, err := dpd.FromPlan(p)
		return d, "dyorc", err
	}
	return servetest.Deploy(p)
}

func newServer(t *testing.T, p *formats.Plan, opts serve.Options) (*serve.Server, *httptest.Server) {
	t.Helper()
	opts.Plan, opts.Deploy, opts.Policies = p, deploy, servetest.Policies(dpd.Policies()...)
	opts.Frontends = []serve.Frontend{New()}
	s, err := serve.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		_ = s.Shutdown(context.Background())
		ts.Close()
	})
	return s, ts
}

func readPlan(t *testing.T, path string) *formats.Plan {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](path, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// truth is the node path the seed determines for app (dataplane/dyorc's ground truth).
func truth(t *testing.T, dep *dataplane.Deployment, app string, seed int64) []string {
	t.Helper()
	m, ok := dpd.MetaOf(dep)
	if !ok {
		t.Fatal("not a dyorc deployment")
	}
	for i := range m.W.Apps {
		a := &m.W.Apps[i]
		if a.Name == app {
			var out []string
			for _, n := range a.Path(dpd.SampleRNG(i, seed)) {
				out = append(out, a.Nodes[n].Name)
			}
			return out
		}
	}
	t.Fatalf("no app %s", app)
	return nil
}

// checkPath: every call chose the node the next call ran, the last one exited, and the
// per-step timing is the server's.
func checkPath(t *testing.T, r RunResponse) {
	t.Helper()
	if len(r.Path) < 2 || r.Path[0].Node != "$in" {
		t.Fatalf("path %+v: want the ingress and at least one call", r.Path)
	}
	for i, st := range r.Path {
		if i+1 < len(r.Path) {
			if st.Exit || st.Next != r.Path[i+1].Node {
				t.Errorf("step %d (%s) chose %q (exit %v), the next call ran %s", i, st.Node, st.Next, st.Exit, r.Path[i+1].Node)
			}
		} else if !st.Exit || st.Next != "" {
			t.Errorf("last step %s: exit %v, next %q: want the workflow to end there", st.Node, st.Exit, st.Next)
		}
		if st.Stage != r.App+"/"+st.Node || st.Worker == "" || st.EndUs < st.StartUs || st.Batch < 1 {
			t.Errorf("step %d: %+v", i, st)
		}
		if i > 0 && (st.Service == "" || st.ExecUs <= 0) {
			t.Errorf("step %d: a service call needs a service and an execution time: %+v", i, st)
		}
	}
	if r.LatencyUs <= 0 || len(r.Timing.Stages) != len(r.Path) {
		t.Errorf("latency %d µs, %d timed stages for %d steps", r.LatencyUs, len(r.Timing.Stages), len(r.Path))
	}
}

// TestRunSeeded runs the image pipeline for 24 seeds at once: each answer's path is the one
// the seed determines (so both of the choice's branches and the guarded upscale appear), each
// call's branch names the call that followed, and the same seed runs the same path again.
func TestRunSeeded(t *testing.T) {
	p := readPlan(t, planFile)
	s, ts := newServer(t, p, serve.Options{})
	const n = 24
	got := make([]RunResponse, n+1)
	var wg sync.WaitGroup
	errs := make(chan string, n+1)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(ts.URL+"/v1/workflows/image/run", "application/json", strings.NewReader(fmt.Sprintf(`{"id":"r%d","seed":%d}`, i, i)))
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				errs <- fmt.Sprintf("seed %d: %d %s", i, resp.StatusCode, b)
				return
			}
			if err := json.Unmarshal(b, &got[i]); err != nil {
				errs <- err.Error()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	seen := map[string]int{}
	for i := 1; i <= n; i++ {
		r := got[i]
		if r.ID != fmt.Sprintf("r%d", i) || r.App != "image" {
			t.Errorf("seed %d: id %q app %q", i, r.ID, r.App)
		}
		if want := truth(t, s.Deployment(), "image", int64(i)); !slices.Equal(r.Nodes, want) {
			t.Errorf("seed %d: path %v, the seed's path is %v", i, r.Nodes, want)
		}
		checkPath(t, r)
		for _, nd := range r.Nodes {
			seen[nd]++
		}
	}
	for _, nd := range []string{"det", "read:cap", "read:ocr", "up"} {
		if seen[nd] == 0 {
			t.Errorf("node %s never taken over %d seeds: %v", nd, n, seen)
		}
	}
	code, b := post(t, ts.URL+"/v1/workflows/image/run", `{"seed":7}`)
	var again RunResponse
	if code != 200 || json.Unmarshal(b, &again) != nil || !slices.Equal(again.Nodes, got[7].Nodes) {
		t.Errorf("seed 7 again: %d %s, first run %v", code, b, got[7].Nodes)
	}
}

// TestRunDrawn: without a seed the emulated workers draw every branch from the workflow's
// probabilities; the answer still shows a consistent path.
func TestRunDrawn(t *testing.T) {
	_, ts := newServer(t, readPlan(t, planFile), serve.Options{})
	code, b := post(t, ts.URL+"/v1/workflows/image/run", "")
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var r RunResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	checkPath(t, r)
	if r.Nodes[0] != "det" || !strings.HasPrefix(r.Nodes[1], "read:") {
		t.Errorf("path %v: want det, then one of read's services", r.Nodes)
	}
}

// classExecutor is an emulated executor that reports a model output for every request (as
// ONNX workers report the argmax of a classifier): class 1 everywhere. dataplane/dyorc's
// Route turns a class into the branch (class mod the node's candidates): the detector's
// output sends the image to OCR (read's services in name order: cap, ocr), and OCR's ends
// the workflow (up, or the end).
type classExecutor struct {
	*worker.Emulated
}

func (e *classExecutor) Run(job *worker.Job, done func(*worker.Job)) {
	e.Emulated.Run(job, func(j *worker.Job) {
		j.Results = make([]dataplane.Result, len(j.Payload))
		for i := range j.Results {
			j.Results[i] = dataplane.Result{Label: 1, Certainty: 0.9}
		}
		done(j)
	})
}

// TestRunWorkerOutputs: the path follows what the workers report, not the workflow's
// probabilities (the seed's own path goes through the captioner).
func TestRunWorkerOutputs(t *testing.T) {
	p := readPlan(t, planFile)
	s, ts := newServer(t, p, serve.Options{NewExecutor: func(clk worker.Clock, _ *dataplane.Deployment, _ *formats.Plan) (worker.Executor, error) {
		return &classExecutor{Emulated: worker.NewEmulated(clk, 0, 1)}, nil
	}})
	seed := int64(1)
	for ; slices.Contains(truth(t, s.Deployment(), "image", seed), "read:ocr"); seed++ {
	}
	code, b := post(t, ts.URL+"/v1/workflows/image/run", fmt.Sprintf(`{"seed":%d}`, seed))
	var r RunResponse
	if code != 200 || json.Unmarshal(b, &r) != nil {
		t.Fatalf("%d %s", code, b)
	}
	checkPath(t, r)
	if !slices.Equal(r.Nodes, []string{"det", "read:ocr"}) {
		t.Errorf("path %v: want the workers' choice det → read:ocr (the seed's own path is %v)", r.Nodes, truth(t, s.Deployment(), "image", seed))
	}
}

// TestBadInput: an unknown workflow is 404, a malformed body 400 naming the field, a plan of
// another system 409; nothing reaches the engine.
func TestBadInput(t *testing.T) {
	_, ts := newServer(t, readPlan(t, planFile), serve.Options{})
	tests := []struct {
		name, app, body string
		code            int
		want            string
	}{
		{"unknown app", "nope", `{}`, 404, `not found: this plan serves gill, image`},
		{"seed type", "image", `{"seed":"x"}`, 400, "field seed"},
		{"unknown field", "image", `{"seeds":1}`, 400, `seeds\": unknown (want id, seed, deadline_ms, input)`},
		{"negative seed", "image", `{"seed":-1}`, 400, "field seed: -1: must not be negative"},
		{"deadline", "image", `{"deadline_ms":-5}`, 400, "field deadline_ms: -5"},
		{"input type", "image", `{"input":[1,2]}`, 400, "field input"},
		{"not JSON", "image", `{"id":`, 400, "body: unexpected EOF"},
		{"trailing", "image", `{} {}`, 400, "data after the JSON object"},
		{"too large", "image", `{"id":"` + strings.Repeat("x", MaxBody) + `"}`, 413, "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, b := post(t, ts.URL+"/v1/workflows/"+tc.app+"/run", tc.body)
			if code != tc.code || !bytes.Contains(b, []byte(tc.want)) {
				t.Errorf("%d %s, want %d %q", code, b, tc.code, tc.want)
			}
		})
	}
	resp, err := http.Get(ts.URL + "/v1/workflows/image/run")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
	_, other := newServer(t, readPlan(t, filepath.Join("..", "..", "testdata", "golden", "demo-ppipe.json")), serve.Options{})
	code, b := post(t, other.URL+"/v1/workflows/image/run", `{}`)
	if code != 409 || !bytes.Contains(b, []byte("the active plan is a ppipe plan")) {
		t.Errorf("ppipe plan: %d %s, want 409", code, b)
	}
}

// TestDrainClosesConnections: during the drain, the run endpoint's 503 carries
// Connection: close.
func TestDrainClosesConnections(t *testing.T) {
	s, ts := newServer(t, readPlan(t, planFile), serve.Options{})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(ts.URL+"/v1/workflows/image/run", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || !bytes.Contains(b, []byte("shutdown")) {
		t.Errorf("during the drain: %d (close %v) %s", resp.StatusCode, resp.Close, b)
	}
}

// FuzzDecode: the body decoder never panics, and what it accepts is within bounds.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"id":"a","seed":3,"deadline_ms":100}`, `{"input":{"name":"x","shape":[1],"datatype":"FP32","data":[1]}}`, `{"seed":-1}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err == nil && (r.Seed < 0 || r.DeadlineMs < 0) {
			t.Errorf("accepted %+v", r)
		}
	})
}

// TestTraceIndexKeysDraws: the branches of a request that carries its trace index
// (kserve.TraceIndexHeader, as `plan load` sends it) follow the index, not the order requests
// reach the server: the same requests sent in reverse order take the same paths. Without the
// index they are keyed on arrival order and take other paths, which is how near-simultaneous
// arrivals swapped by the network made a served trace another realization than the
// simulated one.
func TestTraceIndexKeysDraws(t *testing.T) {
	const n = 8
	// paths sends the requests in order, 5 ms apart (so the server numbers them in that
	// order) without waiting for answers: a GILL run takes seconds.
	paths := func(order []int, header bool) map[int]string {
		t.Helper()
		_, ts := newServer(t, readPlan(t, planFile), serve.Options{})
		var (
			mu   sync.Mutex
			wg   sync.WaitGroup
			out  = map[int]string{}
			errs []error
		)
		for _, k := range order {
			req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/workflows/gill/run", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if header {
				req.Header.Set(kserve.TraceIndexHeader, fmt.Sprint(k))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var r RunResponse
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					err = json.NewDecoder(resp.Body).Decode(&r)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("request %d: %w", k, err))
				}
				out[k] = strings.Join(r.Nodes, " → ")
			}()
			time.Sleep(5 * time.Millisecond)
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return out
	}
	fwd, rev := make([]int, n), make([]int, n)
	for i := range n {
		fwd[i], rev[i] = i, n-1-i
	}
	want := paths(fwd, true)
	distinct := map[string]bool{}
	for _, p := range want {
		distinct[p] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("all %d requests took the path %v: the test cannot tell orders apart", n, want[0])
	}
	got := paths(rev, true)
	for k := range n {
		if got[k] != want[k] {
			t.Errorf("trace index %d: path %s in reverse order, %s in trace order", k, got[k], want[k])
		}
	}
	unkeyed := paths(rev, false)
	same := 0
	for k := range n {
		if unkeyed[k] == want[k] {
			same++
		}
	}
	if same == n {
		t.Errorf("without the trace index, reverse order still gave every request its path: the draws do not depend on the key")
	}
}
