package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plan-dev/plan/dataplane"
)

// The LLM series are vLLM V1's own families (ecosystem drop-in §1): the same names, types,
// label names (model_name, engine; finished_reason on request_success) and bucket edges, so
// vLLM's Grafana dashboard, KEDA triggers, AIBrix and the Gateway API inference extension's
// endpoint picker read a `plan serve` LLM instance unchanged. model_name is the served name
// (the application, the OpenAI API's model field). engine is vLLM's data-parallel engine
// index: the instance for the engine gauges; "0" for request series (a request's answer
// does not say which instance served it).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	// itlBuckets: vLLM's inter-token set, also its per-request TPOT's.
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	// phaseBuckets: e2e and the request phases (queue, inference, prefill, decode).
	phaseBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	// tokenBuckets: vLLM's 1-2-5 series up to max_model_len; plan's engines take prompts up
	// to the profile's KV cache, so the series runs to 1M tokens (openai.MaxTokensLimit).
	tokenBuckets = build125(1 << 20)
	// iterBuckets: tokens per engine step.
	iterBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	nBuckets    = []float64{1, 2, 5, 10, 20}
)

// build125 is 1, 2, 5, 10, 20, 50, ... up to max.
func build125(max float64) []float64 {
	var b []float64
	for m := 1.0; ; m *= 10 {
		for _, k := range []float64{1, 2, 5} {
			if k*m > max {
				return b
			}
			b = append(b, k*m)
		}
	}
}

// finishedReasons are vLLM's request_success label values, pre-created at 0 (vLLM does, so
// `increase(...)` has a series before the first request of each kind).
var finishedReasons = []string{"stop", "length", "abort", "error", "repetition"}

// streamsTokens reports whether pol serves LLM requests token by token (an LLM engine's
// policy: it reports the tokens each client has seen, TokenReporter): its answered requests
// feed the LLM series even before it stamps a first token. Asking the policy, not naming a
// deployment kind, keeps serve free of any system's name.
func streamsTokens(pol dataplane.Policy) bool {
	_, ok := pol.(TokenReporter)
	return ok
}

// LLMMetricNames lists the vLLM families /metrics exposes once an LLM plan answered a
// request (labelled families show with their first series).
var LLMMetricNames = []string{
	"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
	"vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
	"vllm:request_success_total", "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
	"vllm:request_time_per_output_token_seconds", "vllm:e2e_request_latency_seconds",
	"vllm:request_queue_time_seconds", "vllm:request_inference_time_seconds",
	"vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
	"vllm:request_prompt_tokens", "vllm:request_generation_tokens", "vllm:request_params_max_tokens",
	"vllm:request_max_num_generation_tokens", "vllm:request_params_n", "vllm:iteration_tokens_total",
	"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
	"vllm:cache_config_info",
}

// LegacyLLMMetricNames are the families Options.MetricsLegacy adds: names vLLM removed that
// older consumers (AIBrix, dashboards from before 0.11) still read.
var LegacyLLMMetricNames = []string{"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds"}

// Preempter is implemented by LLM policies that count their preemptions (a running
// sequence evicted, its KV recomputed or swapped): vllm:num_preemptions_total follows it.
type Preempter interface {
	Preemptions() int64
}

// PrefixCacher is implemented by LLM policies whose engines may cache prompt prefixes:
// the prompt tokens looked up and those found cached, which /metrics exports as vLLM V1's
// counters vllm:prefix_cache_queries_total and vllm:prefix_cache_hits_total (tokens,
// llm-engine-2 §2; ecosystem-dropin §1), so a dashboard's hit rate
// rate(hits)/rate(queries) reads plan as it reads vLLM. Both stay 0 without caching.
type PrefixCacher interface {
	PrefixCache() (queries, hits int64)
}

// EngineGauger is implemented by LLM policies that report their engines' state (vLLM's
// scheduler gauges): emit once per (application, engine) with the requests in the engine's
// running batch, those waiting for it, and the fraction (0-1) of its KV cache in use. It is
// called on the driver goroutine when /metrics is scraped.
type EngineGauger interface {
	EngineGauges(emit func(app dataplane.AppID, engine, running, waiting int, kv float64))
}

// CacheConfigReporter is implemented by LLM policies that tell each engine's KV block size
// (tokens) and KV cache size in blocks: vllm:cache_config_info's block_size and
// num_gpu_blocks labels (the endpoint picker's --cache-info-metric).
type CacheConfigReporter interface {
	CacheConfig(emit func(engine, blockSize, blocks int))
}

// IterationReporter is implemented by LLM policies that tell how many tokens (prompt and
// output) the step a worker just finished computed: vllm:iteration_tokens_total.
type IterationReporter interface {
	IterationTokens(w dataplane.WorkerID) (n int, ok bool)
}

// llmMetrics are the LLM series, registered with the server's other families.
type llmMetrics struct {
	running, waiting, kv, gpuCache, cacheInfo      *prometheus.GaugeVec
	preemptions, prompt, generation, success       *prometheus.CounterVec
	prefixQueries, prefixHits                      *prometheus.CounterVec
	ttft, itl, tpotReq, tpotLegacy, e2e            *prometheus.HistogramVec
	queue, inference, prefill, decode              *prometheus.HistogramVec
	promptHist, genHist, maxTokens, maxGen, paramN *prometheus.HistogramVec
	iter                                           *prometheus.HistogramVec
	// legacy: also the removed names (gpuCache, tpotLegacy are nil otherwise).
	legacy bool
	// seen is the policy's preemption count already added (driver loop only); pol the
	// policy it was read from (a new plan's policy counts from 0).
	seen int64
	pol  Preempter
	// seenQ and seenH are the policy's prefix-cache counts already added, apc the policy
	// they were read from (as seen and pol for preemptions).
	seenQ, seenH int64
	apc          PrefixCacher
}

// engineLabel is the engine label of request series.
const engineLabel = "0"

func newLLMMetrics(legacy bool) *llmMetrics {
	lbl := []string{"model_name", "engine"}
	hist := func(name, help string, b []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b}, lbl)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, lbl)
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(lbl[:2:2], extra...))
	}
	l := &llmMetrics{
		legacy:  legacy,
		running: gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting: gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed (queued or preempted)."),
		kv:      gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		preemptions: counter("vllm:num_preemptions_total",
			"Cumulative number of preemptions from the engine (recompute or swap), as the policy counts them."),
		prompt: counter("vllm:prompt_tokens_total", "Number of prefill tokens processed (answered requests)."),
		prefixQueries: counter("vllm:prefix_cache_queries_total",
			"Prefix cache queries, in prompt tokens looked up at admission (vLLM V1's counter)."),
		prefixHits: counter("vllm:prefix_cache_hits_total",
			"Prefix cache hits, in prompt tokens found cached (vLLM V1's counter)."),
		generation: counter("vllm:generation_tokens_total", "Number of generation tokens processed (every token a client received, cancelled streams included)."),
		success:    counter("vllm:request_success_total", "Count of finished requests by finished reason.", "finished_reason"),
		ttft:       hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:        hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds (every interval between a stream's tokens).", itlBuckets),
		tpotReq:    hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request: (e2e - ttft) / (output tokens - 1).", itlBuckets),
		e2e:        hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds, from the door.", phaseBuckets),
		queue:      hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", phaseBuckets),
		inference:  hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", phaseBuckets),
		prefill:    hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", phaseBuckets),
		decode:     hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", phaseBuckets),
		promptHist: hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokenBuckets),
		genHist:    hist("vllm:request_generation_tokens", "Number of generation tokens processed.", tokenBuckets),
		maxTokens:  hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter (the output length plan's engine generates).", tokenBuckets),
		maxGen:     hist("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", tokenBuckets),
		paramN:     hist("vllm:request_params_n", "Histogram of the n request parameter.", nBuckets),
		iter:       hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", iterBuckets),
		cacheInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:cache_config_info",
			Help: "Information of the LLMEngine CacheConfig (value 1)."}, []string{"block_size", "num_gpu_blocks", "engine"}),
	}
	if legacy {
		l.gpuCache = gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage (legacy name of vllm:kv_cache_usage_perc).")
		l.tpotLegacy = hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds (legacy name of vllm:inter_token_latency_seconds).", itlBuckets)
	}
	return l
}

func (l *llmMetrics) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{l.running, l.waiting, l.kv, l.preemptions, l.prompt, l.generation, l.success,
		l.prefixQueries, l.prefixHits,
		l.ttft, l.itl, l.tpotReq, l.e2e, l.queue, l.inference, l.prefill, l.decode,
		l.promptHist, l.genHist, l.maxTokens, l.maxGen, l.paramN, l.iter, l.cacheInfo}
	if l.legacy {
		cs = append(cs, l.gpuCache, l.tpotLegacy)
	}
	return cs
}

// llmSeries returns the LLM series, registering them with the server's registry on first use (a
// server that never serves an LLM plan exports none).
func (m *metrics) llmSeries() *llmMetrics {
	m.llmOnce.Do(func() {
		m.llm = newLLMMetrics(m.legacy)
		m.reg.MustRegister(m.llm.collectors()...)
	})
	return m.llm
}

// llmModel pre-creates a served model's request_success and prefix-cache series at 0 (as
// vLLM does).
func (l *llmMetrics) llmModel(model string) {
	for _, r := range finishedReasons {
		l.success.WithLabelValues(model, engineLabel, r)
	}
	l.prefixQueries.WithLabelValues(model, engineLabel)
	l.prefixHits.WithLabelValues(model, engineLabel)
}

// llmFinished records an answered LLM request: reason is vLLM's finished_reason (stop,
// length, abort, error). r carries the engine's stamps (engine time, the driver's clock, as
// at is): dispatch (scheduled), first token; latUs is the end-to-end latency as the client
// saw it; got the output tokens the client received (all of them unless aborted); lastTok
// when the last of them reached it (Never: none did). pol is the policy that served it.
// Called on the driver loop.
func (m *metrics) llmFinished(model, reason string, r *dataplane.Request, at dataplane.Time, latUs int64, got int, pol dataplane.Policy, grp *ChoiceGroup) {
	l := m.llmSeries()
	l.llmModel(model)
	sec := func(t dataplane.Time) float64 { return float64(max(t, 0)) / 1e6 }
	l.success.WithLabelValues(model, engineLabel, reason).Inc()
	if got > 0 {
		l.generation.WithLabelValues(model, engineLabel).Add(float64(got))
	}
	in, out := int(r.Attrs.InTokens), int(r.Attrs.OutTokens)
	n, maxGen, last := grp.finished(max(out, got))
	if reason == "abort" || reason == "error" {
		m.llmPreemptions(model, pol)
		m.llmPrefixCache(model, pol)
		return
	}
	e2e := dataplane.Time(latUs)
	end := at + e2e
	l.e2e.WithLabelValues(model, engineLabel).Observe(sec(e2e))
	if in > 0 {
		l.prompt.WithLabelValues(model, engineLabel).Add(float64(in))
		l.promptHist.WithLabelValues(model, engineLabel).Observe(float64(in))
	}
	l.genHist.WithLabelValues(model, engineLabel).Observe(float64(got))
	l.maxTokens.WithLabelValues(model, engineLabel).Observe(float64(max(out, got)))
	if last {
		l.maxGen.WithLabelValues(model, engineLabel).Observe(float64(maxGen))
		l.paramN.WithLabelValues(model, engineLabel).Observe(float64(n))
	}
	if r.Dispatch != dataplane.Never {
		l.queue.WithLabelValues(model, engineLabel).Observe(sec(r.Dispatch - at))
		l.inference.WithLabelValues(model, engineLabel).Observe(sec(end - r.Dispatch))
	}
	if r.FirstToken != dataplane.Never {
		ttft := r.FirstToken - at
		l.ttft.WithLabelValues(model, engineLabel).Observe(sec(ttft))
		if r.Dispatch != dataplane.Never {
			l.prefill.WithLabelValues(model, engineLabel).Observe(sec(r.FirstToken - r.Dispatch))
		}
		l.decode.WithLabelValues(model, engineLabel).Observe(sec(end - r.FirstToken))
		if got > 1 {
			l.tpotReq.WithLabelValues(model, engineLabel).Observe(sec(e2e-ttft) / float64(got-1))
		}
	}
	m.llmPreemptions(model, pol)
	m.llmPrefixCache(model, pol)
}

// ChoiceGroup ties together the engine requests that serve the choices of one client
// request for one prompt (the OpenAI API's n > 1: n independent sequences). vLLM observes
// vllm:request_params_n and vllm:request_max_num_generation_tokens once per such request,
// when its last choice finishes, with n and the longest choice (its parent request,
// ecosystem-dropin §1); each choice counts in every other series on its own. Each choice's
// Request carries the same group; it is read and written on the driver loop only.
type ChoiceGroup struct {
	n, left, maxGen int
}

// NewChoiceGroup returns the group of a request's n choices.
func NewChoiceGroup(n int) *ChoiceGroup { return &ChoiceGroup{n: n, left: n} }

// finished records a choice that ended with gen tokens (requested or received): n and the
// group's longest choice, and whether it was the last. A nil group is a request of one
// choice.
func (g *ChoiceGroup) finished(gen int) (n, maxGen int, last bool) {
	if g == nil {
		return 1, gen, true
	}
	g.left--
	g.maxGen = max(g.maxGen, gen)
	return g.n, g.maxGen, g.left == 0
}

// llmTokens records the inter-token intervals of a stream: n tokens reached the client
// over gap since the previous ones; vLLM observes one interval per engine output, each
// token after the first (a step that shows several tokens at once observes gap/n each,
// so the count of intervals is the tokens after the first, as in vLLM).
func (m *metrics) llmTokens(model string, n int, gap dataplane.Time) {
	if n <= 0 {
		return
	}
	l := m.llmSeries()
	v := float64(max(gap, 0)) / 1e6 / float64(n)
	itl := l.itl.WithLabelValues(model, engineLabel)
	var legacy prometheus.Observer
	if l.legacy {
		legacy = l.tpotLegacy.WithLabelValues(model, engineLabel)
	}
	for range n {
		itl.Observe(v)
		if legacy != nil {
			legacy.Observe(v)
		}
	}
}

// llmPreemptions adds the policy's new preemptions, under the model of the request being
// answered (the policy counts its engines' preemptions together). The model's series
// exists from its first answer, at 0 until the engine preempts: vLLM creates
// vllm:num_preemptions_total with the engine (ecosystem-dropin §1), and a dashboard's
// rate() or a `vllm:num_preemptions_total > 0` alert reads an absent series as no data,
// not as none. A policy that does not count preemptions gets no series: 0 would be a guess.
func (m *metrics) llmPreemptions(model string, pol dataplane.Policy) {
	p, ok := pol.(Preempter)
	if !ok {
		return
	}
	l := m.llm
	// Comparable: policies are pointers.
	if p != l.pol {
		l.pol, l.seen = p, 0
	}
	c := l.preemptions.WithLabelValues(model, engineLabel)
	if n := p.Preemptions(); n > l.seen {
		c.Add(float64(n - l.seen))
		l.seen = n
	}
}

// llmPrefixCache adds the policy's new prefix-cache queries and hits, under the model of
// the request being answered (the policy counts its engines together).
func (m *metrics) llmPrefixCache(model string, pol dataplane.Policy) {
	p, ok := pol.(PrefixCacher)
	if !ok {
		return
	}
	l := m.llm
	if p != l.apc {
		l.apc, l.seenQ, l.seenH = p, 0, 0
	}
	q, h := p.PrefixCache()
	if q > l.seenQ {
		l.prefixQueries.WithLabelValues(model, engineLabel).Add(float64(q - l.seenQ))
		l.seenQ = q
	}
	if h > l.seenH {
		l.prefixHits.WithLabelValues(model, engineLabel).Add(float64(h - l.seenH))
		l.seenH = h
	}
}

// llmIteration records the tokens of one engine step.
func (m *metrics) llmIteration(model string, tokens int) {
	m.llmSeries().iter.WithLabelValues(model, engineLabel).Observe(float64(tokens))
}

// llmCacheConfig sets vllm:cache_config_info from pol.
func (m *metrics) llmCacheConfig(pol CacheConfigReporter) {
	l := m.llmSeries()
	l.cacheInfo.Reset()
	pol.CacheConfig(func(engine, blockSize, blocks int) {
		l.cacheInfo.WithLabelValues(strconv.Itoa(blockSize), strconv.Itoa(blocks), strconv.Itoa(engine)).Set(1)
	})
}

// llmGauges sets the engine gauges from pol (nil when it reports none); names maps an
// application to its served name. Series of engines the policy no longer reports are
// dropped (Reset), so a gauge never shows a stale engine.
func (m *metrics) llmGauges(pol EngineGauger, names func(dataplane.AppID) string) {
	l := m.llmSeries()
	l.running.Reset()
	l.waiting.Reset()
	l.kv.Reset()
	if l.legacy {
		l.gpuCache.Reset()
	}
	pol.EngineGauges(func(app dataplane.AppID, engine, running, waiting int, kv float64) {
		name, e := names(app), strconv.Itoa(engine)
		l.running.WithLabelValues(name, e).Add(float64(running))
		l.waiting.WithLabelValues(name, e).Add(float64(waiting))
		l.kv.WithLabelValues(name, e).Set(kv)
		if l.legacy {
			l.gpuCache.WithLabelValues(name, e).Set(kv)
		}
	})
}
