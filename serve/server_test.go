package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

func loadPlan(t testing.TB, name string) *formats.Plan {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "testdata", "serve", name), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// roomyPlan is demo-plan.json with a 10 s SLO instead of 14 ms, for tests of what a served
// request shows (its data's checks, the metrics it moves) rather than of deadlines: on a
// loaded machine, under the race detector beside other packages' tests, a fresh server's
// first request has waited 12-15 ms at intake and been dropped for its deadline.
func roomyPlan(t testing.TB) *formats.Plan {
	t.Helper()
	p := loadPlan(t, "demo-plan.json")
	ppipesec.PlanOf(p).Models[0].SLO = formats.Duration(10 * time.Second)
	return p
}

// testServer runs a Server behind httptest and shuts both down at the end of the test,
// checking that no goroutine outlives them.
func testServer(t testing.TB, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	before := goruntime.NumGoroutine()
	s, err := New(withSystems(opts))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		_ = s.Shutdown(context.Background())
		ts.Close()
		http.DefaultClient.CloseIdleConnections()
		checkGoroutines(t, before)
	})
	return s, ts
}

func checkGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := goruntime.NumGoroutine()
		if n <= before+2 { // slack: the HTTP client's transport may keep a reader briefly
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:goruntime.Stack(buf, true)]
			t.Errorf("goroutines: %d before, %d after\n%s", before, n, buf)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func inferBody(vals ...float32) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":"r1","inputs":[{"name":"input","shape":[1,%d],"datatype":"FP32","data":[`, len(vals))
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%g", v)
	}
	b.WriteString("]}]}")
	return b.String()
}

func post(t testing.TB, url, body string) (int, http.Header, []byte) {
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
	return resp.StatusCode, resp.Header, b
}

func get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestInfer(t *testing.T) {
	for _, tc := range []struct{ plan, policy string }{{"demo-plan.json", ""}, {"nic.json", ""}, {"nic.json", "reactive"}} {
		t.Run(tc.plan+"/"+tc.policy, func(t *testing.T) {
			p := loadPlan(t, tc.plan)
			_, ts := testServer(t, Options{Plan: p, Policy: dataplane.Config{Policy: tc.policy}})
			model := ppipesec.PlanOf(p).Models[0].Model
			code, _, body := post(t, ts.URL+"/v2/models/"+model+"/infer", inferBody(1, 2.5, -3))
			// A machine so loaded that a hop runs several times its length makes even a lone
			// request miss its deadline (503 deadline): try again a few times.
			for try := 0; try < 3 && code == 503; try++ {
				time.Sleep(50 * time.Millisecond)
				code, _, body = post(t, ts.URL+"/v2/models/"+model+"/infer", inferBody(1, 2.5, -3))
			}
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			var r kserve.InferResponse
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatal(err)
			}
			// "late" is legal on a loaded machine: the answer still comes, flagged.
			if r.ModelName != model || r.ID != "r1" || (r.Outcome != "completed" && r.Outcome != "late") {
				t.Errorf("response %+v", r)
			}
			if len(r.Outputs) != 1 || r.Outputs[0].Name != "output" || string(r.Outputs[0].Data) != "[1,2.5,-3]" {
				t.Errorf("outputs %+v (data %s)", r.Outputs, r.Outputs[0].Data)
			}
			tm := r.Timing
			sum := tm.IntakeUs + tm.MigrationUs + tm.BatchWaitUs + tm.QueueUs + tm.ExecUs + tm.TransferUs + tm.DeliveryUs
			if sum != tm.LatencyUs {
				t.Errorf("breakdown %+v sums to %d, latency %d", tm, sum, tm.LatencyUs)
			}
			// The request went through one of the plan's pipelines: its stages, at least
			// their nominal latency.
			matched := false
			for _, pl := range ppipesec.PlanOf(p).Models[0].Pipelines {
				if len(pl.Partitions) != len(tm.Stages) {
					continue
				}
				var nominal int64
				for _, part := range pl.Partitions {
					nominal += int64(part.StageLatencyUs)
				}
				if tm.ExecUs >= nominal {
					matched = true
				}
			}
			if !matched || tm.SLOUs != int64(time.Duration(ppipesec.PlanOf(p).Models[0].SLO)/time.Microsecond) {
				t.Errorf("timing %+v matches no pipeline of the plan (or the SLO)", tm)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	p := loadPlan(t, "demo-plan.json")
	_, ts := testServer(t, Options{Plan: p, MaxBody: 1024})
	url := ts.URL + "/v2/models/demo/infer"
	cases := []struct {
		name, url, body string
		code            int
		want            string
	}{
		{"malformed JSON", url, `{"inputs": [`, 400, "malformed JSON"},
		{"unknown field", url, `{"inputz": []}`, 400, "malformed JSON"},
		{"no inputs", url, `{"inputs": []}`, 400, "exactly one"},
		{"wrong dtype", url, `{"inputs":[{"name":"input","shape":[1,2],"datatype":"INT64","data":[1,2]}]}`, 400, "datatype"},
		{"wrong rank", url, `{"inputs":[{"name":"input","shape":[2],"datatype":"FP32","data":[1,2]}]}`, 400, "rank"},
		{"batch of two", url, `{"inputs":[{"name":"input","shape":[2,1],"datatype":"FP32","data":[1,2]}]}`, 400, "one sample per request"},
		{"count mismatch", url, `{"inputs":[{"name":"input","shape":[1,3],"datatype":"FP32","data":[1,2]}]}`, 400, "needs 3"},
		{"not a number", url, `{"inputs":[{"name":"input","shape":[1,1],"datatype":"FP32","data":["x"]}]}`, 400, "want a number"},
		{"wrong name", url, `{"inputs":[{"name":"image","shape":[1,1],"datatype":"FP32","data":[1]}]}`, 400, "the model's input"},
		{"unknown output", url, `{"inputs":[{"name":"input","shape":[1,1],"datatype":"FP32","data":[1]}],"outputs":[{"name":"nope"}]}`, 400, `unexpected inference output \"nope\" for model \"demo\": its output is \"output\"`},
		{"too large", url, inferBody(make([]float32, 600)...), 413, "--max-body 1024"},
		{"unknown model", ts.URL + "/v2/models/nope/infer", inferBody(1), 404, "serves demo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := post(t, c.url, c.body)
			if code != c.code || !strings.Contains(string(body), c.want) {
				t.Errorf("got %d %s, want %d containing %q", code, body, c.code, c.want)
			}
			var e kserve.ErrorResponse
			if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
				t.Errorf("body is not an error object: %s", body)
			}
		})
	}
	// The output the model has may be asked for by name.
	if code, _, body := post(t, url, `{"inputs":[{"name":"input","shape":[1,1],"datatype":"FP32","data":[1]}],"outputs":[{"name":"output"}]}`); code != 200 {
		t.Errorf("asking for the model's own output: %d %s", code, body)
	}
	if code, _ := get(t, ts.URL+"/v2/models/nope"); code != 404 {
		t.Errorf("metadata of unknown model: %d", code)
	}
}

func TestStrictShape(t *testing.T) {
	p := loadPlan(t, "demo-plan.json")
	_, ts := testServer(t, Options{Plan: p, InputShape: []int64{2, 2}})
	ok := `{"inputs":[{"name":"input","shape":[1,2,2],"datatype":"FP32","data":[[1,2],[3,4]]}]}`
	if code, _, body := post(t, ts.URL+"/v2/models/demo/infer", ok); code != 200 {
		t.Errorf("nested data: %d %s", code, body)
	}
	bad := `{"inputs":[{"name":"input","shape":[1,2,3],"datatype":"FP32","data":[1,2,3,4,5,6]}]}`
	if code, _, body := post(t, ts.URL+"/v2/models/demo/infer", bad); code != 400 || !strings.Contains(string(body), "shape[2]") {
		t.Errorf("wrong dim: %d %s", code, body)
	}
}

// TestDrop floods a single GPU: the dispatcher drops what cannot meet its deadline, and every
// drop is a 503 with the reason, the stage and Retry-After.
func TestDrop(t *testing.T) {
	p := loadPlan(t, "one-gpu.json")
	s, ts := testServer(t, Options{Plan: p})
	// A machine too busy to serve even the burst's first batch within the 25 ms SLO drops
	// everything: try the burst a few times.
	var ok, dropped int
	for try := 0; try < 3 && (ok == 0 || dropped == 0); try++ {
		ok, dropped = dropBurst(t, s, ts)
		time.Sleep(100 * time.Millisecond)
	}
	if ok == 0 || dropped == 0 {
		t.Errorf("%d served, %d dropped: want both", ok, dropped)
	}
}

func dropBurst(t *testing.T, s *Server, ts *httptest.Server) (ok, dropped int) {
	// Hold the driver for a while so that the burst reaches it at once, whatever the
	// machine's scheduling: the requests wait at the intake channel meanwhile. Their
	// deadlines count from their arrival, so the hold (5 ms) must leave time within the
	// 25 ms SLO for some to be served.
	go s.d.do(func() { time.Sleep(5 * time.Millisecond) })
	const n = 24
	type got struct {
		code  int
		retry string
		body  []byte
	}
	res := make([]got, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, h, b := post(t, ts.URL+"/v2/models/m1/infer", inferBody(float32(i)))
			res[i] = got{code, h.Get("Retry-After"), b}
		}()
	}
	wg.Wait()
	for _, r := range res {
		switch r.code {
		case 200:
			ok++
		case 503:
			dropped++
			var d kserve.DropResponse
			if err := json.Unmarshal(r.body, &d); err != nil {
				t.Fatal(err)
			}
			// Dropped by the dispatcher (stage queue) or refused at the door (intake).
			if d.Reason == "" || (d.Stage != "queue" && d.Stage != "intake") || r.retry != "1" || !strings.Contains(d.Error, d.Reason) {
				t.Errorf("drop %+v, Retry-After %q", d, r.retry)
			}
		default:
			t.Errorf("status %d: %s", r.code, r.body)
		}
	}
	return ok, dropped
}

func TestHealthAndMetadata(t *testing.T) {
	p := loadPlan(t, "demo-plan.json")
	s, ts := testServer(t, Options{Plan: p})
	for _, path := range []string{"/v2/health/live", "/v2/health/ready", "/v2/models/demo/ready", "/v2"} {
		if code, body := get(t, ts.URL+path); code != 200 {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	code, body := get(t, ts.URL+"/v2/models/demo")
	var md kserve.ModelMetadata
	if err := json.Unmarshal(body, &md); code != 200 || err != nil {
		t.Fatalf("metadata: %d %s", code, body)
	}
	if md.Name != "demo" || md.Platform != "plan-emulated" || md.SLOUs != int64(time.Duration(ppipesec.PlanOf(p).Models[0].SLO)/time.Microsecond) || md.Inputs[0].Datatype != "FP32" {
		t.Errorf("metadata %+v", md)
	}
	code, body = get(t, ts.URL+"/v1/plan")
	pl, err := formats.DecodeInto[*formats.Plan]("plan", body, intree.Sections())
	if code != 200 || err != nil {
		t.Fatalf("GET /v1/plan: %d %v", code, err)
	}
	if dg, _ := formats.Digest(pl); dg != s.ActiveDigest() {
		t.Errorf("plan digest %s, active %s", dg, s.ActiveDigest())
	}
	if code, _ := get(t, ts.URL+"/nope"); code != 404 {
		t.Errorf("unknown path: %d", code)
	}
	// A known path with the wrong method is 405 with Allow, not 404.
	resp, err := http.Get(ts.URL + "/v2/models/demo/infer")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET …/infer: %d, Allow %q; want 405, POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestMetrics(t *testing.T) {
	p := roomyPlan(t)
	dep, err := dpppipe.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	s, ts := testServer(t, Options{Plan: p})
	for i := 0; i < 3; i++ {
		if code, _, body := post(t, ts.URL+"/v2/models/demo/infer", inferBody(1)); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	post(t, ts.URL+"/v2/models/demo/infer", "{")
	code, body := get(t, ts.URL+"/metrics")
	if code != 200 {
		t.Fatal(code)
	}
	text := string(body)
	for _, name := range MetricNames {
		if name == "plan_drops_total" {
			continue // a labelled family shows once it has a series: nothing was dropped
		}
		if !strings.Contains(text, "# TYPE "+name+" ") {
			t.Errorf("metric family %s missing", name)
		}
	}
	for _, want := range []string{
		`plan_requests_total{model="demo"} 3`,
		`plan_request_latency_seconds_count{model="demo"} 3`,
		`plan_rejected_total{cause="bad-request",code="400"} 1`,
		"# TYPE go_goroutines gauge", "# TYPE process_resident_memory_bytes gauge", "# TYPE process_open_fds gauge",
		`plan_active_plan_info{digest="` + s.ActiveDigest() + `",name="ppipe"} 1`,
		`plan_queue_depth{model="demo"} 0`,
		fmt.Sprintf(`plan_worker_busy_seconds_total{stage=%q,worker=%q}`, dep.Stages[0].Name, dep.Topo.Workers[0].Name),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

// concurrent fires n requests spaced by gap and returns their status codes.
func concurrent(t *testing.T, url string, n int, gap time.Duration) []int {
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(url, "application/json", strings.NewReader(inferBody(float32(i))))
			if err != nil {
				codes[i] = -1
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
		time.Sleep(gap)
	}
	wg.Wait()
	return codes
}

// TestReload swaps plans while requests are in flight: every request is answered (200, or
// 503 for the policy's own drops), and the new plan's digest is active afterwards.
func TestReload(t *testing.T) {
	p1 := loadPlan(t, "demo-plan.json")
	p2 := loadPlan(t, "demo-plan.json")
	p2.Metadata.Name = "demo-v2"
	ppipesec.PlanOf(p2).Models[0].SLO = formats.Duration(20 * time.Millisecond)
	s, ts := testServer(t, Options{Plan: p1})
	old := s.ActiveDigest()
	done := make(chan []int)
	go func() { done <- concurrent(t, ts.URL+"/v2/models/demo/infer", 200, 500*time.Microsecond) }()
	time.Sleep(30 * time.Millisecond)
	b, _ := formats.Marshal(p2)
	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/v1/plan", bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT /v1/plan: %d %s", resp.StatusCode, body)
	}
	codes := <-done
	for i, c := range codes {
		if c != 200 && c != 503 {
			t.Errorf("request %d: status %d", i, c)
		}
	}
	if s.ActiveDigest() == old {
		t.Error("digest unchanged after reload")
	}
	_, mt := get(t, ts.URL+"/metrics")
	if !strings.Contains(string(mt), "plan_reloads_total 1") || !strings.Contains(string(mt), `name="demo-v2"`) {
		t.Errorf("metrics after reload:\n%s", mt)
	}
	code, md := get(t, ts.URL+"/v2/models/demo")
	if code != 200 || !strings.Contains(string(md), `"slo_us":20000`) {
		t.Errorf("metadata after reload: %s", md)
	}
	// A broken plan is refused with the reason, and the old one keeps serving.
	p3 := loadPlan(t, "demo-plan.json")
	ppipesec.PlanOf(p3).Models[0].Pipelines[0].Partitions[0].Count = 1000
	bad, _ := formats.Marshal(p3)
	req, _ = http.NewRequest(http.MethodPut, ts.URL+"/v1/plan", bytes.NewReader(bad))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "GPUs") {
		t.Errorf("bad plan: %d %s", resp.StatusCode, body)
	}
	if code, _, _ := post(t, ts.URL+"/v2/models/demo/infer", inferBody(1)); code != 200 {
		t.Errorf("after refused reload: %d", code)
	}
}

// TestShutdown drains: in-flight requests finish (200) or, past the drain deadline, get 503;
// none hangs; new requests are refused with 503.
func TestShutdown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
		want  int
	}{{"finish", 5 * time.Second, 200}, {"timeout", time.Millisecond, 503}} {
		t.Run(tc.name, func(t *testing.T) {
			p := loadPlan(t, "nic.json")
			before := goruntime.NumGoroutine()
			gx := newGated()
			s, err := New(withSystems(Options{Plan: p, DrainTimeout: tc.drain, NewExecutor: gx.factory}))
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(s)
			defer func() {
				gx.open()
				ts.Close()
				http.DefaultClient.CloseIdleConnections()
				checkGoroutines(t, before)
			}()
			codes := heldRequest(t, s, gx, ts.URL+"/v2/models/m2/infer")
			shut := make(chan error, 1)
			go func() { shut <- s.Shutdown(context.Background()) }()
			if tc.want == 200 {
				// Draining: the held request's hop may finish now.
				waitClosing(t, s)
				gx.open()
			}
			if err := <-shut; err != nil {
				t.Fatal(err)
			}
			if c := <-codes; c != tc.want {
				t.Errorf("in-flight request: %d, want %d", c, tc.want)
			}
			code, h, body := post(t, ts.URL+"/v2/models/m2/infer", inferBody(1))
			if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(string(body), `"reason":"shutdown"`) {
				t.Errorf("after shutdown: %d %s", code, body)
			}
			if code, _ := get(t, ts.URL+"/v2/health/ready"); code != 503 {
				t.Errorf("ready after shutdown: %d", code)
			}
		})
	}
}

// gated is an emulated executor whose hops start only once the test opens the gate: a
// request is held in flight for as long as a test needs, however slow the machine.
type gated struct {
	gate chan struct{}
	once sync.Once
	// started counts the hops handed to the gated executors. A request in one is in a
	// dispatched batch, which no policy may drop; one only accepted may still be dropped
	// late (a 14 ms SLO passes during a stall of a loaded machine) before it is dispatched.
	started atomic.Int64
}

func newGated() *gated { return &gated{gate: make(chan struct{})} }

func (g *gated) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gated) factory(clk worker.Clock, _ *dataplane.Deployment, _ *formats.Plan) (worker.Executor, error) {
	return &gatedExecutor{Emulated: worker.NewEmulated(clk, 0, 1), g: g}, nil
}

type gatedExecutor struct {
	*worker.Emulated
	g *gated
}

func (e *gatedExecutor) Run(job *worker.Job, done func(*worker.Job)) {
	e.g.started.Add(1)
	go func() {
		<-e.g.gate
		e.Emulated.Run(job, done)
	}()
}

// heldRequest posts one request to url and waits until the driver holds it: its hop waits
// at g's gate (accepted is not enough: an accepted request may still be dropped late). The
// channel gets its status code. A request the machine delivered too late to be admitted, or
// dropped before its hop started (503), is sent again.
func heldRequest(t *testing.T, s *Server, g *gated, url string) <-chan int {
	t.Helper()
	for try := 0; ; try++ {
		codes := make(chan int, 1)
		hops := g.started.Load()
		go func() {
			code, _, _ := post(t, url, inferBody(1))
			codes <- code
		}()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			var got int
			s.d.do(func() { got = s.d.gen.outstanding })
			if got >= 1 && g.started.Load() > hops {
				return codes
			}
			select {
			case c := <-codes:
				if try == 3 {
					t.Fatalf("the request was answered %d before the driver held it, %d times", c, try+1)
				}
				deadline = time.Time{}
			default:
				time.Sleep(100 * time.Microsecond)
			}
		}
		if !deadline.IsZero() {
			t.Fatal("the driver never held the request")
		}
	}
}

// waitClosing waits until Shutdown has begun (readiness off).
func waitClosing(t *testing.T, s *Server) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if s.closing.Load() {
			return
		}
	}
	t.Fatal("Shutdown did not begin")
}

// TestMaxInFlight: beyond --max-inflight, requests are refused at the door with 503.
func TestMaxInFlight(t *testing.T) {
	gx := newGated()
	defer gx.open()
	s, ts := testServer(t, Options{Plan: loadPlan(t, "nic.json"), MaxInFlight: 1, NewExecutor: gx.factory})
	first := heldRequest(t, s, gx, ts.URL+"/v2/models/m2/infer")
	code, h, body := post(t, ts.URL+"/v2/models/m2/infer", inferBody(2))
	gx.open()
	if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(string(body), `"reason":"overload"`) || !strings.Contains(string(body), `"stage":"intake"`) {
		t.Errorf("second request: %d %s", code, body)
	}
	if c := <-first; c != 200 {
		t.Errorf("first request: %d", c)
	}
	if code, _, _ := post(t, ts.URL+"/v2/models/m2/infer", inferBody(3)); code != 200 {
		t.Errorf("after the first finished: %d", code)
	}
}

// TestIDRenewal: the engine is replaced when its request IDs run low (idLimit), idle or
// not, and no request is lost across the swaps.
func TestIDRenewal(t *testing.T) {
	s, ts := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json")})
	s.d.do(func() { s.d.idLimit = 16 })
	codes := concurrent(t, ts.URL+"/v2/models/demo/infer", 300, 300*time.Microsecond)
	for i, c := range codes {
		if c != 200 && c != 503 {
			t.Errorf("request %d: status %d", i, c)
		}
	}
	var gens, reqs int
	s.d.do(func() { gens, reqs = s.d.gens, s.d.gen.eng.HeldRequests() })
	if gens < 5 || reqs > 16+16/2+64 {
		t.Errorf("%d engines, the last holds %d requests", gens, reqs)
	}
	_, mt := get(t, ts.URL+"/metrics")
	// Every request was accepted by the driver or refused at the door (a slow machine can
	// close it), and none is left in flight.
	accepted, door := metricValue(string(mt), `plan_requests_total{model="demo"}`), 0.0
	for _, line := range strings.Split(string(mt), "\n") {
		if strings.HasPrefix(line, `plan_drops_total{model="demo",`) && strings.Contains(line, `stage="intake"`) {
			door += metricValue(line, line[:strings.LastIndexByte(line, ' ')])
		}
	}
	if accepted+door != 300 || !strings.Contains(string(mt), `plan_requests_in_flight{model="demo"} 0`) {
		t.Errorf("metrics:\n%s", mt)
	}
}

// flakyPolicy makes one invalid decision (dropping a request twice) on the first arrival it
// ever sees, then behaves as PPipe: the driver must answer the victim with 500 and go on.
type flakyPolicy struct {
	dataplane.Policy
	tripped *atomic.Bool
}

func (f *flakyPolicy) Handle(now dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	if ev.Kind == dataplane.EvArrival && f.tripped.CompareAndSwap(false, true) {
		out.Drop(ev.Req, dataplane.NoStage, dataplane.DropDeadline, 0)
		out.Drop(ev.Req, dataplane.NoStage, dataplane.DropDeadline, 0)
		return
	}
	f.Policy.Handle(now, ev, out)
}

var flakyTripped atomic.Bool

var flakySpec = dataplane.PolicySpec{Name: "serve-test-flaky", Doc: "test only: one invalid decision, then ppipe", Serves: []string{dpppipe.Kind},
	New: func(cfg dataplane.Config) (dataplane.Policy, error) {
		return &flakyPolicy{Policy: dpppipe.NewPPipe(dpppipe.PPipeOptions{Penalty: true, Admission: true}), tripped: &flakyTripped}, nil
	}}

func TestEngineError(t *testing.T) {
	flakyTripped.Store(false)
	_, ts := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json"), Policy: dataplane.Config{Policy: "serve-test-flaky"}})
	code, _, body := post(t, ts.URL+"/v2/models/demo/infer", inferBody(1))
	if code != 500 && code != 503 {
		t.Errorf("first request: %d %s", code, body)
	}
	for i := 0; i < 3; i++ {
		if code, _, body := post(t, ts.URL+"/v2/models/demo/infer", inferBody(1)); code != 200 {
			t.Errorf("after the engine error: %d %s", code, body)
		}
	}
}

// metricValue returns the value of the series written exactly as series (0 if absent).
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}
