package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/serve"
)

// qlmServer serves testdata/openai/qlm-plan.json (plan solve of testdata/qlm) with emulated
// instances and the front end fe.
func qlmServer(t testing.TB, fe *Frontend) (*serve.Server, string) {
	t.Helper()
	return qlmServerOpts(t, fe, serve.Options{})
}

func qlmServerOpts(t testing.TB, fe *Frontend, o serve.Options) (*serve.Server, string) {
	t.Helper()
	return qlmServerPlan(t, fe, o, nil)
}

// qlmServerPlan is qlmServerOpts with the plan changed by edit (nil: as read).
func qlmServerPlan(t testing.TB, fe *Frontend, o serve.Options, edit func(*formats.Plan)) (*serve.Server, string) {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "openai", "qlm-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(p)
	}
	o.Plan, o.Seed, o.Frontends = p, 1, []serve.Frontend{fe}
	o.Deploy = func(p *formats.Plan) (*dataplane.Deployment, string, error) {
		d, err := dq.FromPlan(p)
		return d, dq.PolicyQLM, err
	}
	o.Policies = dataplane.NewRegistry(dq.Policies()...)
	s, err := serve.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		_ = s.Shutdown(context.Background())
	})
	return s, ts.URL
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
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
	return resp, b
}

func memFrontend() *Frontend {
	fe := New(dq.Kind)
	fe.QueueWorkers = 2
	fe.NewQueue = func() (Queue, error) { return NewMemQueue(), nil }
	return fe
}

func TestCompletions(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	prompt := "Summarize the QLM paper in one sentence, please."
	cases := []struct {
		name, path, body string
		chat             bool
		prompt, out      int
	}{
		{"completion", "/v1/completions", `{"model":"mistral-chat","prompt":"` + prompt + `","max_tokens":5,"priority":1}`, false, Tokens(prompt), 5},
		{"completion with prompt_tokens", "/v1/completions", `{"model":"mistral-batch","prompt":["x"],"max_tokens":3,"prompt_tokens":700}`, false, 700, 3},
		{"chat", "/v1/chat/completions", `{"model":"vicuna-chat","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"` + prompt + `"}],"max_tokens":4}`,
			true, ChatTokens([]Message{{Content: "Be brief."}, {Content: prompt}}), 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, url+tc.path, tc.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var r struct {
				Object  string `json:"object"`
				Model   string `json:"model"`
				Choices []struct {
					Text    string `json:"text"`
					Message struct {
						Role, Content string
					} `json:"message"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage Usage `json:"usage"`
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			want := Usage{PromptTokens: tc.prompt, CompletionTokens: tc.out, TotalTokens: tc.prompt + tc.out}
			if r.Usage != want {
				t.Errorf("usage %+v, want %+v", r.Usage, want)
			}
			if len(r.Choices) != 1 || r.Choices[0].FinishReason != "length" {
				t.Fatalf("choices %+v", r.Choices)
			}
			text, object := r.Choices[0].Text, "text_completion"
			if tc.chat {
				text, object = r.Choices[0].Message.Content, "chat.completion"
				if r.Choices[0].Message.Role != "assistant" {
					t.Errorf("role %q", r.Choices[0].Message.Role)
				}
			}
			if text != Filler(0, tc.out) || r.Object != object {
				t.Errorf("object %q text %q, want %q %q", r.Object, text, object, Filler(0, tc.out))
			}
		})
	}
}

// TestCompletionEmulatedLength: without max_tokens the class profile draws the output length
// (dataplane/qlm newSeq) and the answer counts the iterations the engine ran.
func TestCompletionEmulatedLength(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	resp, b := post(t, url+"/v1/completions", `{"model":"mistral-chat","prompt":"hi","prompt_tokens":20}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r struct {
		Choices []struct{ Text, FinishReason string } `json:"choices"`
		Usage   Usage                                 `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Usage.CompletionTokens < 1 || r.Choices[0].Text != Filler(0, r.Usage.CompletionTokens) {
		t.Errorf("usage %+v, text %q", r.Usage, r.Choices[0].Text)
	}
}

// sse reads a server-sent event stream: the data of each event.
func sse(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		l := sc.Text()
		if l == "" {
			continue
		}
		d, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", l)
		}
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStream(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	for _, chat := range []bool{false, true} {
		path, body := "/v1/completions", `{"model":"mistral-chat","prompt":"one two three","max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}`
		if chat {
			path, body = "/v1/chat/completions", `{"model":"mistral-chat","messages":[{"role":"user","content":"one two three"}],"max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}`
		}
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		events := sse(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("chat %v: status %d, %s", chat, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if len(events) < 4 || events[len(events)-1] != "[DONE]" {
			t.Fatalf("chat %v: events %q", chat, events)
		}
		var text strings.Builder
		var finish string
		var usage *Usage
		for _, e := range events[:len(events)-1] {
			var c struct {
				Choices []struct {
					Text         string
					Delta        struct{ Content string }
					FinishReason *string `json:"finish_reason"`
				}
				Usage *Usage
			}
			if err := json.Unmarshal([]byte(e), &c); err != nil {
				t.Fatalf("%q: %v", e, err)
			}
			if c.Usage != nil {
				usage = c.Usage
				continue
			}
			text.WriteString(c.Choices[0].Text + c.Choices[0].Delta.Content)
			if c.Choices[0].FinishReason != nil {
				finish = *c.Choices[0].FinishReason
			}
		}
		if text.String() != Filler(0, 12) || finish != "length" {
			t.Errorf("chat %v: streamed %q (finish %q), want %q", chat, text.String(), finish, Filler(0, 12))
		}
		if usage == nil || usage.CompletionTokens != 12 || usage.TotalTokens != usage.PromptTokens+12 {
			t.Errorf("chat %v: usage %+v", chat, usage)
		}
	}
}

func TestErrors(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	cases := []struct {
		name, path, body string
		status           int
		param, code      string
	}{
		{"unknown model", "/v1/completions", `{"model":"gpt-9","prompt":"x"}`, 404, "model", "model_not_found"},
		{"no model", "/v1/completions", `{"prompt":"x"}`, 400, "model", ""},
		{"bad max_tokens", "/v1/completions", `{"model":"mistral-chat","prompt":"x","max_tokens":0}`, 400, "max_tokens", ""},
		{"max_tokens a string", "/v1/completions", `{"model":"mistral-chat","prompt":"x","max_tokens":"5"}`, 400, "max_tokens", ""},
		{"chat without messages", "/v1/chat/completions", `{"model":"mistral-chat"}`, 400, "messages", ""},
		{"bad role", "/v1/chat/completions", `{"model":"mistral-chat","messages":[{"role":"robot","content":"x"}]}`, 400, "messages[0]", ""},
		{"n 0", "/v1/completions", `{"model":"mistral-chat","prompt":"x","n":0}`, 400, "n", ""},
		{"n greedy", "/v1/completions", `{"model":"mistral-chat","prompt":"x","n":2,"temperature":0}`, 400, "n", ""},
		{"logprobs", "/v1/completions", `{"model":"mistral-chat","prompt":"x","logprobs":1}`, 400, "logprobs", ""},
		{"not json", "/v1/completions", `{"model":`, 400, "", ""},
		{"stream queued", "/v1/queue", `{"model":"mistral-batch","prompt":"x","stream":true}`, 400, "stream", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, url+tc.path, tc.body)
			var e struct{ Error *Error }
			if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
				t.Fatalf("not an error object: %s", b)
			}
			param, _ := e.Error.Param.(string)
			code, _ := e.Error.Code.(string)
			if resp.StatusCode != tc.status || param != tc.param || code != tc.code || e.Error.Message == "" || e.Error.Type == "" {
				t.Errorf("status %d %+v, want %d param %q code %q", resp.StatusCode, e.Error, tc.status, tc.param, tc.code)
			}
		})
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ms struct{ Data []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&ms); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms.Data {
		ids = append(ids, m.ID)
	}
	if got := strings.Join(ids, ","); got != "mistral-chat,mistral-batch,vicuna-chat" {
		t.Errorf("models %s", got)
	}
}

func TestAnswerError(t *testing.T) {
	cases := []struct {
		a          serve.Answer
		status     int
		retryAfter int64
		code       string
	}{
		{serve.Answer{Status: 503, Reason: "overload", Stage: "intake", RetryUs: 2_500_000, Err: "refused at the door"}, 429, 3, "overload"},
		{serve.Answer{Status: 503, Reason: "overload", Stage: "intake"}, 429, 1, "overload"},
		{serve.Answer{Status: 503, Reason: "deadline", Stage: "instances"}, 503, 1, "deadline"},
		{serve.Answer{Status: 503, Reason: "shutdown", Stage: "intake"}, 503, 1, "shutdown"},
		{serve.Answer{Status: 500, Err: "boom"}, 500, 0, ""},
	}
	for _, tc := range cases {
		e := apiError(newFailure(&tc.a))
		code, _ := e.Code.(string)
		if e.Status != tc.status || e.RetryAfter != tc.retryAfter || code != tc.code {
			t.Errorf("%+v → %+v", tc.a, e)
		}
		if tc.a.Reason != "" && !strings.Contains(e.Message, tc.a.Reason) {
			t.Errorf("message %q does not name the drop reason %q", e.Message, tc.a.Reason)
		}
	}
}

// TestOtherSystem: a plan of another kind makes the API answer 404 saying so.
func TestOtherSystem(t *testing.T) {
	fe := memFrontend()
	fe.Kind = "not-qlm"
	_, url := qlmServer(t, fe)
	resp, b := post(t, url+"/v1/completions", `{"model":"mistral-chat","prompt":"x"}`)
	if resp.StatusCode != 404 || !bytes.Contains(b, []byte("the active plan is a qlm plan")) {
		t.Errorf("status %d: %s", resp.StatusCode, b)
	}
}

func enqueue(t *testing.T, url, body string) Status {
	t.Helper()
	resp, b := post(t, url+"/v1/queue", body)
	if resp.StatusCode != 202 {
		t.Fatalf("enqueue: status %d: %s", resp.StatusCode, b)
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func poll(t *testing.T, url, id string) Status {
	t.Helper()
	resp, err := http.Get(url + "/v1/queue/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// waitDone polls until the request is completed or failed (bounded, so a broken queue fails
// the test instead of hanging it).
func waitDone(t *testing.T, url, id string) Status {
	t.Helper()
	for range 1200 {
		st := poll(t, url, id)
		if st.Status == StatusCompleted || st.Status == StatusFailed {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not done after a minute", id)
	return Status{}
}

func checkResult(t *testing.T, st Status, chat bool, out int) {
	t.Helper()
	if st.Status != StatusCompleted {
		t.Fatalf("%s: %s (%+v)", st.ID, st.Status, st.Error)
	}
	var r struct {
		ID      string
		Object  string
		Choices []struct {
			Text    string
			Message struct{ Content string }
		}
		Usage Usage
	}
	if err := json.Unmarshal(st.Result, &r); err != nil {
		t.Fatal(err)
	}
	text := r.Choices[0].Text + r.Choices[0].Message.Content
	if r.ID != st.ID || r.Usage.CompletionTokens != out || text != Filler(0, out) {
		t.Errorf("result %s", st.Result)
	}
}

func TestQueueMemory(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	a := enqueue(t, url, `{"model":"mistral-batch","prompt":"long job","max_tokens":6}`)
	b := enqueue(t, url, `{"model":"mistral-batch","messages":[{"role":"user","content":"chat job"}],"max_tokens":2}`)
	if a.Status != StatusQueued || a.ID == b.ID {
		t.Fatalf("enqueued %+v %+v", a, b)
	}
	checkResult(t, waitDone(t, url, a.ID), false, 6)
	checkResult(t, waitDone(t, url, b.ID), true, 2)
	resp, _ := post(t, url+"/v1/queue", `{"model":"nope","prompt":"x"}`)
	if resp.StatusCode != 404 {
		t.Errorf("unknown model queued: %d", resp.StatusCode)
	}
	g, err := http.Get(url + "/v1/queue/q-unknown")
	if err != nil {
		t.Fatal(err)
	}
	g.Body.Close()
	if g.StatusCode != 404 {
		t.Errorf("unknown id: %d", g.StatusCode)
	}
}

// TestQueueSurvivesRestart: a request queued on one `plan serve` (which
// serves none: --queue-workers 0) is still there after it stops, and the next server on the
// same --queue-dir, with the embedded JetStream server, completes it.
func TestQueueSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	fe1 := New(dq.Kind)
	fe1.QueueDir, fe1.QueueWorkers = dir, 0
	s1, url1 := qlmServer(t, fe1)
	st := enqueue(t, url1, `{"model":"mistral-batch","prompt":"survive the restart","max_tokens":4}`)
	if got := poll(t, url1, st.ID); got.Status != StatusQueued {
		t.Fatalf("before the restart: %+v", got)
	}
	if err := s1.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	fe2 := New(dq.Kind)
	fe2.QueueDir, fe2.QueueWorkers = dir, 2
	_, url2 := qlmServer(t, fe2)
	done := waitDone(t, url2, st.ID)
	checkResult(t, done, false, 4)
	if done.Attempts != 1 {
		t.Errorf("attempts %d, want 1", done.Attempts)
	}
}

// TestQueueExternal: --queue-url reaches a JetStream server over the network (here one
// started in the test on a free port, as a cluster would be).
func TestQueueExternal(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats server did not start")
	}
	defer func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	}()
	fe := New(dq.Kind)
	fe.QueueURL, fe.QueueWorkers = ns.ClientURL(), 1
	_, url := qlmServer(t, fe)
	st := enqueue(t, url, `{"model":"mistral-chat","prompt":"over the network","max_tokens":3}`)
	checkResult(t, waitDone(t, url, st.ID), false, 3)

	bad := New(dq.Kind)
	bad.QueueURL = "nats://127.0.0.1:1"
	_, burl := qlmServer(t, bad)
	resp, b := post(t, burl+"/v1/queue", `{"model":"mistral-chat","prompt":"x"}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !bytes.Contains(b, []byte("--queue-url nats://127.0.0.1:1")) {
		t.Errorf("unreachable queue: %d %s", resp.StatusCode, b)
	}
}

func qlmServerB(b *testing.B) (*serve.Server, string) { return qlmServer(b, memFrontend()) }

// TestRefused: a request the server has no room for (--max-inflight 1 while a stream holds
// the slot) is a 429 with Retry-After whose message names the reason, and /metrics counts it
// under the code the client saw, 429 (it said 503).
func TestRefused(t *testing.T) {
	_, url := qlmServerOpts(t, memFrontend(), serve.Options{MaxInFlight: 1, DrainTimeout: 200 * time.Millisecond})
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"mistral-chat","prompt":"hold","max_tokens":1000,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first chunk means the stream's request is inside the server.
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || resp.StatusCode != 200 {
		t.Fatalf("holding stream: %d %v", resp.StatusCode, err)
	}
	r2, b := post(t, url+"/v1/chat/completions", `{"model":"mistral-chat","messages":[{"role":"user","content":"x"}],"max_tokens":1}`)
	if r2.StatusCode != 429 || r2.Header.Get("Retry-After") != "1" || !bytes.Contains(b, []byte("overload")) || !bytes.Contains(b, []byte(`"type":"rate_limit_error"`)) {
		t.Errorf("status %d Retry-After %q: %s", r2.StatusCode, r2.Header.Get("Retry-After"), b)
	}
	mr, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(mr.Body)
	mr.Body.Close()
	if !bytes.Contains(m, []byte(`plan_rejected_total{cause="overload",code="429"} 1`)) || bytes.Contains(m, []byte(`code="503"`)) {
		t.Errorf("the 429 is not counted as code 429:\n%s", grepLines(m, "plan_rejected_total"))
	}
}

// grepLines returns the lines of b that contain s.
func grepLines(b []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestStreamWriteTimeout: every write of a stream gets --write-timeout, so a client that does
// not keep up is cut off instead of holding the handler and its connection to the end. With
// a timeout no write can meet, the stream never reaches [DONE].
func TestStreamWriteTimeout(t *testing.T) {
	_, url := qlmServerOpts(t, memFrontend(), serve.Options{WriteTimeout: time.Nanosecond})
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"mistral-chat","prompt":"one two three","max_tokens":12,"stream":true}`))
	if err != nil {
		return // cut off before the status line: what the timeout is for
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if bytes.Contains(b, []byte("[DONE]")) {
		t.Errorf("the stream ran to its end past a write timeout no write can meet: %s", b)
	}
}
