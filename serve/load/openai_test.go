package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/openai"
)

func TestParseSSE(t *testing.T) {
	cases := []struct {
		file   string
		chat   bool
		chunks int
		out    int
		done   bool
		errSub string
	}{
		{"completion.sse", false, 2, 3, true, ""},
		{"chat-crlf-multiline.sse", true, 2, 0, true, ""},
		{"error-event.sse", false, 1, 0, false, "dropped (evicted at engine)"},
		{"cut.sse", false, 2, 0, false, ""},
		{"not-json.sse", false, 1, 0, true, "not JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "openai", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var clock time.Duration
			res, err := ParseSSE(f, func() time.Duration { clock += time.Millisecond; return clock }, tc.chat)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Chunks) != tc.chunks || res.OutTokens != tc.out {
				t.Errorf("chunks %d, usage %d; want %d, %d", len(res.Chunks), res.OutTokens, tc.chunks, tc.out)
			}
			// An error event ends what the client reads as a success: [DONE] after it must
			// not make it one (streamOne checks Error first).
			if tc.errSub == "" && res.Done != tc.done {
				t.Errorf("done %v, want %v", res.Done, tc.done)
			}
			if (res.Error == "") != (tc.errSub == "") || !strings.Contains(res.Error, tc.errSub) {
				t.Errorf("error %q, want one containing %q", res.Error, tc.errSub)
			}
		})
	}
}

func TestPrompt(t *testing.T) {
	for _, n := range []int{1, 7, 300} {
		p := Prompt(3, 5, n)
		if got := openai.Tokens(p); got != n {
			t.Errorf("Prompt(n=%d): plan serve counts %d tokens", n, got)
		}
		if p != Prompt(3, 5, n) {
			t.Error("Prompt is not deterministic")
		}
	}
	if Prompt(3, 5, 50) == Prompt(3, 6, 50) {
		t.Error("two requests share a prompt: a prefix cache would serve the second")
	}
}

func TestDist(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	// numpy.percentile([1,2,3,4,10], [50, 90, 95, 99]) = 3, 7.6, 8.8, 9.76; np.std = 3.16228.
	got := distOf(ms(10, 2, 4, 1, 3), 95)
	want := Dist{N: 5, Mean: 4, Median: 3, Std: 3.162, P50: 3, P90: 7.6, P99: 9.76, Max: 10, Percentiles: map[string]float64{"p95": 8.8}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("distOf = %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(distOf(nil), Dist{}) {
		t.Error("empty distribution not zero")
	}
}

// openAIServer serves the bundled QLM plan (testdata/openai/qlm-plan.json, plan solve of
// testdata/qlm) with emulated instances and QLM's OpenAI front end.
func openAIServer(t testing.TB) string {
	t.Helper()
	return openAIServerFor(t, filepath.Join("..", "..", "testdata", "openai", "qlm-plan.json"))
}

// openAIServerFor serves the QLM plan at path as openAIServer does, and returns its URL.
func openAIServerFor(t testing.TB, path string) string {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](path, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	fe := openai.New(dq.Kind)
	fe.NewQueue = func() (openai.Queue, error) { return openai.NewMemQueue(), nil }
	s, err := serve.New(serve.Options{Plan: p, Seed: 1, Frontends: []serve.Frontend{fe},
		Deploy: func(p *formats.Plan) (*dataplane.Deployment, string, error) {
			d, err := dq.FromPlan(p)
			return d, dq.PolicyQLM, err
		},
		Policies: dataplane.NewRegistry(dq.Policies()...)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		_ = s.Shutdown(context.Background())
	})
	return ts.URL
}

// minDecodeUs is the engine model's shortest step of mistral-7b in the bundled plan (a decode
// of one sequence, or a prefill of one token): no token of an emulated instance comes faster.
const minDecodeUs = 11000

// TestOpenAIServe runs the client against `plan serve` in-process, open loop (Poisson, the
// completions endpoint), closed loop (the chat endpoint) and replaying a trace with its own
// lengths and models: every request gets exactly its max_tokens, streamed, and the times are
// those of an engine that takes at least one decode step per token.
func TestOpenAIServe(t *testing.T) {
	if testing.Short() {
		t.Skip("wall-clock run of a few seconds")
	}
	trace, err := workload.LoadTrace(filepath.Join("testdata", "openai", "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	poisson, _ := workload.ParseArrival("poisson")
	cases := []struct {
		name string
		o    OpenAIOptions
		n    int
	}{
		{"poisson", OpenAIOptions{Model: "mistral-chat", Rate: 8, Arrival: poisson, MaxRequests: 10, InputTokens: 64, OutputTokens: 16}, 10},
		{"closed-loop chat", OpenAIOptions{Model: "mistral-batch", Chat: true, Concurrency: 3, MaxRequests: 7, InputTokens: 100, OutputTokens: 8}, 7},
		{"trace", OpenAIOptions{Arrival: trace}, 6},
		// Closed loop bounded by time alone: the clients make requests until it passes.
		{"closed-loop for a while", OpenAIOptions{Model: "mistral-chat", Concurrency: 2, InputTokens: 10, OutputTokens: 3, Duration: 300 * time.Millisecond}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			// A server of its own: each case starts from an idle engine.
			o.URL, o.Seed = openAIServer(t), 7
			if o.Duration == 0 {
				o.Duration = time.Minute
			}
			rep, samples, err := RunOpenAI(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.n == 0 {
				tc.n = max(rep.Requests, 2) // as many as the clients sent, at least one each
			}
			if rep.Requests != tc.n || rep.Completed != tc.n || len(samples) != tc.n || rep.ShortOutputs != 0 {
				t.Fatalf("requests %d, completed %d, short %d, failures %+v; want %d completed", rep.Requests, rep.Completed, rep.ShortOutputs, rep.Failures, tc.n)
			}
			var out int64
			for _, s := range samples {
				if s.OutTokens != s.OutputTokens {
					t.Errorf("request %d: %d tokens, asked %d", s.Index, s.OutTokens, s.OutputTokens)
				}
				out += int64(s.OutputTokens)
				t.Logf("request %d %s %d/%d at %s: TTFT %s E2E %s", s.Index, s.Model, s.InputTokens, s.OutputTokens, s.At, s.TTFT, s.E2E)
				// The emulated engine stamps a token when its step ends and a step takes at
				// least minDecodeUs (prefill and decode alike): a request's last token comes no
				// sooner than one step per token after it was sent (a client that reads late
				// only adds to that).
				floor := time.Duration(s.OutputTokens) * minDecodeUs * time.Microsecond
				if s.TTFT <= 0 || s.E2E < floor || s.E2E < s.TTFT || len(s.Chunks) < 1 || len(s.Chunks) > s.OutputTokens {
					t.Errorf("request %d: TTFT %s, E2E %s, %d chunks for %d tokens: not an engine's stream", s.Index, s.TTFT, s.E2E, len(s.Chunks), s.OutputTokens)
				}
			}
			if rep.OutputTokens != out || rep.TTFT.N != tc.n || rep.E2E.N != tc.n || rep.ITL.N == 0 {
				t.Errorf("report: %d output tokens (want %d), TTFT n %d, E2E n %d, ITL n %d", rep.OutputTokens, out, rep.TTFT.N, rep.E2E.N, rep.ITL.N)
			}
			if rep.TPOT.N == 0 || rep.E2E.P50 < rep.TTFT.P50 || rep.RequestThroughput <= 0 || rep.OutputThroughput <= 0 {
				t.Errorf("report not sane: %+v", rep)
			}
		})
	}
}

// TestOpenAIFailures: failures are counted by reason with their HTTP status, and a request
// given up at its timeout counts as a timeout (its stream closed: the server aborts it).
func TestOpenAIFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("wall-clock run")
	}
	url := openAIServer(t)
	poisson, _ := workload.ParseArrival("poisson")
	cases := []struct {
		name   string
		o      OpenAIOptions
		reason string
		status int
	}{
		{"unknown model", OpenAIOptions{Model: "no-such-model", OutputTokens: 4}, "http", 404},
		{"too long", OpenAIOptions{Model: "mistral-chat", OutputTokens: openai.MaxTokensLimit + 1}, "http", 400},
		{"timeout", OpenAIOptions{Model: "mistral-chat", OutputTokens: 500, Timeout: 300 * time.Millisecond}, ReasonTimeout, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.URL, o.Seed, o.Arrival, o.Rate, o.MaxRequests, o.InputTokens = url, 1, poisson, 50, 3, 10
			rep, _, err := RunOpenAI(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range rep.Failures {
				// A request given up before its status line came has none (0).
				if f.Reason == tc.reason && (f.Status == tc.status || tc.reason == ReasonTimeout && f.Status == 0) {
					n += f.Count
				}
			}
			if rep.Failed != 3 || n != 3 {
				t.Fatalf("failures %+v (failed %d); want 3 × %s status %d", rep.Failures, rep.Failed, tc.reason, tc.status)
			}
			if tc.status != 200 && rep.Failures[0].Example == "" {
				t.Error("no error message recorded")
			}
			if tc.reason != ReasonTimeout {
				return
			}
			// The client closed the streams: the server withdrew the requests from the
			// engine (dropped as cancelled) instead of generating their 500 tokens — every
			// one whose stream had begun, at least (one given up before its status line may
			// not have reached the server at all).
			started := 0
			for _, f := range rep.Failures {
				if f.Status == 200 {
					started += f.Count
				}
			}
			var drops float64
			for range 100 { // 5 s at most, a fraction of the generation
				resp, err := http.Get(url + "/metrics")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if drops = metricSum(string(b), "plan_drops_total", `reason="cancelled"`); drops >= float64(started) && drops <= 3 && started > 0 {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Errorf("%v requests dropped as cancelled after the client gave up, want %d to 3 (%d streams had begun)", drops, started, started)
		})
	}
}

func TestOpenAIPlanErrors(t *testing.T) {
	poisson, _ := workload.ParseArrival("poisson")
	tr := &formats.Trace{Requests: []formats.TraceRequest{{TimeUs: 0, Target: "m", InputTokens: 5, OutputTokens: 0}}}
	replay, err := workload.TraceSpec("t.json", tr)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    OpenAIOptions
		want string
	}{
		{"no model", OpenAIOptions{Rate: 1, Arrival: poisson, MaxRequests: 1, InputTokens: 1, OutputTokens: 1}, "--model"},
		{"no rate", OpenAIOptions{Model: "m", Arrival: poisson, MaxRequests: 1, InputTokens: 1, OutputTokens: 1}, "--rate: 0"},
		{"zero tokens", OpenAIOptions{Model: "m", Rate: 1, Arrival: poisson, MaxRequests: 1, OutputTokens: 1}, "--input-tokens 0"},
		{"trace without output tokens", OpenAIOptions{Arrival: replay}, "t.json: requests[0].output_tokens: 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenAIPlan(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// BenchmarkParseSSE parses a 1,000-token completion stream (one chunk per token, the usage
// chunk and [DONE]): the client's cost per streamed token.
func BenchmarkParseSSE(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"%s\",\"logprobs\":null,\"finish_reason\":null}]}\n\n", openai.Filler(i, i+1))
	}
	sb.WriteString("data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1000,\"total_tokens\":1005}}\n\ndata: [DONE]\n\n")
	stream := sb.String()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		res, err := ParseSSE(strings.NewReader(stream), func() time.Duration { return 0 }, false)
		if err != nil || len(res.Chunks) != 1000 || res.OutTokens != 1000 || !res.Done {
			b.Fatalf("%d chunks, %d tokens, done %v: %v", len(res.Chunks), res.OutTokens, res.Done, err)
		}
	}
}
