package serve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plan-dev/plan/dataplane"
)

// The LLM series (issue 30 item 4; LLM engine digest §3): what vLLM exports as
// vllm:time_to_first_token_seconds, vllm:time_per_output_token_seconds,
// vllm:e2e_request_latency_seconds, vllm:prompt_tokens_total, vllm:generation_tokens_total
// and vllm:num_preemptions_total, so dashboards built for an engine read plan the same way.
// Buckets are vLLM's: they reach tens of minutes, where LLM requests (a batch class's
// 10-minute SLO) finish.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	tpotBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
)

// streamsTokens reports whether pol serves LLM requests token by token (an LLM engine's
// policy: it reports the tokens each client has seen, TokenReporter): its answered requests
// feed the LLM series even before it stamps a first token. Asking the policy, not naming a
// deployment kind, keeps serve free of any system's name.
func streamsTokens(pol dataplane.Policy) bool {
	_, ok := pol.(TokenReporter)
	return ok
}

// LLMMetricNames lists the plan_llm_* families /metrics exposes once an LLM plan answered a
// request (labelled families show with their first series).
var LLMMetricNames = []string{
	"plan_llm_time_to_first_token_seconds", "plan_llm_time_per_output_token_seconds", "plan_llm_e2e_request_latency_seconds",
	"plan_llm_prompt_tokens_total", "plan_llm_generation_tokens_total", "plan_llm_preemptions_total",
	"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
}

// PrefixCacher is implemented by LLM policies whose engines may cache prompt prefixes:
// the prompt tokens looked up and those found cached, which /metrics exports as vLLM V1's
// counters vllm:prefix_cache_queries_total and vllm:prefix_cache_hits_total (tokens,
// llm-engine-2 §2; ecosystem-dropin §1), so a dashboard's hit rate
// rate(hits)/rate(queries) reads plan as it reads vLLM. Both stay 0 without caching.
type PrefixCacher interface {
	PrefixCache() (queries, hits int64)
}

// Preempter is implemented by LLM policies that count their preemptions (a running
// sequence evicted, its KV recomputed or swapped): plan_llm_preemptions_total follows it.
type Preempter interface {
	Preemptions() int64
}

// llmMetrics are the LLM series, registered with the server's other plan_* families.
type llmMetrics struct {
	ttft, tpot, e2e    *prometheus.HistogramVec
	prompt, generation *prometheus.CounterVec
	preemptions        prometheus.Counter
	// seen is the policy's preemption count already added (driver loop only); pol the
	// policy it was read from (a new plan's policy counts from 0).
	seen int64
	pol  Preempter
	// prefixQueries and prefixHits follow the policy's PrefixCache counts as preemptions
	// follow Preemptions (seenQ, seenH already added; apc the policy read).
	prefixQueries, prefixHits prometheus.Counter
	seenQ, seenH              int64
	apc                       PrefixCacher
}

func newLLMMetrics() *llmMetrics {
	hist := func(name, help string, b []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b}, []string{"model"})
	}
	return &llmMetrics{
		ttft: hist("plan_llm_time_to_first_token_seconds", "Time to first token of answered LLM requests, from the door (LLM classes: model is the class).", ttftBuckets),
		tpot: hist("plan_llm_time_per_output_token_seconds", "Mean time per output token after the first, of answered LLM requests with more than one output token.", tpotBuckets),
		e2e:  hist("plan_llm_e2e_request_latency_seconds", "End-to-end latency of answered LLM requests, from the door.", e2eBuckets),
		prompt: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plan_llm_prompt_tokens_total",
			Help: "Prompt tokens of answered LLM requests."}, []string{"model"}),
		generation: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plan_llm_generation_tokens_total",
			Help: "Output tokens of answered LLM requests."}, []string{"model"}),
		preemptions: prometheus.NewCounter(prometheus.CounterOpts{Name: "plan_llm_preemptions_total",
			Help: "Running LLM sequences preempted (evicted for recompute or swapped out), as the policy counts them."}),
		prefixQueries: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prefix_cache_queries_total",
			Help: "Prefix cache queries, in prompt tokens looked up at admission (vLLM V1's counter)."}),
		prefixHits: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prefix_cache_hits_total",
			Help: "Prefix cache hits, in prompt tokens found cached (vLLM V1's counter)."}),
	}
}

// llmSeries returns the LLM series, registering them with the server's registry on first use (a
// server that never serves an LLM plan exports none).
func (m *metrics) llmSeries() *llmMetrics {
	m.llmOnce.Do(func() {
		m.llm = newLLMMetrics()
		m.reg.MustRegister(m.llm.ttft, m.llm.tpot, m.llm.e2e, m.llm.prompt, m.llm.generation, m.llm.preemptions,
			m.llm.prefixQueries, m.llm.prefixHits)
	})
	return m.llm
}

// llmFinished records an answered (completed or late) LLM request: its TTFT and TPOT from
// the first token the policy stamped (engine time, the driver's clock, as at is), its
// end-to-end latency latUs as the client saw it, and its tokens. pol is the policy that
// served it. Called on the driver loop.
func (m *metrics) llmFinished(model string, r *dataplane.Request, at dataplane.Time, latUs int64, pol dataplane.Policy) {
	l := m.llmSeries()
	l.e2e.WithLabelValues(model).Observe(float64(latUs) / 1e6)
	if r.Attrs.InTokens > 0 {
		l.prompt.WithLabelValues(model).Add(float64(r.Attrs.InTokens))
	}
	if r.Attrs.OutTokens > 0 {
		l.generation.WithLabelValues(model).Add(float64(r.Attrs.OutTokens))
	}
	if r.FirstToken != dataplane.Never {
		ttft := r.FirstToken - at
		l.ttft.WithLabelValues(model).Observe(float64(max(ttft, 0)) / 1e6)
		if r.Attrs.OutTokens > 1 {
			decode := dataplane.Time(latUs) - ttft
			l.tpot.WithLabelValues(model).Observe(float64(max(decode, 0)) / 1e6 / float64(r.Attrs.OutTokens-1))
		}
	}
	if p, ok := pol.(Preempter); ok {
		// Comparable: policies are pointers.
		if p != l.pol {
			l.pol, l.seen = p, 0
		}
		if n := p.Preemptions(); n > l.seen {
			l.preemptions.Add(float64(n - l.seen))
			l.seen = n
		}
	}
	if p, ok := pol.(PrefixCacher); ok {
		if p != l.apc {
			l.apc, l.seenQ, l.seenH = p, 0, 0
		}
		q, h := p.PrefixCache()
		if q > l.seenQ {
			l.prefixQueries.Add(float64(q - l.seenQ))
			l.seenQ = q
		}
		if h > l.seenH {
			l.prefixHits.Add(float64(h - l.seenH))
			l.seenH = h
		}
	}
}
