package load

import (
	"math"
	"sort"
	"time"
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

// Dist summarizes a distribution in milliseconds; percentiles interpolate linearly between
// order statistics (numpy's default, as benchmark_serving computes them).
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// distOf summarizes xs (durations); it sorts xs.
func distOf(xs []time.Duration) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	ms := func(d float64) float64 { return math.Round(d/1e3) / 1e3 } // ns → ms, to the µs
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	q := func(p float64) float64 {
		h := p * float64(len(xs)-1)
		lo := int(math.Floor(h))
		hi := min(lo+1, len(xs)-1)
		return float64(xs[lo]) + (h-float64(lo))*float64(xs[hi]-xs[lo])
	}
	return Dist{N: len(xs), Mean: ms(sum / float64(len(xs))), P50: ms(q(0.5)), P90: ms(q(0.9)), P99: ms(q(0.99)), Max: ms(float64(xs[len(xs)-1]))}
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
	rep.DurationS = math.Round(end.Seconds()*1e6) / 1e6
	rep.OutputTokens = all.out
	if end > 0 {
		secs := end.Seconds()
		rep.RequestThroughput = round3(float64(rep.Completed) / secs)
		rep.OutputThroughput = round3(float64(all.out) / secs)
		rep.TotalTokenThroughput = round3(float64(all.out+rep.InputTokens) / secs)
	}
	rep.TTFT, rep.TPOT, rep.ITL, rep.E2E = distOf(all.ttft), distOf(all.tpot), distOf(all.itl), distOf(all.e2e)
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
			m.TTFT, m.TPOT, m.ITL, m.E2E = distOf(l.ttft), distOf(l.tpot), distOf(l.itl), distOf(l.e2e)
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
