package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
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

func TestParseGauges(t *testing.T) {
	text := "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"a\",x=\"}\"} 2\nvllm:num_requests_waiting{model_name=\"b\"} 3.5\n" +
		"vllm:num_requests_running 4 1700000000\nvllm:num_requests_waiting_total 100\nbad{ 7\n"
	g := ParseGauges([]byte(text), "vllm:num_requests_waiting", "vllm:num_requests_running")
	if g["vllm:num_requests_waiting"] != 5.5 || g["vllm:num_requests_running"] != 4 || len(g) != 2 {
		t.Errorf("gauges %v", g)
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
				p.QLM.Instances[1].Model = "mistral-7b"
			})
			got := map[string]int{}
			for i := range 6 {
				resp, b := post(t, url+"/v1/completions", fmt.Sprintf(`{"model":"mistral-chat","prompt":"p%d","max_tokens":4,"prompt_tokens":%d}`, i, 100<<i))
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
		p.QLM.Instances[1].Model = "mistral-7b"
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
				if e.Instance == "llm-0" && e.Down == want && fe.isDown("llm-0") == want {
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
		resp, b := post(t, url+"/v1/completions", fmt.Sprintf(`{"model":"mistral-chat","prompt":"p%d","max_tokens":4,"prompt_tokens":%d}`, i, 100<<i))
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
		p.QLM.Instances[1].Model = "mistral-7b"
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
