package load

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// ResultMeta are the facts of a run that a vllm-bench result file records and the report does
// not hold.
type ResultMeta struct {
	Date    time.Time
	Backend string // "openai" (completions) or "openai-chat"
	Label   string
	Model   string
	// NumPrompts is --num-prompts; RequestRate --request-rate (+Inf: "inf").
	NumPrompts  int
	RequestRate float64
	Metadata    map[string]string
	// PercentileMetrics are the metrics (ttft, tpot, itl, e2el) whose mean, median, std and
	// percentiles are written.
	PercentileMetrics []string
	// Warmup leaves out the samples that arrived in it, as the report does.
	Warmup time.Duration
	// Detailed adds the per-request arrays (--save-detailed).
	Detailed bool
}

// PercentileMetricNames are the metrics --percentile-metrics takes.
var PercentileMetricNames = []string{"ttft", "tpot", "itl", "e2el"}

// VLLMResult is a run's result under the keys `vllm bench serve --save-result` writes
// (spec §3): date, endpoint_type, backend, label, model_id, tokenizer_id, num_prompts,
// metadata, request_rate ("inf" for an infinite one), burstiness, max_concurrency,
// ramp_up_strategy/start/end (null: plan load has no ramp-up), duration, completed, failed,
// total_input_tokens, total_output_tokens, request_throughput, request_goodput (null without
// --goodput), output_throughput, total_token_throughput, max_output_tokens_per_s,
// max_concurrent_requests, and for each of PercentileMetrics mean_/median_/std_/pNN_<m>_ms.
// tokenizer_id is null (lengths are the dataset's, or estimated: EstimateTokens). Detailed
// adds input_lens, output_lens, ttfts, itls (seconds), generated_texts and errors, one entry
// a request in send order, and plan load's own start_times and e2els (seconds).
func VLLMResult(rep *OpenAIReport, samples []OpenAISample, m ResultMeta) map[string]any {
	r := map[string]any{
		"date":             m.Date.Format("20060102-150405"),
		"endpoint_type":    m.Backend,
		"backend":          m.Backend,
		"label":            nilIfEmpty(m.Label),
		"model_id":         m.Model,
		"tokenizer_id":     nil,
		"num_prompts":      m.NumPrompts,
		"metadata":         m.Metadata,
		"burstiness":       rep.Burstiness,
		"max_concurrency":  nil,
		"ramp_up_strategy": nil, "ramp_up_start_rps": nil, "ramp_up_end_rps": nil,
		"duration":                rep.DurationS,
		"completed":               rep.Completed,
		"failed":                  rep.Failed,
		"total_input_tokens":      rep.InputTokens,
		"total_output_tokens":     rep.OutputTokens,
		"request_throughput":      rep.RequestThroughput,
		"request_goodput":         nil,
		"output_throughput":       rep.OutputThroughput,
		"total_token_throughput":  rep.TotalTokenThroughput,
		"max_output_tokens_per_s": rep.MaxOutputTokensPerS,
		"max_concurrent_requests": rep.MaxConcurrentRequests,
	}
	if m.Metadata == nil {
		r["metadata"] = map[string]string{}
	}
	if math.IsInf(m.RequestRate, 1) || m.RequestRate <= 0 {
		r["request_rate"] = "inf"
	} else {
		r["request_rate"] = m.RequestRate
	}
	if rep.Burstiness == 0 {
		r["burstiness"] = 1.0
	}
	if rep.MaxConcurrency > 0 {
		r["max_concurrency"] = rep.MaxConcurrency
	} else if rep.Concurrency > 0 {
		r["max_concurrency"] = rep.Concurrency
	}
	if rep.RequestGoodput != nil {
		r["request_goodput"] = *rep.RequestGoodput
	}
	dists := map[string]Dist{"ttft": rep.TTFT, "tpot": rep.TPOT, "itl": rep.ITL, "e2el": rep.E2E}
	for _, name := range m.PercentileMetrics {
		d := dists[name]
		r["mean_"+name+"_ms"] = d.Mean
		r["median_"+name+"_ms"] = d.Median
		r["std_"+name+"_ms"] = d.Std
		for _, p := range rep.MetricPercentiles {
			k := "p" + roundPct(p)
			r[k+"_"+name+"_ms"] = d.Percentiles[k]
		}
	}
	if m.Detailed {
		addDetailed(r, samples, m.Warmup)
	}
	return r
}

func addDetailed(r map[string]any, samples []OpenAISample, warmup time.Duration) {
	secs := func(d time.Duration) float64 { return d.Seconds() }
	var in, out []int
	var ttfts, starts, e2els []float64
	itls := [][]float64{}
	var texts, errs []string
	for i := range samples {
		s := &samples[i]
		if s.At < warmup {
			continue
		}
		in = append(in, s.InputTokens)
		starts = append(starts, secs(s.Sent))
		e2els = append(e2els, secs(s.E2E))
		if !s.OK {
			out, ttfts = append(out, 0), append(ttfts, 0)
			itls = append(itls, []float64{})
			texts = append(texts, "")
			msg := s.Reason
			if s.Status > 0 {
				msg += fmt.Sprintf(" (HTTP %d)", s.Status)
			}
			if s.Error != "" {
				msg += ": " + s.Error
			}
			errs = append(errs, strings.TrimSpace(msg))
			continue
		}
		out, ttfts = append(out, s.OutTokens), append(ttfts, secs(s.TTFT))
		gaps := make([]float64, 0, max(len(s.Chunks)-1, 0))
		for j := 1; j < len(s.Chunks); j++ {
			gaps = append(gaps, secs(s.Chunks[j]-s.Chunks[j-1]))
		}
		itls = append(itls, gaps)
		texts = append(texts, s.Text)
		errs = append(errs, "")
	}
	r["input_lens"], r["output_lens"], r["ttfts"], r["itls"] = in, out, ttfts, itls
	r["generated_texts"], r["errors"], r["start_times"], r["e2els"] = texts, errs, starts, e2els
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ResultFileName is vllm bench serve's default result file name:
// {label or backend}-{rate}qps[-concurrency{N}]-{model's last path part}-{date}.json.
func ResultFileName(m ResultMeta, maxConcurrency int) string {
	prefix := m.Label
	if prefix == "" {
		prefix = m.Backend
	}
	rate := "inf"
	if !math.IsInf(m.RequestRate, 1) && m.RequestRate > 0 {
		rate = fmt.Sprint(m.RequestRate)
	}
	name := prefix + "-" + rate + "qps"
	if maxConcurrency > 0 {
		name += fmt.Sprintf("-concurrency%d", maxConcurrency)
	}
	model := m.Model[strings.LastIndex(m.Model, "/")+1:]
	return strings.NewReplacer("/", "_", " ", "_").Replace(name+"-"+model+"-"+m.Date.Format("20060102-150405")) + ".json"
}
