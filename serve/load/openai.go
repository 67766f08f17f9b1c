package load

// `plan load --openai URL`: a streaming benchmark client for any
// OpenAI-compatible server (`plan serve` on a QLM plan, vLLM, SGLang, TensorRT-LLM's server),
// reporting what vLLM's benchmark_serving reports (llm-engine digest §3): TTFT, TPOT, ITL and
// E2E percentiles, request and token throughput, and the failures with their HTTP status.
//
// Requests go out open loop (at their arrival times, Poisson or another arrival process at a
// rate, or a Trace file's own times and token counts) or closed loop (N clients, each sending
// its next request when its last one ends). Everything random takes Options.Seed.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/serve/internal/waketimer"
)

// OpenAIOptions configure an OpenAI benchmark run.
type OpenAIOptions struct {
	// URL is the server's base URL (http://127.0.0.1:8000); requests go to URL/v1/completions
	// or, with Chat, URL/v1/chat/completions.
	URL  string
	Chat bool
	// Model is the model field of requests whose trace entry names none (target, class).
	Model string
	// Open loop: Rate (requests/s) drives Arrival (poisson, bursty, mmpp); a replayed trace
	// (Arrival.Kind "replay" with per-request entries) uses its own times and ignores Rate.
	Rate    float64
	Arrival workload.ArrivalSpec
	// Concurrency > 0 runs closed loop instead: that many clients, each sending its next
	// request as soon as its previous one ended (arrival times unused).
	Concurrency int
	// InputTokens and OutputTokens are the lengths of requests a trace does not give.
	InputTokens, OutputTokens int
	// Duration bounds the arrivals (open loop) or the sending (closed loop); MaxRequests
	// (> 0) stops earlier. A replayed trace is sent whole unless they cut it.
	Duration    time.Duration
	MaxRequests int
	Seed        uint64
	// Timeout bounds one request (0: 10 minutes): a request without its last token by then is
	// given up: the client closes the stream and the server aborts it (digest §4), and it
	// counts as a failure with reason "timeout".
	Timeout time.Duration
	// Strict sends only fields of the OpenAI API: without it requests also carry ignore_eos
	// (vLLM, SGLang: generate exactly max_tokens) and prompt_tokens (plan serve: the prompt's
	// exact length), which servers that accept unknown fields ignore when they do not know them.
	Strict bool
	// Client sends the requests (nil: one with up to MaxConns connections, default 4096).
	Client   *http.Client
	MaxConns int
	// Progress, when set, is called at most every 250 ms and at the end with the requests
	// sent and finished so far.
	Progress func(sent, done int64)

	// Header is sent with every request (--header; --api-key as Authorization: Bearer).
	Header http.Header
	// Dataset, when set, gives the requests' lengths (ShareGPT also their prompts): MaxRequests
	// of its entries (Dataset.Sample, seeded), sent as vllm bench serve sends them (vllmPlan).
	Dataset *Dataset
	// Timestamps replays a timed Dataset at its recorded times, divided by RateScale when > 0,
	// instead of arrivals at Rate.
	Timestamps bool
	RateScale  float64
	// Burstiness > 0 schedules MaxRequests arrivals as vllm bench serve does (gammaArrivals:
	// shape Burstiness, mean 1/Rate, the last at MaxRequests/Rate; an infinite Rate sends all
	// at once) instead of Arrival; a Dataset run without it takes 1 (Poisson).
	Burstiness float64
	// MaxConcurrency > 0 bounds the requests in flight in an open-loop run: an arrival waits
	// for a slot before it is sent (vllm bench's --max-concurrency); its times run from the send.
	MaxConcurrency int
	// Warmup leaves out of the report the requests arriving (closed loop: sent) in the run's
	// first Warmup; NumWarmups requests (copies of the first ones) are sent and answered
	// before the run starts and never counted (vllm bench's --num-warmups).
	Warmup     time.Duration
	NumWarmups int
	// Percentiles are the percentiles (0-100) each distribution reports beside p50, p90 and
	// p99 (--metric-percentiles; nil: none more).
	Percentiles []float64
	// Goodput are service-level objectives in ms by metric ("ttft", "tpot", "e2el"): a
	// request is good when it meets every one (GoodputMetrics).
	Goodput map[string]float64
	// KeepText keeps each answer's generated text in its sample (--save-detailed).
	KeepText bool
}

// OpenAIRequest is one request to send.
type OpenAIRequest struct {
	// At is the arrival time from the start (open loop).
	At           time.Duration
	Model        string
	InputTokens  int
	OutputTokens int
	// Index is the request's position in the run (the prompt's seed).
	Index int
	// Prompt, when set, is sent as it is (a ShareGPT prompt); HashIDs build the prompt of
	// shared blocks (a Mooncake trace: BlockPrompt).
	Prompt  string  `json:"-"`
	HashIDs []int64 `json:"-"`
}

// OpenAISample is one request's client-side record (times from when it was sent).
type OpenAISample struct {
	OpenAIRequest
	// Sent is when the request was written, from the start of the run.
	Sent time.Duration
	// OK: status 200, a stream that ended with [DONE] and no error event, at least one token.
	OK     bool
	Status int // 0: no HTTP answer
	// Reason names a failure: "timeout", "connection", "http", "stream error", "stream cut",
	// "no tokens".
	Reason string
	// Error is the server's error message, or the transport's (first 200 bytes).
	Error string
	// TTFT is send → first chunk with text; E2E send → end of stream; Chunks the times from
	// send of every chunk with text (the ITLs are their gaps).
	TTFT, E2E time.Duration
	Chunks    []time.Duration
	// OutTokens is the answer's output tokens: the usage chunk's completion_tokens, else the
	// chunks with text (a server without include_usage).
	OutTokens int
	// Text is the generated text (OpenAIOptions.KeepText only).
	Text string
}

// ReasonTimeout is the failure reason of a request given up at OpenAIOptions.Timeout.
const ReasonTimeout = "timeout"

// OpenAIPlan turns the options into the requests of the run, in arrival order: a replayed
// trace's entries (their times, targets and token counts), else arrivals of Arrival at Rate
// within Duration with the fixed lengths; both cut at MaxRequests. Closed loop uses the same
// requests and ignores their times. Errors name the field and value (the CLI exits 2).
func OpenAIPlan(o OpenAIOptions) ([]OpenAIRequest, error) {
	if o.Dataset != nil || o.Burstiness > 0 || math.IsInf(o.Rate, 1) {
		return vllmPlan(o)
	}
	var reqs []OpenAIRequest
	window := o.Duration
	if t := o.Arrival.Trace; o.Arrival.Kind == "replay" && t != nil && len(t.Requests) > 0 {
		for i, r := range t.Requests {
			at := time.Duration(r.TimeUs) * time.Microsecond
			if window > 0 && at >= window {
				break
			}
			if o.MaxRequests > 0 && len(reqs) == o.MaxRequests {
				break
			}
			q := OpenAIRequest{At: at, Model: r.Target, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Index: len(reqs)}
			if q.Model == "" {
				q.Model = r.Class
			}
			if q.Model == "" {
				q.Model = o.Model
			}
			if q.InputTokens == 0 {
				q.InputTokens = o.InputTokens
			}
			if q.OutputTokens == 0 {
				q.OutputTokens = o.OutputTokens
			}
			f := fmt.Sprintf("%s: requests[%d]", o.Arrival.Name, i)
			switch {
			case q.Model == "":
				return nil, fmt.Errorf("%s.target: empty, and no --model to send it to", f)
			case q.InputTokens < 1:
				return nil, fmt.Errorf("%s.input_tokens: %d: must be >= 1 (or set --input-tokens)", f, r.InputTokens)
			case q.OutputTokens < 1:
				return nil, fmt.Errorf("%s.output_tokens: %d: must be >= 1 (or set --output-tokens)", f, r.OutputTokens)
			}
			reqs = append(reqs, q)
		}
		return reqs, nil
	}
	if o.Model == "" {
		return nil, errors.New("--model: required: the model field of the requests (GET /v1/models lists the server's)")
	}
	if o.InputTokens < 1 || o.OutputTokens < 1 {
		return nil, fmt.Errorf("--input-tokens %d, --output-tokens %d: must be >= 1", o.InputTokens, o.OutputTokens)
	}
	if o.Concurrency > 0 {
		// Closed loop: no arrival process. MaxRequests requests, or without it none here:
		// the clients make them as they go until Duration (closedLoop).
		for i := range max(o.MaxRequests, 0) {
			reqs = append(reqs, OpenAIRequest{Model: o.Model, InputTokens: o.InputTokens, OutputTokens: o.OutputTokens, Index: i})
		}
		if o.MaxRequests <= 0 && window <= 0 {
			return nil, errors.New("--duration or --max-requests: one must bound the run")
		}
		return reqs, nil
	}
	if !(o.Rate > 0) || math.IsInf(o.Rate, 0) {
		return nil, fmt.Errorf("--rate: %g: an open-loop run needs a rate > 0 (or --concurrency, or a --trace file with requests)", o.Rate)
	}
	if o.MaxRequests <= 0 && window <= 0 {
		return nil, errors.New("--duration or --max-requests: one must bound the run")
	}
	src, err := o.Arrival.New(o.Rate, o.Model, workload.PointSeed(o.Seed, 1, 0))
	if err != nil {
		return nil, err
	}
	for o.MaxRequests <= 0 || len(reqs) < o.MaxRequests {
		t := src.Next()
		at := time.Duration(t) * time.Microsecond
		if t == dataplane.Never || (window > 0 && at >= window) {
			break
		}
		if len(reqs) == maxOpenAIRequests {
			return nil, fmt.Errorf("--rate %g over --duration %s: more than %d requests (bound it with --max-requests)", o.Rate, window, maxOpenAIRequests)
		}
		reqs = append(reqs, OpenAIRequest{At: at, Model: o.Model, InputTokens: o.InputTokens, OutputTokens: o.OutputTokens, Index: len(reqs)})
	}
	return reqs, nil
}

// maxOpenAIRequests bounds an open-loop run's requests (each is a goroutine and a record).
const maxOpenAIRequests = 10_000_000

// RunOpenAI sends the requests of o (OpenAIPlan) and reports. It returns ErrSetup errors for
// bad options, before sending anything.
func RunOpenAI(ctx context.Context, o OpenAIOptions) (*OpenAIReport, []OpenAISample, error) {
	reqs, err := OpenAIPlan(o)
	if err != nil {
		return nil, nil, setupError{err}
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 4096
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: refuseRedirect, Transport: &http.Transport{MaxConnsPerHost: o.MaxConns, MaxIdleConnsPerHost: o.MaxConns,
			IdleConnTimeout: 30 * time.Second, DisableCompression: true}}
		defer o.Client.CloseIdleConnections()
	}
	c := &oaClient{o: o, url: strings.TrimRight(o.URL, "/") + "/v1/completions"}
	if o.Chat {
		c.url = strings.TrimRight(o.URL, "/") + "/v1/chat/completions"
	}
	if o.NumWarmups > 0 {
		c.warmup(ctx, reqs)
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
	}
	start := time.Now()
	var samples []OpenAISample
	if o.Concurrency > 0 {
		samples, err = c.closedLoop(ctx, start, reqs)
	} else {
		samples = make([]OpenAISample, len(reqs))
		err = c.openLoop(ctx, start, reqs, samples)
	}
	if o.Progress != nil {
		o.Progress(c.sent.Load(), c.done.Load())
	}
	if err != nil {
		return nil, nil, err
	}
	rep := openAIReport(o, samples)
	rep.WarmupRequests, rep.WarmupFailed = o.NumWarmups, int(c.warmupFailed.Load())
	return rep, samples, nil
}

// warmup sends NumWarmups requests (the run's first ones again, in turn) before the run, at
// most MaxConcurrency (or Concurrency) at once, else all at once, and counts their failures.
func (c *oaClient) warmup(ctx context.Context, reqs []OpenAIRequest) {
	if len(reqs) == 0 {
		reqs = []OpenAIRequest{{Model: c.o.Model, InputTokens: c.o.InputTokens, OutputTokens: c.o.OutputTokens}}
	}
	limit := c.o.NumWarmups
	if c.o.MaxConcurrency > 0 {
		limit = c.o.MaxConcurrency
	} else if c.o.Concurrency > 0 {
		limit = c.o.Concurrency
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	o := c.o
	o.KeepText = false
	for i := range c.o.NumWarmups {
		r := reqs[i%len(reqs)]
		r.At, r.Index = 0, -1-i // a prompt of its own: not a cache hit for the run's request
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var s OpenAISample
			s.OpenAIRequest = r
			streamOne(ctx, o.Client, c.url, o, &s)
			if !s.OK {
				c.warmupFailed.Add(1)
			}
		}()
	}
	wg.Wait()
}

// oaClient sends requests and counts them.
type oaClient struct {
	o    OpenAIOptions
	url  string
	sent atomic.Int64
	done atomic.Int64
	// warmupFailed counts the warm-up requests that failed.
	warmupFailed atomic.Int64
	progress     sync.Mutex
	last         time.Time
}

func (c *oaClient) tick() {
	if c.o.Progress == nil {
		return
	}
	c.progress.Lock()
	defer c.progress.Unlock()
	if time.Since(c.last) > 250*time.Millisecond {
		c.last = time.Now()
		c.o.Progress(c.sent.Load(), c.done.Load())
	}
}

// one sends r and records it in s.
func (c *oaClient) one(ctx context.Context, start time.Time, r OpenAIRequest, s *OpenAISample) {
	c.sent.Add(1)
	c.tick()
	*s = OpenAISample{OpenAIRequest: r, Sent: time.Since(start)}
	streamOne(ctx, c.o.Client, c.url, c.o, s)
	c.done.Add(1)
}

// openLoop sends every request at its arrival time, whether or not earlier ones ended.
func (c *oaClient) openLoop(ctx context.Context, start time.Time, reqs []OpenAIRequest, samples []OpenAISample) error {
	// A precise timer (as Run): Go's timers would release arrivals in clumps.
	wt := waketimer.New()
	defer wt.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	var sem chan struct{}
	if c.o.MaxConcurrency > 0 {
		sem = make(chan struct{}, c.o.MaxConcurrency)
	}
	for i, r := range reqs {
		due := start.Add(r.At)
		for d := time.Until(due); d > 0; d = time.Until(due) {
			wt.Reset(d)
			select {
			case <-wt.C():
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sem != nil {
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				case <-ctx.Done():
					return
				}
			}
			c.one(ctx, start, r, &samples[i])
		}()
	}
	return nil
}

// closedLoop runs Concurrency clients over the requests in order until they run out or
// Duration passes (requests in flight then finish); with none planned (no MaxRequests, no
// trace) the clients make fixed-length ones until Duration. It returns the samples in
// request order.
func (c *oaClient) closedLoop(ctx context.Context, start time.Time, reqs []OpenAIRequest) ([]OpenAISample, error) {
	endless := len(reqs) == 0
	var next atomic.Int64
	var mu sync.Mutex
	var samples []OpenAISample
	var wg sync.WaitGroup
	for range c.o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && (c.o.Duration <= 0 || time.Since(start) < c.o.Duration) {
				i := int(next.Add(1)) - 1
				var r OpenAIRequest
				switch {
				case endless:
					r = OpenAIRequest{Model: c.o.Model, InputTokens: c.o.InputTokens, OutputTokens: c.o.OutputTokens, Index: i}
				case i < len(reqs):
					r = reqs[i]
				default:
					return
				}
				r.At = time.Since(start)
				var s OpenAISample
				c.one(ctx, start, r, &s)
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sort.Slice(samples, func(a, b int) bool { return samples[a].Index < samples[b].Index })
	return samples, nil
}

// promptWords are the words prompts are built from: common English words that are one token
// each in the Llama, Mistral and GPT BPE vocabularies (with their leading space) and in
// serve/openai.Tokens (a word of at most 4 letters).
var promptWords = []string{" the", " of", " and", " to", " in", " is", " it", " for", " on", " with",
	" as", " at", " by", " this", " that", " from", " or", " be", " are", " was", " not", " but",
	" all", " can", " we", " you", " they", " one", " two", " time", " work", " data", " more",
	" new", " some", " what", " when", " your", " will", " each", " like", " many", " then",
	" them", " into", " has", " less", " only", " over", " also", " such", " used", " few",
	" most", " very", " well", " just", " make", " made", " part", " long", " good", " high", " way"}

// Prompt is the prompt of n tokens of request index: n words drawn from promptWords by a
// generator seeded with (seed, index), so every request's prompt differs (an engine's prefix
// cache finds no shared prefix beyond chance) and a run is reproducible. A real tokenizer may
// count a few tokens more or less (a chat template adds its own framing); plan serve counts
// exactly n, and the prompt_tokens field (unless Strict) states n to servers that read it.
func Prompt(seed uint64, index, n int) string {
	rng := rand.New(rand.NewPCG(seed, uint64(index)+0x9e3779b97f4a7c15))
	var b strings.Builder
	b.Grow(6 * n)
	for range n {
		b.WriteString(promptWords[rng.IntN(len(promptWords))])
	}
	return strings.TrimPrefix(b.String(), " ")
}
