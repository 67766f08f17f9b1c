package openai

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve"
)

// manyMessages is a chat of n one-word messages (100,000 of them: ~3 MB, under
// the 4 MiB body limit, ~500,000 prompt tokens).
func manyMessages(n int) string {
	var b strings.Builder
	b.WriteString(`{"model":"mistral-chat","max_tokens":1,"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":"w"}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// TestIntakeLimits: a request that can never be served is a 400 at intake
// naming the field, its value and the limit, on the completion, chat and queue routes; a
// normal request right after is served. The plan's classes allow 2,048 prompt and 1,024
// output tokens; one case's plan shrinks the KV caches to 1,000 tokens, two set
// max_model_len 1,500.
func TestIntakeLimits(t *testing.T) {
	small := func(p *formats.Plan) {
		for _, pr := range p.Provenance.Embedded.Profiles {
			for k := range pr.LLMs {
				pr.LLMs[k].KVCapacityTokens = 1000
			}
		}
	}
	modelLen := func(p *formats.Plan) {
		for _, pr := range p.Provenance.Embedded.Profiles {
			for k := range pr.LLMs {
				pr.LLMs[k].Engine = &formats.LLMEngine{MaxModelLen: 1500}
			}
		}
	}
	cases := []struct {
		name, path, body string
		edit             func(*formats.Plan)
		want             []string
	}{
		{"prompt_tokens past the class maximum", "/v1/completions", `{"model":"mistral-chat","prompt":"hi","max_tokens":1,"prompt_tokens":500000}`, nil,
			[]string{`"param":"prompt_tokens"`, "500000", "2048"}},
		{"max_tokens past the class maximum", "/v1/completions", `{"model":"mistral-chat","prompt":"hi","max_tokens":5000}`, nil,
			[]string{`"param":"max_tokens"`, "5000", "1024"}},
		{"100,000 one-word messages", "/v1/chat/completions", manyMessages(100_000), nil,
			[]string{`"param":"messages"`, "500003", "2048"}},
		{"queued past the class maximum", "/v1/queue", `{"model":"mistral-batch","prompt":"hi","max_tokens":1,"prompt_tokens":4000}`, nil,
			[]string{`"param":"prompt_tokens"`, "4000", "2048"}},
		{"beyond the KV cache", "/v1/completions", `{"model":"mistral-chat","prompt":"hi","max_tokens":600,"prompt_tokens":500}`, small,
			[]string{`"param":"prompt_tokens"`, "500 prompt tokens + 600 output tokens", "992 tokens of KV cache"}},
		// Prompt + max_tokens over the engine's max_model_len: refused, as vLLM refuses it.
		{"max_tokens past max_model_len", "/v1/completions", `{"model":"mistral-chat","prompt":"hi","max_tokens":1000,"prompt_tokens":1000}`, modelLen,
			[]string{`"param":"max_tokens"`, "1000 prompt tokens + 1000 max_tokens", "max_model_len of 1500"}},
		{"prompt past max_model_len", "/v1/completions", `{"model":"mistral-chat","prompt":"hi","max_tokens":1,"prompt_tokens":1600}`, modelLen,
			[]string{`"param":"prompt_tokens"`, "1600 prompt tokens + 1 max_tokens", "max_model_len of 1500"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, url := qlmServerPlan(t, memFrontend(), serve.Options{}, tc.edit)
			resp, b := post(t, url+tc.path, tc.body)
			if resp.StatusCode != 400 {
				t.Fatalf("status %d: %.300s", resp.StatusCode, b)
			}
			for _, w := range tc.want {
				if !bytes.Contains(b, []byte(w)) {
					t.Errorf("the error does not say %q: %s", w, b)
				}
			}
			resp, b = post(t, url+"/v1/completions", `{"model":"mistral-chat","prompt":"hi","max_tokens":2}`)
			if resp.StatusCode != 200 {
				t.Errorf("the next request: status %d: %s", resp.StatusCode, b)
			}
		})
	}
}

// TestQueueHostileIDs: on the JetStream queue, an over-long id is a 414 and
// a malformed one a 404, neither reaches NATS, and the queue keeps working: a request
// enqueued afterwards completes and polls of it answer.
func TestQueueHostileIDs(t *testing.T) {
	fe := New(dq.Kind)
	fe.QueueDir, fe.QueueWorkers = t.TempDir(), 1
	_, url := qlmServer(t, fe)
	cases := []struct {
		id   string
		want int
	}{
		{strings.Repeat("a", 5000), 414},
		{strings.Repeat("a", 65), 414},
		{"aaaa", 404},
		{"q-..-1", 404},
		{"q-abc-1", 404}, // well-formed, unknown
		{"q-ABC-1", 404},
		{"q-abc-", 404},
	}
	for _, tc := range cases {
		resp, err := http.Get(url + "/v1/queue/" + tc.id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET /v1/queue/%.20s… (%d bytes): %d %s, want %d", tc.id, len(tc.id), resp.StatusCode, b, tc.want)
		}
	}
	st := enqueue(t, url, `{"model":"mistral-batch","prompt":"after the attack","max_tokens":3}`)
	checkResult(t, waitDone(t, url, st.ID), false, 3)
	if err := fe.Ready(context.Background()); err != nil {
		t.Errorf("ready: %v", err)
	}
}

// TestQueueRedials: when NATS closes the queue's connection (as it does on
// a protocol error), the next calls dial a new one instead of failing until a restart.
func TestQueueRedials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := OpenJetStream(ctx, JetStreamOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	st := Status{ID: "q-test-1", Object: "queue.request", Status: StatusQueued, Model: "m"}
	if err := q.Enqueue(ctx, Job{ID: st.ID, Body: []byte(`{}`)}, st); err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	q.h.nc.Close()
	q.mu.Unlock()
	if err := q.Healthy(ctx); err != nil {
		t.Errorf("healthy after the connection closed: %v", err)
	}
	got, err := q.Get(ctx, st.ID)
	if err != nil || got.Status != StatusQueued {
		t.Fatalf("get after the connection closed: %+v %v", got, err)
	}
	st2 := Status{ID: "q-test-2", Object: "queue.request", Status: StatusQueued, Model: "m"}
	if err := q.Enqueue(ctx, Job{ID: st2.ID, Body: []byte(`{}`)}, st2); err != nil {
		t.Errorf("enqueue after the connection closed: %v", err)
	}
	if _, err := q.Get(ctx, strings.Repeat("a", 5000)); !errors.Is(err, ErrNotFound) {
		t.Errorf("over-long id: %v, want not found", err)
	}
	if err := q.Healthy(ctx); err != nil {
		t.Errorf("healthy after an over-long id: %v", err)
	}
	// A queue whose server is gone is not healthy (Frontend.Ready says so).
	q.ns.Shutdown()
	q.ns.WaitForShutdown()
	q.mu.Lock()
	q.h.nc.Close()
	q.mu.Unlock()
	if err := q.Healthy(ctx); err == nil {
		t.Error("healthy with its server shut down")
	}
	fe := &Frontend{}
	fe.batch.q = q
	if err := fe.Ready(ctx); err == nil {
		t.Error("the front end is ready with its queue's server shut down")
	}
}

// TestQueueLeaseAfterKill: a server that leased a request and died without recording an end
// (kill -9: its queue closed, nothing put back) loses it to the next server within one
// lease, which records it failed with the code "interrupted" and never runs it again: the
// queue's at-most-once contract (queue.go).
func TestQueueLeaseAfterKill(t *testing.T) {
	// The default lease ends well within the batch class's 10-minute SLO.
	if DefaultLease > time.Minute || New(dq.Kind).QueueLease != DefaultLease {
		t.Errorf("default lease %v, the front end's %v: want at most a minute", DefaultLease, New(dq.Kind).QueueLease)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	const lease = time.Second
	q1, err := OpenJetStream(ctx, JetStreamOptions{Dir: dir, AckWait: lease})
	if err != nil {
		t.Fatal(err)
	}
	st := Status{ID: "q-kill-1", Object: "queue.request", Status: StatusQueued, Model: "m"}
	if err := q1.Enqueue(ctx, Job{ID: st.ID, Body: []byte(`{}`)}, st); err != nil {
		t.Fatal(err)
	}
	l1, err := q1.Lease(ctx)
	if err != nil || l1.ID != st.ID {
		t.Fatalf("first lease: %+v %v", l1, err)
	}
	_ = q1.Close() // killed: no ack, no nack
	q2, err := OpenJetStream(ctx, JetStreamOptions{Dir: dir, AckWait: lease})
	if err != nil {
		t.Fatal(err)
	}
	defer q2.Close()
	// The redelivery comes after one lease; Lease fails it instead of handing it out.
	lctx, lcancel := context.WithTimeout(ctx, 5*lease)
	defer lcancel()
	if l2, err := q2.Lease(lctx); err == nil {
		t.Fatalf("handed out again after a kill mid-run: %+v", l2)
	}
	got, err := q2.Get(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusFailed || got.Error == nil || got.Error.Code != Interrupted || got.Attempts != 2 {
		t.Fatalf("status after the kill %+v (error %+v): want failed, code %q, attempt 2", got, got.Error, Interrupted)
	}
}

// TestQueueLeaseExtended: a queued request that runs longer than the lease
// keeps it (its worker extends it): it completes in one attempt, with no duplicate run on
// the server's other worker.
func TestQueueLeaseExtended(t *testing.T) {
	fe := New(dq.Kind)
	fe.QueueDir, fe.QueueWorkers, fe.QueueLease = t.TempDir(), 2, time.Second
	_, url := qlmServer(t, fe)
	// ~300 decode iterations of ~11 ms: about three leases.
	st := enqueue(t, url, `{"model":"mistral-batch","prompt":"longer than a lease","max_tokens":300}`)
	done := waitDone(t, url, st.ID)
	checkResult(t, done, false, 300)
	if done.Attempts != 1 {
		t.Errorf("attempts %d, want 1: the lease ran out while the request ran", done.Attempts)
	}
	// The engine saw it once (a lease that ran out hands it to the other worker, which
	// submits it again while the first still runs it).
	if n := metricValue(t, url, `plan_requests_total{model="mistral-batch"}`); n != 1 {
		t.Errorf("the engine accepted the queued request %v times, want 1", n)
	}
}

// metricValue reads one sample of the server's /metrics (0 when absent).
func metricValue(t *testing.T, url, sample string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("%s: %v", sample, err)
			}
			return v
		}
	}
	return 0
}

// TestDrainClosesConnections: while the server drains, the OpenAI
// endpoints' 503s carry Connection: close.
func TestDrainClosesConnections(t *testing.T) {
	s, url := qlmServerOpts(t, memFrontend(), serve.Options{DrainTimeout: 3 * time.Second})
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"mistral-chat","prompt":"hold","max_tokens":1000,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || resp.StatusCode != 200 {
		t.Fatalf("holding stream: %d %v", resp.StatusCode, err)
	}
	go func() { _ = s.Shutdown(context.Background()) }()
	for s.Ready() {
		time.Sleep(5 * time.Millisecond)
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"model":"mistral-chat","prompt":"x","max_tokens":1}`},
		{"/v1/chat/completions", `{"model":"mistral-chat","messages":[{"role":"user","content":"x"}],"max_tokens":1}`},
		{"/v1/completions", `{"model":"mistral-chat","prompt":"x","max_tokens":1,"stream":true}`},
	} {
		r, b := post(t, url+tc.path, tc.body)
		if r.StatusCode != 503 || !r.Close {
			t.Errorf("%s while draining: %d, Connection: close %v: %s", tc.path, r.StatusCode, r.Close, b)
		}
	}
}

// TestReadinessReflectsDeadQueue: GET /v2/health/ready answers 503, naming
// the batch queue, while the queue's NATS server is gone, instead of 200.
func TestReadinessReflectsDeadQueue(t *testing.T) {
	fe := New(dq.Kind)
	fe.QueueDir, fe.QueueWorkers = t.TempDir(), 1
	_, url := qlmServer(t, fe)
	ready := func() (int, string) {
		t.Helper()
		resp, err := http.Get(url + "/v2/health/ready")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	st := enqueue(t, url, `{"model":"mistral-batch","prompt":"before","max_tokens":2}`)
	checkResult(t, waitDone(t, url, st.ID), false, 2)
	if code, b := ready(); code != 200 {
		t.Fatalf("ready with a live queue: %d %s", code, b)
	}
	open, _ := fe.batch.current()
	q, _ := open.(*JetStreamQueue)
	if q == nil {
		t.Fatal("the front end's queue is not a JetStream queue")
	}
	q.ns.Shutdown()
	q.ns.WaitForShutdown()
	q.mu.Lock()
	q.h.nc.Close()
	q.mu.Unlock()
	code, b := ready()
	if code != 503 || !strings.Contains(b, "batch queue") {
		t.Errorf("ready with the queue's server gone: %d %s, want 503 naming the batch queue", code, b)
	}
}

// TestEarly413: a body declared over the front end's 4 MiB limit is refused
// with 413 on every OpenAI route that takes one, before its handler reads it (400 before).
func TestEarly413(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	body := `{"model":"mistral-chat","prompt":"` + strings.Repeat("a", 5<<20) + `"}`
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/v1/queue"} {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Errorf("POST %s with a 5 MiB body: %d, want 413", path, resp.StatusCode)
		}
		// An OpenAI error object, as every answer of this API.
		if !bytes.Contains(b, []byte(`"error":{"message":"request body larger than`)) || !bytes.Contains(b, []byte(`"type":"invalid_request_error"`)) {
			t.Errorf("POST %s with a 5 MiB body: %s; want an OpenAI error object", path, b)
		}
	}
}
