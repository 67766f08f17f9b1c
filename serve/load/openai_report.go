package load

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/plan-dev/plan/internal/base/quantile"
)

// OpenAIReport is a benchmark run's summary, in the terms of vLLM's benchmark_serving
// (llm-engine digest §3): over the successful requests, TTFT (send → first token), TPOT
// ((E2E − TTFT) / (output tokens − 1), requests with more than one token), ITL (every gap
// between consecutive streamed chunks of every request), E2E (send → last token); request
// and token throughput over the run's duration (start → last answer); the failures by reason
// and HTTP status.
type OpenAIReport struct {
	Endpoint    string  `json:"endpoint"`
	Mode        string  `json:"mode"` // open-loop | closed-loop
	Arrival     string  `json:"arrival,omitempty"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	Seed        uint64  `json:"seed"`
	// Requests sent; Completed the successful ones; Failed the rest.
	Requests  int `json:"requests"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// ShortOutputs are successful requests that got fewer tokens than their max_tokens
	// (a server stopping at EOS: send ignore_eos, or the engine's own limit).
	ShortOutputs int       `json:"short_outputs"`
	Failures     []Failure `json:"failures,omitempty"`
	DurationS    float64   `json:"duration_s"`
	// InputTokens and OutputTokens are totals over the successful requests.
	InputTokens          int64   `json:"input_tokens"`
	OutputTokens         int64   `json:"output_tokens"`
	RequestThroughput    float64 `json:"request_throughput_rps"`
	OutputThroughput     float64 `json:"output_throughput_tps"`
	TotalTokenThroughput float64 `json:"total_token_throughput_tps"`
	TTFT                 Dist    `json:"ttft_ms"`
	TPOT                 Dist    `json:"tpot_ms"`
	ITL                  Dist    `json:"itl_ms"`
	E2E                  Dist    `json:"e2e_ms"`
	// Models breaks the same numbers down by model (the request's model field), in name
	// order, when a run sends to more than one.
	Models []OpenAIModelReport `json:"models,omitempty"`

	// Dataset is the --dataset-name (and file) the requests came from; Burstiness and
	// MaxConcurrency the run's, as vllm bench serve's (0: not set).
	Dataset        string  `json:"dataset,omitempty"`
	Burstiness     float64 `json:"burstiness,omitempty"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	// WarmupS is --warmup: Excluded requests arrived (closed loop: were sent) in it and are
	// in no number above; WarmupRequests were sent before the run (--num-warmups),
	// WarmupFailed of them failed.
	WarmupS        float64 `json:"warmup_s,omitempty"`
	Excluded       int     `json:"warmup_excluded,omitempty"`
	WarmupRequests int     `json:"warmup_requests,omitempty"`
	WarmupFailed   int     `json:"warmup_failed,omitempty"`
	// GoodputSLOms are the --goodput objectives (ms by metric); GoodRequests the completed
	// requests that met every one; RequestGoodput those per second (nil without --goodput).
	GoodputSLOms   map[string]float64 `json:"goodput_slo_ms,omitempty"`
	GoodRequests   int                `json:"good_requests,omitempty"`
	RequestGoodput *float64           `json:"request_goodput_rps,omitempty"`
	// MaxOutputTokensPerS is the most streamed chunks (tokens) in any one second of the run
	// and MaxConcurrentRequests the most requests in flight in any one second, as vllm bench
	// serve computes its max_output_tokens_per_s and max_concurrent_requests (maxRates).
	MaxOutputTokensPerS   float64 `json:"max_output_tokens_per_s"`
	MaxConcurrentRequests int     `json:"max_concurrent_requests"`
	// MetricPercentiles are the --metric-percentiles each Dist also reports.
	MetricPercentiles []float64 `json:"metric_percentiles,omitempty"`
}

// FailureRate is the share of the counted requests that failed (0 for none).
func (r *OpenAIReport) FailureRate() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Failed) / float64(r.Requests)
}

// OpenAIModelReport is one model's share of a run.
type OpenAIModelReport struct {
	Model        string  `json:"model"`
	Requests     int     `json:"requests"`
	Completed    int     `json:"completed"`
	Failed       int     `json:"failed"`
	OutputTokens int64   `json:"output_tokens"`
	TTFT         Dist    `json:"ttft_ms"`
	TPOT         Dist    `json:"tpot_ms"`
	ITL          Dist    `json:"itl_ms"`
	E2E          Dist    `json:"e2e_ms"`
	OutputTPS    float64 `json:"output_throughput_tps"`
}

// Failure counts failed requests of one reason and HTTP status (0: none), with one of their
// messages.
type Failure struct {
	Reason  string `json:"reason"`
	Status  int    `json:"status,omitempty"`
	Count   int    `json:"count"`
	Example string `json:"example,omitempty"`
}

// Dist summarizes a distribution in milliseconds. Percentiles are internal/base/quantile's
// (numpy's linear interpolation, as vllm bench serve computes them); Std is the population
// standard deviation (np.std).
type Dist struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Std    float64 `json:"std"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
	// Percentiles are the --metric-percentiles, keyed as vllm bench names them ("p95",
	// "p99.9").
	Percentiles map[string]float64 `json:"percentiles,omitempty"`
}

// distOf summarizes xs (durations) with p50, p90, p99 and the percentiles pcts (0-100).
func distOf(xs []time.Duration, pcts ...float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	fs := make([]float64, len(xs))
	for i, x := range xs {
		fs[i] = float64(x)
	}
	fs = quantile.Sorted(fs)
	ms := func(d float64) float64 { return math.Round(d/1e3) / 1e3 } // ns → ms, to the µs
	q := func(p float64) float64 { return ms(quantile.Percentile(fs, p)) }
	d := Dist{N: len(xs), Mean: ms(quantile.Mean(fs)), Median: q(50), Std: ms(quantile.Std(fs)),
		P50: q(50), P90: q(90), P99: q(99), Max: ms(fs[len(fs)-1])}
	for _, p := range pcts {
		if d.Percentiles == nil {
			d.Percentiles = map[string]float64{}
		}
		d.Percentiles["p"+roundPct(p)] = q(p)
	}
	return d
}

// latencies are a set of samples' TTFT, TPOT, ITL and E2E values.
type latencies struct {
	ttft, tpot, itl, e2e []time.Duration
	out                  int64
}

func (l *latencies) add(s *OpenAISample) {
	l.ttft = append(l.ttft, s.TTFT)
	l.e2e = append(l.e2e, s.E2E)
	if s.OutTokens > 1 {
		l.tpot = append(l.tpot, (s.E2E-s.TTFT)/time.Duration(s.OutTokens-1))
	}
	for i := 1; i < len(s.Chunks); i++ {
		l.itl = append(l.itl, s.Chunks[i]-s.Chunks[i-1])
	}
	l.out += int64(s.OutTokens)
}

func openAIReport(o OpenAIOptions, samples []OpenAISample) *OpenAIReport {
	rep := &OpenAIReport{Endpoint: "/v1/completions", Mode: "open-loop", Arrival: o.Arrival.Name, RateRPS: o.Rate, Seed: o.Seed, Requests: len(samples)}
	if o.Chat {
		rep.Endpoint = "/v1/chat/completions"
	}
	if o.Concurrency > 0 {
		rep.Mode, rep.Arrival, rep.RateRPS, rep.Concurrency = "closed-loop", "", 0, o.Concurrency
	} else if o.Arrival.Kind == "replay" {
		rep.RateRPS = 0
	}
	if math.IsInf(o.Rate, 1) {
		rep.RateRPS, rep.Arrival = 0, "all at once (request rate inf)"
	}
	if o.Dataset != nil {
		rep.Dataset = o.Dataset.Name
		if o.Dataset.Path != "" {
			rep.Dataset += " " + o.Dataset.Path
		}
	}
	if o.Dataset != nil || o.Burstiness > 0 || math.IsInf(o.Rate, 1) {
		rep.Burstiness = 1 // vllm bench's default: Poisson
		if o.Burstiness > 0 {
			rep.Burstiness = o.Burstiness
		}
		if rep.Concurrency == 0 && !math.IsInf(o.Rate, 1) {
			rep.Arrival = fmt.Sprintf("gamma, burstiness %g", rep.Burstiness)
		}
		if o.Timestamps {
			rep.Arrival, rep.RateRPS, rep.Burstiness = "recorded times", 0, 0
			if o.RateScale > 0 && o.RateScale != 1 {
				rep.Arrival = fmt.Sprintf("recorded times at %gx", o.RateScale)
			}
		}
	}
	rep.MaxConcurrency = o.MaxConcurrency
	rep.MetricPercentiles = o.Percentiles
	if o.Warmup > 0 {
		rep.WarmupS = o.Warmup.Seconds()
		kept := samples[:0:0]
		for _, s := range samples {
			if s.At >= o.Warmup {
				kept = append(kept, s)
			}
		}
		rep.Excluded = len(samples) - len(kept)
		samples = kept
		rep.Requests = len(samples)
	}
	var all latencies
	per := map[string]*latencies{}
	models := map[string]*OpenAIModelReport{}
	fails := map[[2]any]*Failure{}
	var end time.Duration
	for i := range samples {
		s := &samples[i]
		end = max(end, s.Sent+s.E2E)
		m := models[s.Model]
		if m == nil {
			m = &OpenAIModelReport{Model: s.Model}
			models[s.Model], per[s.Model] = m, &latencies{}
		}
		m.Requests++
		if !s.OK {
			rep.Failed++
			m.Failed++
			k := [2]any{s.Reason, s.Status}
			if fails[k] == nil {
				fails[k] = &Failure{Reason: s.Reason, Status: s.Status, Example: s.Error}
			}
			fails[k].Count++
			continue
		}
		rep.Completed++
		m.Completed++
		if s.OutTokens < s.OutputTokens {
			rep.ShortOutputs++
		}
		rep.InputTokens += int64(s.InputTokens)
		all.add(s)
		per[s.Model].add(s)
	}
	// Throughput is over the measured window: from the warm-up's end to the last answer.
	end = max(end-max(o.Warmup, 0), 0)
	rep.DurationS = math.Round(end.Seconds()*1e6) / 1e6
	rep.OutputTokens = all.out
	rep.MaxOutputTokensPerS, rep.MaxConcurrentRequests = maxRates(samples)
	if len(o.Goodput) > 0 {
		rep.GoodputSLOms = o.Goodput
		for i := range samples {
			if s := &samples[i]; s.OK && meetsSLOs(s, o.Goodput) {
				rep.GoodRequests++
			}
		}
		g := 0.0
		if end > 0 {
			g = round3(float64(rep.GoodRequests) / end.Seconds())
		}
		rep.RequestGoodput = &g
	}
	if end > 0 {
		secs := end.Seconds()
		rep.RequestThroughput = round3(float64(rep.Completed) / secs)
		rep.OutputThroughput = round3(float64(all.out) / secs)
		rep.TotalTokenThroughput = round3(float64(all.out+rep.InputTokens) / secs)
	}
	p := o.Percentiles
	rep.TTFT, rep.TPOT, rep.ITL, rep.E2E = distOf(all.ttft, p...), distOf(all.tpot, p...), distOf(all.itl, p...), distOf(all.e2e, p...)
	for _, f := range fails {
		rep.Failures = append(rep.Failures, *f)
	}
	sort.Slice(rep.Failures, func(i, j int) bool {
		a, b := rep.Failures[i], rep.Failures[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		return a.Status < b.Status
	})
	if len(models) > 1 {
		for name, m := range models {
			l := per[name]
			m.OutputTokens = l.out
			m.TTFT, m.TPOT, m.ITL, m.E2E = distOf(l.ttft, p...), distOf(l.tpot, p...), distOf(l.itl, p...), distOf(l.e2e, p...)
			if end > 0 {
				m.OutputTPS = round3(float64(l.out) / end.Seconds())
			}
			rep.Models = append(rep.Models, *m)
		}
		sort.Slice(rep.Models, func(i, j int) bool { return rep.Models[i].Model < rep.Models[j].Model })
	}
	return rep
}

func round3(v float64) float64 { return math.Round(v*1e3) / 1e3 }

// GoodputMetrics are the metrics --goodput takes, as vllm bench serve's: time to first token,
// time per output token and end-to-end latency, in ms.
var GoodputMetrics = []string{"ttft", "tpot", "e2el"}

// tpotOf is a request's time per output token, (E2E − TTFT) / (tokens − 1); 0 for one token.
func tpotOf(s *OpenAISample) time.Duration {
	if s.OutTokens <= 1 {
		return 0
	}
	return (s.E2E - s.TTFT) / time.Duration(s.OutTokens-1)
}

// meetsSLOs reports whether a successful request met every objective (ms by metric), as vllm
// bench serve judges goodput: each measured value at most its objective.
func meetsSLOs(s *OpenAISample, slo map[string]float64) bool {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for m, v := range slo {
		var got float64
		switch m {
		case "ttft":
			got = ms(s.TTFT)
		case "tpot":
			got = ms(tpotOf(s))
		case "e2el":
			got = ms(s.E2E)
		default:
			return false
		}
		if got > v {
			return false
		}
	}
	return true
}

// maxRates are vllm bench serve's max_output_tokens_per_s and max_concurrent_requests: the
// run cut into one-second buckets from the first send, each successful request's tokens
// (its first chunk at TTFT, one more per later chunk) counted in the bucket of their time,
// and the request counted as in flight in every bucket from its send's to its end's.
func maxRates(samples []OpenAISample) (float64, int) {
	if len(samples) == 0 {
		return 0, 0
	}
	first, last := samples[0].Sent, time.Duration(0)
	for i := range samples {
		first = min(first, samples[i].Sent)
		last = max(last, samples[i].Sent+samples[i].E2E)
	}
	n := int(math.Ceil((last - first).Seconds())) + 1
	tokens, inflight := make([]float64, n), make([]int, n)
	bucket := func(t time.Duration) int { return int((t - first) / time.Second) }
	for i := range samples {
		s := &samples[i]
		if !s.OK {
			continue
		}
		for _, c := range s.Chunks {
			if b := bucket(s.Sent + c); b >= 0 && b < n {
				tokens[b]++
			}
		}
		for b := bucket(s.Sent); b <= bucket(s.Sent+s.E2E) && b < n; b++ {
			inflight[b]++
		}
	}
	var mt float64
	var mc int
	for i := range tokens {
		mt, mc = max(mt, tokens[i]), max(mc, inflight[i])
	}
	return mt, mc
}
