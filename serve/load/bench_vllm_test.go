package load

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// fakeOpenAI is a loopback OpenAI server streaming max_tokens chunks, gap apart, after
// first; it records the headers and prompts it got and its most requests in flight. A
// request whose model is "broken" gets a 500.
type fakeOpenAI struct {
	first, gap time.Duration
	mu         sync.Mutex
	auth, hdr  []string
	prompts    []string
	inflight   atomic.Int64
	peak       atomic.Int64
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-7b"},{"id":"other"}]}`)
		return
	}
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	var req struct {
		Model     string `json:"model"`
		Prompt    string `json:"prompt"`
		MaxTokens int    `json:"max_tokens"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.auth, f.hdr, f.prompts = append(f.auth, r.Header.Get("Authorization")), append(f.hdr, r.Header.Get("X-Tenant")), append(f.prompts, req.Prompt)
	f.mu.Unlock()
	if req.Model == "broken" {
		http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	time.Sleep(f.first)
	for i := range req.MaxTokens {
		if i > 0 {
			time.Sleep(f.gap)
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"t%d \"}]}\n\n", i)
		fl.Flush()
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", req.MaxTokens)
}

// TestVLLMBench runs the vllm-bench options against a loopback fake: headers reach the
// server, a dataset's prompts are sent, --max-concurrency bounds the requests in flight,
// warm-ups are not counted, goodput judges each request, and the result has vllm bench's keys.
func TestVLLMBench(t *testing.T) {
	f := &fakeOpenAI{first: 20 * time.Millisecond, gap: 2 * time.Millisecond}
	ts := httptest.NewServer(f)
	defer ts.Close()
	p, data := fixture(t, "sharegpt.json")
	ds, err := ReadShareGPT(p, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	model, err := FirstModel(context.Background(), ts.URL, nil)
	if err != nil || model != "fake-7b" {
		t.Fatalf("FirstModel = %q, %v", model, err)
	}
	h := http.Header{"Authorization": {"Bearer sk-test"}, "X-Tenant": {"blue"}}
	o := OpenAIOptions{URL: ts.URL, Model: model, Rate: math.Inf(1), Dataset: ds, MaxRequests: 6, Seed: 3,
		MaxConcurrency: 2, NumWarmups: 2, Header: h, Percentiles: []float64{50, 95},
		Goodput: map[string]float64{"ttft": 1000, "e2el": 5000}, KeepText: true, Strict: true}
	rep, samples, err := RunOpenAI(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 6 || rep.Completed != 6 || rep.WarmupRequests != 2 || rep.WarmupFailed != 0 {
		t.Errorf("requests %d completed %d warm-ups %d (failed %d), want 6 6 2 0", rep.Requests, rep.Completed, rep.WarmupRequests, rep.WarmupFailed)
	}
	if pk := f.peak.Load(); pk > 2 {
		t.Errorf("%d requests in flight at once, --max-concurrency 2", pk)
	}
	for i, a := range f.auth {
		if a != "Bearer sk-test" || f.hdr[i] != "blue" {
			t.Fatalf("request %d: Authorization %q, X-Tenant %q", i, a, f.hdr[i])
		}
	}
	for _, pr := range f.prompts {
		if !strings.HasPrefix(pr, "Write a short note") && !strings.HasPrefix(pr, "List three colours") {
			t.Fatalf("prompt %q is not one of the dataset's", pr)
		}
	}
	if rep.RequestGoodput == nil || rep.GoodRequests != 6 || rep.TTFT.Percentiles["p95"] == 0 || rep.MaxConcurrentRequests < 1 || rep.MaxOutputTokensPerS < 1 {
		t.Errorf("report %+v", rep)
	}
	// An objective nobody meets: goodput 0.
	rep2 := openAIReport(OpenAIOptions{Goodput: map[string]float64{"ttft": 1}}, samples)
	if rep2.GoodRequests != 0 || rep2.RequestGoodput == nil || *rep2.RequestGoodput != 0 {
		t.Errorf("ttft:1ms: %d good", rep2.GoodRequests)
	}

	res := VLLMResult(rep, samples, ResultMeta{Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Backend: "openai", Model: model,
		NumPrompts: 6, RequestRate: math.Inf(1), PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el"}, Detailed: true})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	_ = json.Unmarshal(b, &back)
	for _, k := range []string{"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "metadata",
		"request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
		"request_throughput", "request_goodput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
		"max_concurrent_requests", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p95_ttft_ms", "p50_e2el_ms", "mean_tpot_ms",
		"p95_itl_ms", "input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"} {
		if _, ok := back[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
	if back["request_rate"] != "inf" || back["date"] != "20260102-030405" || back["completed"] != 6.0 || back["max_concurrency"] != 2.0 {
		t.Errorf("result %v", back)
	}
	if texts := back["generated_texts"].([]any); len(texts) != 6 || !strings.HasPrefix(texts[0].(string), "t0 t1") {
		t.Errorf("generated_texts %v", texts)
	}
	if got := ResultFileName(ResultMeta{Backend: "openai", Model: "org/fake-7b", RequestRate: 4, Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, 8); got != "openai-4qps-concurrency8-fake-7b-20260102-030405.json" {
		t.Errorf("file name %q", got)
	}
}

// TestOpenAIWarmupAndFailures: --warmup leaves out the requests arriving in it (open loop,
// closed loop); failures count in FailureRate.
func TestOpenAIWarmupAndFailures(t *testing.T) {
	f := &fakeOpenAI{gap: time.Millisecond}
	ts := httptest.NewServer(f)
	defer ts.Close()
	for _, tc := range []struct {
		name      string
		o         OpenAIOptions
		requests  int
		failRate  float64
		excludedN int
	}{
		{"open loop warm-up", OpenAIOptions{Model: "m", Rate: 100, Burstiness: 1, MaxRequests: 20, Warmup: 100 * time.Millisecond}, -1, 0, -1},
		{"closed loop warm-up", OpenAIOptions{Model: "m", Concurrency: 2, MaxRequests: 10, Duration: time.Minute, Warmup: time.Hour}, 0, 0, 10},
		{"every request fails", OpenAIOptions{Model: "broken", Rate: math.Inf(1), MaxRequests: 4}, 4, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.URL, o.InputTokens, o.OutputTokens, o.Strict = ts.URL, 4, 3, true
			rep, samples, err := RunOpenAI(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			var before int
			for _, s := range samples {
				if s.At < o.Warmup {
					before++
				}
			}
			if rep.Excluded != before || rep.Requests != len(samples)-before {
				t.Errorf("excluded %d of %d, want %d; requests %d", rep.Excluded, len(samples), before, rep.Requests)
			}
			if tc.requests >= 0 && rep.Requests != tc.requests {
				t.Errorf("requests %d, want %d", rep.Requests, tc.requests)
			}
			if tc.excludedN >= 0 && rep.Excluded != tc.excludedN {
				t.Errorf("excluded %d, want %d", rep.Excluded, tc.excludedN)
			}
			if o.Rate == 100 && (before == 0 || before == len(samples)) {
				t.Errorf("open loop: %d of %d in the warm-up: the test proves nothing", before, len(samples))
			}
			if rep.FailureRate() != tc.failRate {
				t.Errorf("failure rate %g, want %g", rep.FailureRate(), tc.failRate)
			}
		})
	}
}

// TestSamePercentiles: the same latencies through the KServe report (report → summarizeUs)
// and the OpenAI report (distOf) give the same p50, p90 and p99: one definition
// (internal/base/quantile).
func TestSamePercentiles(t *testing.T) {
	lat := []int64{1200, 5300, 870, 22000, 4100, 990, 13000, 2500, 7700, 640, 31000, 450}
	var ks []Sample
	var os []OpenAISample
	for _, us := range lat {
		d := time.Duration(us) * time.Microsecond
		ks = append(ks, Sample{Status: 200, Latency: d})
		os = append(os, OpenAISample{OK: true, E2E: d, TTFT: d / 2, OutTokens: 1, Chunks: []time.Duration{d / 2}})
	}
	plan := &formats.Plan{}
	kr := report(plan, "p", Options{Duration: time.Second}, []target{{name: "m", slo: dataplane.Second, rate: 1}}, 1, ks)
	kl := kr.Points[0].Total.Latency
	or := openAIReport(OpenAIOptions{}, os)
	for _, c := range []struct {
		name string
		k    int64
		o    float64
	}{{"p50", kl.P50Us, or.E2E.P50}, {"p90", kl.P90Us, or.E2E.P90}, {"p99", kl.P99Us, or.E2E.P99}} {
		if float64(c.k)/1e3 != c.o {
			t.Errorf("%s: load %d µs, load --openai %g ms", c.name, c.k, c.o)
		}
	}
	// numpy.percentile of lat at 99 is 30010 µs (linear between 22000 and 31000).
	if kl.P99Us != 30010 {
		t.Errorf("p99 %d µs, want numpy's 30010", kl.P99Us)
	}
}
