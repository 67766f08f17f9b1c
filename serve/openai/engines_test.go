package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/serve"
)

// fakeVLLM is an in-process stand-in for a vLLM server: /v1/models, /metrics with the queue
// gauges, and completions that answer which model they were asked for.
type fakeVLLM struct {
	name             string
	waiting, running float64
	mu               sync.Mutex
	bodies           []map[string]any
	// broken makes /metrics answer 503 (an engine that went down).
	broken atomic.Bool
	// fail, when set, says how this engine fails the completion it has just received.
	fail func(v *fakeVLLM) failMode
}

// failMode is how a fake engine fails a completion.
type failMode int

const (
	answer        failMode = iota // it does not: the engine answers
	status500                     // 500 with a body, nothing else
	dropConn                      // the connection closes before any answer (a crashed engine)
	cutMidAnswer                  // the status and the first bytes (an SSE chunk), then the connection closes
	badRequest400                 // 400: the engine's verdict on the request
	hang                          // nothing until the client goes away (a long generation)
)

func (v *fakeVLLM) received() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.bodies)
}

func (v *fakeVLLM) handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}]}`, v.name)
	})
	m.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		if v.broken.Load() {
			http.Error(w, "engine down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "# HELP vllm:num_requests_waiting Number of requests waiting.\n# TYPE vllm:num_requests_waiting gauge\n"+
			"vllm:num_requests_waiting{model_name=%q} %g\nvllm:num_requests_running{model_name=%q} %g\nvllm:gpu_cache_usage_perc{model_name=%q} 0.5\n",
			v.name, v.waiting, v.name, v.running, v.name)
	})
	complete := func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		v.mu.Lock()
		v.bodies = append(v.bodies, body)
		v.mu.Unlock()
		mode := answer
		if v.fail != nil {
			mode = v.fail(v)
		}
		switch mode {
		case hang:
			<-r.Context().Done()
			return
		case status500:
			http.Error(w, `{"object":"error","message":"CUDA error: an illegal memory access was encountered"}`, 500)
			return
		case dropConn:
			panic(http.ErrAbortHandler)
		case badRequest400:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprint(w, `{"object":"error","message":"max_tokens is too large","type":"BadRequestError","code":400}`)
			return
		case cutMidAnswer:
			if body["stream"] == true {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[{\"text\":\"real\"}]}\n\n", body["model"])
			} else {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"object":"text_completion","model":%q,"choi`, body["model"])
			}
			_ = http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		if body["stream"] == true {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[{\"text\":\"real\"}]}\n\ndata: [DONE]\n\n", body["model"])
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"text_completion","model":%q,"choices":[{"index":0,"text":"real words","finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, body["model"])
	}
	m.HandleFunc("POST /v1/completions", complete)
	m.HandleFunc("POST /v1/chat/completions", complete)
	return m
}

// TestParseGauges: engines' /metrics are read with the Prometheus text parser (the
// exposition format's escaping and timestamps are not hand-parsed): samples of a family summed over labels (quoted braces in a label value, a
// timestamp), a family absent from the text absent from the map, a name that only starts
// like the one asked for not taken; an exposition the parser refuses is an error (the hand
// parser skipped the bad line and read the rest).
func TestParseGauges(t *testing.T) {
	names := []string{"vllm:num_requests_waiting", "vllm:num_requests_running"}
	for _, tc := range []struct {
		name, text string
		want       map[string]float64
		err        string
	}{
		{"vllm", "# HELP vllm:num_requests_waiting Waiting.\n# TYPE vllm:num_requests_waiting gauge\n" +
			"vllm:num_requests_waiting{model_name=\"a\",x=\"}\"} 2\nvllm:num_requests_waiting{model_name=\"b\"} 3.5\n" +
			"vllm:num_requests_running 4 1700000000\nvllm:num_requests_waiting_total 100\n",
			map[string]float64{"vllm:num_requests_waiting": 5.5, "vllm:num_requests_running": 4}, ""},
		{"counter and absent family", "# TYPE vllm:num_requests_running counter\nvllm:num_requests_running 7\n",
			map[string]float64{"vllm:num_requests_running": 7}, ""},
		{"empty", "", map[string]float64{}, ""},
		{"malformed line", "vllm:num_requests_running 4\nbad{ 7\n", nil, "parsing the metrics"},
		{"not a number", "vllm:num_requests_running four\n", nil, "parsing the metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGauges([]byte(tc.text), names...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(g, tc.want) {
				t.Errorf("gauges %v, want %v", g, tc.want)
			}
		})
	}
}

func TestEndpointList(t *testing.T) {
	cases := []struct {
		in, want, err string
	}{
		{"llm-0=http://a:8000/,llm-1=https://b", "llm-0=http://a:8000,llm-1=https://b", ""},
		{"llm-0", "", "want INSTANCE=URL"},
		{"llm-0=ftp://a", "", "http(s) URL"},
		{"llm-0=http://a,llm-0=http://b", "", "given twice"},
	}
	for _, tc := range cases {
		l := EndpointList{}
		err := l.Set(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || l.String() != tc.want {
			t.Errorf("%q: %q %v", tc.in, l.String(), err)
		}
	}
}

// TestRemoteEngines: with --llm-endpoints, QLM dispatches each request to an instance and
// the instance's engine (a fake vLLM) answers it, under its own model name; its queue gauges
// are read from /metrics.
func TestRemoteEngines(t *testing.T) {
	v0, v1 := &fakeVLLM{name: "mistralai/Mistral-7B", waiting: 2, running: 5}, &fakeVLLM{name: "lmsys/vicuna-13b", waiting: 1}
	s0, s1 := httptest.NewServer(v0.handler()), httptest.NewServer(v1.handler())
	defer s0.Close()
	defer s1.Close()
	fe := memFrontend()
	if err := fe.Endpoints.Set("llm-0=" + s0.URL + ",llm-1=" + s1.URL); err != nil {
		t.Fatal(err)
	}
	_, url := qlmServer(t, fe)
	engines := map[string]string{"llm-0": "mistralai/Mistral-7B", "llm-1": "lmsys/vicuna-13b"}
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		body := `{"model":"vicuna-chat","prompt":"hi","max_tokens":4,"prompt_tokens":9}`
		if path != "/v1/completions" {
			body = `{"model":"vicuna-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`
		}
		resp, b := post(t, url+path, body)
		inst := resp.Header.Get("X-Plan-Instance")
		var r struct{ Model string }
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %s", path, b)
		}
		if resp.StatusCode != 200 || engines[inst] == "" || r.Model != engines[inst] || !strings.Contains(string(b), "real words") {
			t.Errorf("%s: status %d instance %q: %s", path, resp.StatusCode, inst, b)
		}
	}
	// The stream is the engine's.
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"model":"mistral-chat","prompt":"x","max_tokens":2,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(sb), `"text":"real"`) || !strings.HasSuffix(string(sb), "data: [DONE]\n\n") {
		t.Errorf("stream %q", sb)
	}
	// Our extension fields stay here.
	for _, v := range []*fakeVLLM{v0, v1} {
		v.mu.Lock()
		for _, b := range v.bodies {
			if _, ok := b["prompt_tokens"]; ok {
				t.Errorf("prompt_tokens forwarded: %v", b)
			}
		}
		v.mu.Unlock()
	}
	gr, err := http.Get(url + "/v1/engines")
	if err != nil {
		t.Fatal(err)
	}
	defer gr.Body.Close()
	var es struct{ Data []EngineState }
	if err := json.NewDecoder(gr.Body).Decode(&es); err != nil {
		t.Fatal(err)
	}
	if len(es.Data) != 2 || es.Data[0].Waiting != 2 || es.Data[0].Running != 5 || es.Data[1].Waiting != 1 || es.Data[0].Model != "mistralai/Mistral-7B" {
		t.Errorf("engines %+v", es.Data)
	}
}

// The QLM policy takes the engines' gauges (InstanceObserver).
var _ InstanceObserver = (*dq.Policy)(nil)

// TestRemoteEngineLoadSteers: both instances serve mistral-7b, each through a fake vLLM. The
// gauges one engine reports in /metrics beyond what QLM sent it are work ahead of that
// instance's virtual queue (QLM §6), so new requests go to the other instance; with no
// external load they spread over both. The first poll round reaches the policy before the
// server starts answering, so no waiting is needed.
func TestRemoteEngineLoadSteers(t *testing.T) {
	cases := []struct {
		name           string
		queued         [2]float64 // vllm:num_requests_waiting per engine
		want0, want1   bool       // instances that must get requests
		never0, never1 bool       // instances that must get none
	}{
		{name: "no external load", want0: true, want1: true},
		{name: "llm-0 engine has a long queue", queued: [2]float64{300, 0}, want1: true, never0: true},
		{name: "llm-1 engine has a long queue", queued: [2]float64{0, 300}, want0: true, never1: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v0 := &fakeVLLM{name: "mistral-a", waiting: tc.queued[0], running: 2}
			v1 := &fakeVLLM{name: "mistral-b", waiting: tc.queued[1], running: 2}
			s0, s1 := httptest.NewServer(v0.handler()), httptest.NewServer(v1.handler())
			defer s0.Close()
			defer s1.Close()
			fe := memFrontend()
			if err := fe.Endpoints.Set("llm-0=" + s0.URL + ",llm-1=" + s1.URL); err != nil {
				t.Fatal(err)
			}
			_, url := qlmServerPlan(t, fe, serve.Options{}, func(p *formats.Plan) {
				qlmsec.PlanOf(p).Instances[1].Model = "mistral-7b"
			})
			got := map[string]int{}
			// The fake engines answer at once; the spread needs each request's emulated copy
			// to hold its instance when the next arrives. 20 tokens (~0.4 s of decode) outlast
			// a round trip under -race on a loaded machine, where 4 (~80 ms) did not always.
			for i := range 6 {
				resp, b := post(t, url+"/v1/completions", fmt.Sprintf(`{"model":"mistral-chat","prompt":"p%d","max_tokens":20,"prompt_tokens":%d}`, i, 100<<min(i, 4)))
				if resp.StatusCode != 200 {
					t.Fatalf("request %d: status %d: %s", i, resp.StatusCode, b)
				}
				got[resp.Header.Get("X-Plan-Instance")]++
			}
			if (tc.want0 && got["llm-0"] == 0) || (tc.want1 && got["llm-1"] == 0) || (tc.never0 && got["llm-0"] > 0) || (tc.never1 && got["llm-1"] > 0) {
				t.Errorf("requests per instance %v", got)
			}
		})
	}
}

// TestRemoteEngineDown: an engine whose /metrics fails DownAfter polls in a row is failed in
// the engine (its instance is down: QLM re-queues and re-plans, and places nothing there), so
// every request goes to the other instance; once it answers again the instance comes back.
func TestRemoteEngineDown(t *testing.T) {
	v0 := &fakeVLLM{name: "mistral-a"}
	v1 := &fakeVLLM{name: "mistral-b"}
	s0, s1 := httptest.NewServer(v0.handler()), httptest.NewServer(v1.handler())
	defer s0.Close()
	defer s1.Close()
	fe := memFrontend()
	fe.Poll = 10 * time.Millisecond
	if err := fe.Endpoints.Set("llm-0=" + s0.URL + ",llm-1=" + s1.URL); err != nil {
		t.Fatal(err)
	}
	_, url := qlmServerPlan(t, fe, serve.Options{}, func(p *formats.Plan) {
		qlmsec.PlanOf(p).Instances[1].Model = "mistral-7b"
	})
	// waitDown polls /v1/engines until llm-0's down flag is want.
	waitDown := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			resp, err := http.Get(url + "/v1/engines")
			if err != nil {
				t.Fatal(err)
			}
			var l struct{ Data []EngineState }
			err = json.NewDecoder(resp.Body).Decode(&l)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range l.Data {
				if e.Instance == "llm-0" && e.Down == want && fe.fwd.isDown("llm-0") == want {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("llm-0 not down=%v after 20 s: %+v", want, l.Data)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	v0.broken.Store(true)
	waitDown(true)
	got := map[string]int{}
	for i := range 6 {
		resp, b := post(t, url+"/v1/completions", fmt.Sprintf(`{"model":"mistral-chat","prompt":"p%d","max_tokens":4,"prompt_tokens":%d}`, i, 100<<min(i, 4)))
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %s", i, resp.StatusCode, b)
		}
		got[resp.Header.Get("X-Plan-Instance")]++
	}
	if got["llm-0"] > 0 || got["llm-1"] != 6 {
		t.Errorf("requests per instance with llm-0's engine down: %v; want all on llm-1", got)
	}
	v0.broken.Store(false)
	waitDown(false)
}

// TestSetWorkerDownRequeues: an emulated instance that fails while it generates loses its
// sequences' KV, and QLM re-queues them on the other instance (with the tokens they had):
// every request is still answered in full. An unknown worker is an error.
func TestSetWorkerDownRequeues(t *testing.T) {
	s, url := qlmServerPlan(t, memFrontend(), serve.Options{}, func(p *formats.Plan) {
		qlmsec.PlanOf(p).Instances[1].Model = "mistral-7b"
	})
	if err := s.SetWorkerDown("llm-9", true); err == nil || !strings.Contains(err.Error(), `unknown worker "llm-9"`) {
		t.Errorf("unknown worker: %v", err)
	}
	const n, tokens = 6, 300
	type res struct {
		code  int
		usage Usage
	}
	out := make(chan res, n)
	for i := range n {
		go func() {
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(
				fmt.Sprintf(`{"model":"mistral-chat","prompt":"p%d","max_tokens":%d,"prompt_tokens":200}`, i, tokens)))
			if err != nil {
				out <- res{code: -1}
				return
			}
			defer resp.Body.Close()
			var r struct {
				Usage Usage `json:"usage"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&r)
			out <- res{resp.StatusCode, r.Usage}
		}()
	}
	time.Sleep(300 * time.Millisecond) // both instances are generating by now
	if err := s.SetWorkerDown("llm-0", true); err != nil {
		t.Fatal(err)
	}
	for range n {
		r := <-out
		if r.code != 200 || r.usage.CompletionTokens != tokens {
			t.Errorf("answer %d with %d completion tokens; want 200 with %d", r.code, r.usage.CompletionTokens, tokens)
		}
	}
	if err := s.SetWorkerDown("llm-0", false); err != nil {
		t.Fatal(err)
	}
}

// firstOnly makes the first engine that receives a completion fail every completion it gets
// with mode, and the others answer: the engine of QLM's first pick is the broken one.
func firstOnly(mode failMode) func(*fakeVLLM) failMode {
	var bad atomic.Pointer[fakeVLLM]
	return func(v *fakeVLLM) failMode {
		bad.CompareAndSwap(nil, v)
		if bad.Load() == v {
			return mode
		}
		return answer
	}
}

func always(mode failMode) func(*fakeVLLM) failMode {
	return func(*fakeVLLM) failMode { return mode }
}

// marks counts the instances the front end failed in the engine and brought back
// (Frontend.marked: SetWorkerDown calls that took effect), as "llm-0 down" / "llm-0 up".
type marks struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *marks) record(instance string, down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	k := instance + " up"
	if down {
		k = instance + " down"
	}
	m.n[k]++
}

func (m *marks) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprint(m.n)
}

// remoteFailServer serves the QLM plan with both instances on mistral-7b, llm-0 on engine
// v[0] and llm-1 on v[1], each failing as fail says. The engines are polled once, at the
// start (--llm-poll 1h): what fails an instance afterwards is the forward alone.
func remoteFailServer(t *testing.T, fail func(*fakeVLLM) failMode) (*Frontend, string, [2]*fakeVLLM, *marks) {
	t.Helper()
	v := [2]*fakeVLLM{{name: "mistral-a", fail: fail}, {name: "mistral-b", fail: fail}}
	s0, s1 := httptest.NewServer(v[0].handler()), httptest.NewServer(v[1].handler())
	t.Cleanup(s0.Close)
	t.Cleanup(s1.Close)
	fe := memFrontend()
	fe.Poll = time.Hour
	m := &marks{}
	fe.fwd.marked = m.record
	if err := fe.Endpoints.Set("llm-0=" + s0.URL + ",llm-1=" + s1.URL); err != nil {
		t.Fatal(err)
	}
	_, url := qlmServerPlan(t, fe, serve.Options{}, func(p *formats.Plan) {
		qlmsec.PlanOf(p).Instances[1].Model = "mistral-7b"
	})
	return fe, url, v, m
}

// engineStates reads GET /v1/engines.
func engineStates(t *testing.T, url string) map[string]EngineState {
	t.Helper()
	resp, err := http.Get(url + "/v1/engines")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct{ Data []EngineState }
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	out := map[string]EngineState{}
	for _, e := range l.Data {
		out[e.Instance] = e
	}
	return out
}

type answered struct {
	code     int
	instance string
	body     string
	err      error
}

// postAll sends n requests at once, each bounded by a deadline: one that hangs fails the
// test instead of the run.
func postAll(t *testing.T, url, path string, n int, stream bool) []answered {
	t.Helper()
	out := make(chan answered, n)
	for i := range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			body := fmt.Sprintf(`{"model":"mistral-chat","prompt":"p%d","max_tokens":40,"prompt_tokens":%d,"stream":%v}`, i, 100<<min(i, 4), stream)
			if path == "/v1/chat/completions" {
				body = fmt.Sprintf(`{"model":"mistral-chat","messages":[{"role":"user","content":"p%d"}],"max_tokens":40,"stream":%v}`, i, stream)
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out <- answered{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			out <- answered{code: resp.StatusCode, instance: resp.Header.Get("X-Plan-Instance"), body: string(b), err: err}
		}()
	}
	var as []answered
	for range n {
		as = append(as, <-out)
	}
	return as
}

// TestRemoteEngineFailover: the engine of the instance QLM dispatched a request to fails
// before answering (a 500, or a connection closed without an answer). That is the instance
// failing: it is failed in the engine at once (down at /v1/engines, SetWorkerDown once), QLM
// re-queues the request's emulated copy on the live instance (QLM §7), and the request is
// forwarded there, so every client gets the live engine's answer. With both engines failing
// every request ends with the drop and its reason (no live instance: worker-failed), not
// with the first engine's error.
func TestRemoteEngineFailover(t *testing.T) {
	cases := []struct {
		name   string
		mode   failMode
		both   bool
		path   string
		stream bool
	}{
		{name: "first engine answers 500", mode: status500, path: "/v1/completions"},
		{name: "first engine answers 500 to streams", mode: status500, path: "/v1/completions", stream: true},
		{name: "first engine closes the connection", mode: dropConn, path: "/v1/chat/completions"},
		{name: "both engines answer 500", mode: status500, both: true, path: "/v1/completions"},
		{name: "both engines close the connection", mode: dropConn, both: true, path: "/v1/chat/completions", stream: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fail := firstOnly(tc.mode)
			if tc.both {
				fail = always(tc.mode)
			}
			fe, url, v, m := remoteFailServer(t, fail)
			const n = 6
			as := postAll(t, url, tc.path, n, tc.stream)
			es := engineStates(t, url)
			if tc.both {
				for _, a := range as {
					var r struct{ Error *Error }
					_ = json.Unmarshal([]byte(a.body), &r)
					if a.err != nil || a.code != 503 || r.Error == nil || r.Error.Code != "worker-failed" || !strings.Contains(r.Error.Message, "worker-failed") {
						t.Errorf("answer %d %v: %s; want 503 with the drop (worker-failed)", a.code, a.err, a.body)
					}
				}
				for _, inst := range []string{"llm-0", "llm-1"} {
					if e := es[inst]; !e.Down || e.Failures < DownAfter || e.Err == "" || !fe.fwd.isDown(inst) {
						t.Errorf("%s: %+v (failed in the engine: %v); want down", inst, e, fe.fwd.isDown(inst))
					}
				}
				if got := m.String(); got != "map[llm-0 down:1 llm-1 down:1]" {
					t.Errorf("SetWorkerDown %s; want each instance down once", got)
				}
				return
			}
			good := ""
			for _, a := range as {
				if a.err != nil || a.code != 200 || !strings.Contains(a.body, "real") {
					t.Errorf("answer %d %v: %s; want 200 from the live engine", a.code, a.err, a.body)
					continue
				}
				if good == "" {
					good = a.instance
				}
				if a.instance != good {
					t.Errorf("answers from %s and %s; want all from the live instance", good, a.instance)
				}
			}
			if t.Failed() {
				return
			}
			bad, vb, vg := "llm-0", v[0], v[1]
			if good == "llm-0" {
				bad, vb, vg = "llm-1", v[1], v[0]
			}
			if vb.received() == 0 || vg.received() != n {
				t.Errorf("engine %s got %d requests, %s %d; want ≥ 1 and %d (each request forwarded once to the live one)", bad, vb.received(), good, vg.received(), n)
			}
			if e := es[bad]; !e.Down || e.Failures < DownAfter || e.Err == "" || !fe.fwd.isDown(bad) {
				t.Errorf("%s: %+v (failed in the engine: %v); want down", bad, e, fe.fwd.isDown(bad))
			}
			if e := es[good]; e.Down || fe.fwd.isDown(good) {
				t.Errorf("%s: %+v; want up", good, e)
			}
			if got, want := m.String(), fmt.Sprintf("map[%s down:1]", bad); got != want {
				t.Errorf("SetWorkerDown %s; want %s", got, want)
			}
			// The next poll round that reaches the engine brings the instance back (its
			// /metrics answers: it may have restarted).
			fe.fwd.engines.round()
			if e := engineStates(t, url)[bad]; e.Down || e.Failures != 0 || fe.fwd.isDown(bad) {
				t.Errorf("%s after a successful poll: %+v (failed in the engine: %v); want up", bad, e, fe.fwd.isDown(bad))
			}
			if got, want := m.String(), fmt.Sprintf("map[%s down:1 %s up:1]", bad, bad); got != want {
				t.Errorf("SetWorkerDown %s; want %s", got, want)
			}
		})
	}
}

// TestRemoteEngineFailsAfterCopy: the engine fails the request only after its emulated copy
// has finished on that instance (a non-streamed answer is sent whole, so a crash late in
// the generation looks like this), and no re-queue can re-dispatch it: the copy is
// submitted again, QLM places it on the live instance, and the request is forwarded there.
func TestRemoteEngineFailsAfterCopy(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	var bad atomic.Pointer[fakeVLLM]
	_, url, v, m := remoteFailServer(t, func(v *fakeVLLM) failMode {
		bad.CompareAndSwap(nil, v)
		if bad.Load() != v {
			return answer
		}
		<-release
		return status500
	})
	// metric reads a counter of the server's: plan_requests_total counts the emulated
	// copies submitted, plan_responses_total those that ended.
	metric := func(name string) float64 {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Error(err)
			return -1
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		g, err := ParseGauges(b, name)
		if err != nil {
			t.Error(err)
			return -1
		}
		return g[name]
	}
	type res struct {
		code     int
		instance string
		body     []byte
	}
	out := make(chan res, 1)
	go func() {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"model":"mistral-chat","prompt":"p","max_tokens":2}`))
		if err != nil {
			out <- res{code: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- res{resp.StatusCode, resp.Header.Get("X-Plan-Instance"), b}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for metric("plan_responses_total") < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the emulated copy did not end in 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	unblock()
	var r res
	select {
	case r = <-out:
	case <-time.After(20 * time.Second):
		t.Fatal("no answer 20 s after the engine failed")
	}
	good, vb := "llm-1", v[0]
	if bad.Load() == v[1] {
		good, vb = "llm-0", v[1]
	}
	if r.code != 200 || r.instance != good || !strings.Contains(string(r.body), "real words") {
		t.Errorf("answer %d from %q: %s; want 200 from %s", r.code, r.instance, r.body, good)
	}
	if n, copies := vb.received(), metric("plan_requests_total"); n != 1 || copies != 2 {
		t.Errorf("failed engine got %d requests, the server %g emulated copies; want 1 and 2", n, copies)
	}
	if got := m.String(); !strings.Contains(got, "down:1") {
		t.Errorf("SetWorkerDown %s; want the failed instance down", got)
	}
}

// TestRemoteEngineNoRetry: a failure after the answer started cannot be hidden from the
// client, and a 4xx is the engine's verdict on the request: neither is retried elsewhere nor
// fails the instance. A broken stream ends with an error event and [DONE]; a broken whole
// answer with the connection closed; a 4xx is passed through.
func TestRemoteEngineNoRetry(t *testing.T) {
	cases := []struct {
		name   string
		mode   failMode
		stream bool
		check  func(t *testing.T, a answered)
	}{
		{name: "stream broken after a chunk", mode: cutMidAnswer, stream: true, check: func(t *testing.T, a answered) {
			chunk := strings.Index(a.body, `"text":"real"`)
			ev := strings.Index(a.body, `data: {"error":{`)
			if a.err != nil || a.code != 200 || chunk < 0 || ev < chunk || !strings.Contains(a.body[ev:], `"code":"engine_failed"`) ||
				!strings.HasSuffix(a.body, "}\n\ndata: [DONE]\n\n") {
				t.Errorf("stream %d %v: %q; want the chunk, an error event, [DONE]", a.code, a.err, a.body)
			}
		}},
		{name: "whole answer broken", mode: cutMidAnswer, check: func(t *testing.T, a answered) {
			if a.err == nil {
				t.Errorf("answer %d read whole: %q; want the connection closed", a.code, a.body)
			}
		}},
		{name: "400 passes through", mode: badRequest400, check: func(t *testing.T, a answered) {
			if a.err != nil || a.code != 400 || !strings.Contains(a.body, "max_tokens is too large") {
				t.Errorf("answer %d %v: %q; want the engine's 400", a.code, a.err, a.body)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fe, url, v, m := remoteFailServer(t, always(tc.mode))
			as := postAll(t, url, "/v1/completions", 1, tc.stream)
			tc.check(t, as[0])
			if n := v[0].received() + v[1].received(); n != 1 {
				t.Errorf("the engines got %d requests; want 1 (no retry)", n)
			}
			if got := m.String(); got != "map[]" || fe.fwd.isDown("llm-0") || fe.fwd.isDown("llm-1") {
				t.Errorf("SetWorkerDown %s; want no instance failed", got)
			}
		})
	}
}

// TestEngineFailedDuringPoll: a forward's failure counts as DownAfter failed polls at once;
// a poll that was out when it came does not undo it, the next successful one does.
func TestEngineFailedDuringPoll(t *testing.T) {
	v := &fakeVLLM{name: "m"}
	var during atomic.Pointer[func()]
	h := v.handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := during.Load(); f != nil && r.URL.Path == "/metrics" {
			(*f)()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	e := StartEngines(EndpointList{"llm-0": srv.URL}, time.Hour, nil, nil)
	defer e.Close()
	steps := []struct {
		name   string
		fail   bool   // a forward fails before the poll
		during bool   // a forward fails while the poll is out
		broken bool   // the poll fails
		want   string // Failures/Down/Err after the poll
	}{
		{name: "forward failed, poll fails", fail: true, broken: true, want: "4 true GET"},
		{name: "forward failed during a successful poll", during: true, want: "5 true during"},
		{name: "successful poll", want: "0 false "},
		{name: "forward failed, then a successful poll", fail: true, want: "0 false "},
	}
	for _, st := range steps {
		if st.fail {
			e.fail("llm-0", "before")
			if s, _ := e.Get("llm-0"); !s.Down || s.Failures < DownAfter || s.Err != "before" {
				t.Errorf("%s: after the failure %+v", st.name, s)
			}
		}
		during.Store(nil)
		if st.during {
			f := func() { e.fail("llm-0", "during") }
			during.Store(&f)
		}
		v.broken.Store(st.broken)
		e.pollAll(context.Background())
		s, _ := e.Get("llm-0")
		if got := fmt.Sprintf("%d %v %s", s.Failures, s.Down, s.Err); !strings.HasPrefix(got, st.want) {
			t.Errorf("%s: %q, want %q…", st.name, got, st.want)
		}
	}
}
