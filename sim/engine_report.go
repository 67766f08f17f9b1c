package sim

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
)

// The report of one LLM engine replaying a trace on its own (`plan simulate --llm`): it is
// computed from a simulated point's request records, so it lives beside the point; the CLI
// only prints it.

// EngineReport is what `plan simulate --llm` reports of one engine's replay: the token
// timings and throughput users measure (LLM engine digest §3), the preemptions the engine
// counts (vllm:num_preemptions_total), and what produced them: the profile entry, the
// policy and the engine settings, so two replays that differ say why.
type EngineReport struct {
	Profile  string `json:"profile"`
	Model    string `json:"model"`
	GPU      string `json:"gpu"`
	GPUCount int    `json:"gpu_count"`
	// Backend says whether the profile's curves were measured (import) or estimated.
	Backend string `json:"backend"`
	Trace   string `json:"trace"`
	Policy  string `json:"policy"`
	// DefaultPolicy: the policy is the one scheduling as the engine does (no --policy).
	DefaultPolicy bool            `json:"default_policy"`
	Engine        []EngineSetting `json:"engine"`
	// Requests counts the replayed requests, Answered those finished (on time or late),
	// Refused those the engine dropped (the reasons in Dropped), Cancelled those withdrawn.
	Requests  int              `json:"requests"`
	Answered  int              `json:"answered"`
	Refused   int              `json:"refused"`
	Dropped   map[string]int   `json:"dropped,omitempty"`
	Cancelled int              `json:"cancelled,omitempty"`
	Classes   []EngineClassRow `json:"classes"`
	// SpanUs is from the first arrival to the last finish: the throughputs are over it.
	SpanUs           int64   `json:"span_us"`
	RequestsPerS     float64 `json:"requests_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	PromptTokens     int64   `json:"prompt_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	// Preemptions counts preemption events, where the policy counts them.
	Preemptions *int64 `json:"preemptions,omitempty"`
	// PrefixCache is the engine's prefix-cache use when the profile enables it.
	PrefixCache *EnginePrefixCache `json:"prefix_cache,omitempty"`
	// KVOffload is the CPU KV offload tier's use when the profile gives one
	// (engine.kv_offload_bytes).
	KVOffload *EngineKVOffload `json:"kv_offload,omitempty"`
}

// EngineKVOffload is what the CPU offload tier behind the prefix cache saved (vLLM's
// OffloadingConnector): its size, the prompt tokens the GPU's cache missed that were looked
// up in it, those found and loaded back over the host link instead of recomputed, and their
// ratio.
type EngineKVOffload struct {
	Bytes         int64   `json:"kv_offload_bytes"`
	QueriedTokens int64   `json:"queried_tokens"`
	LoadedTokens  int64   `json:"loaded_tokens"`
	HitRate       float64 `json:"hit_rate"`
}

// EnginePrefixCache is what the engine's prefix cache saved (llm-engine-2 §2): prompt tokens
// looked up (vllm:prefix_cache_queries) and found cached (vllm:prefix_cache_hits, the
// prefill skipped), and their ratio.
type EnginePrefixCache struct {
	QueriedTokens int64   `json:"queried_tokens"`
	CachedTokens  int64   `json:"cached_tokens"`
	HitRate       float64 `json:"hit_rate"`
}

// EngineSetting is one engine setting the replay ran with, in vLLM's flag name, and where
// its value came from (llm.Source: default, iteration, engine, profile or flag).
type EngineSetting struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// EngineClassRow is the token timings of one class of the trace ("all": every request).
type EngineClassRow struct {
	Class    string        `json:"class"`
	Answered int           `json:"answered"`
	TTFT     PercentilesUs `json:"ttft"`
	TPOT     PercentilesUs `json:"tpot"`
	E2E      PercentilesUs `json:"e2e"`
}

// PercentilesUs are the quantiles of a latency in µs, each the smallest sample x with
// F(x) ≥ p (as Summarize: a latency some request really had), and the mean.
type PercentilesUs struct {
	N      int     `json:"n"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P95Us  float64 `json:"p95_us"`
	P99Us  float64 `json:"p99_us"`
}

// SummarizeUs is the quantiles and mean of xs (µs), the quantiles Summarize's
// (internal/base/quantile: numpy's linear interpolation, as vLLM's benchmarks report) to the µs.
func SummarizeUs(xs []float64) PercentilesUs {
	if len(xs) == 0 {
		return PercentilesUs{}
	}
	s := quantile.Sorted(xs)
	q := func(p float64) float64 { return math.Round(quantile.Percentile(s, 100*p)) }
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return PercentilesUs{N: len(s), MeanUs: math.Round(sum/float64(len(s))*1000) / 1000, P50Us: q(0.50), P90Us: q(0.90), P95Us: q(0.95), P99Us: q(0.99)}
}

// NewEngineReport summarizes a replay's point from its request records: TTFT = first token
// − arrival and TPOT = (finish − first token) / (output tokens − 1) of the answered requests
// the engine stamped a first token for, E2E = finish − arrival of every answered request
// (the definitions of sim's LLM metrics).
func NewEngineReport(profile string, l formats.LLMProfile, policy string, def bool, trace string, pt *Point) *EngineReport {
	rep := &EngineReport{Profile: profile, Model: l.Model, GPU: l.GPU, GPUCount: max(l.GPUCount, 1), Backend: l.Backend,
		Trace: trace, Policy: policy, DefaultPolicy: def, Engine: engineSettings(l), Requests: len(pt.Requests)}
	type samples struct{ ttft, tpot, e2e []float64 }
	by := map[string]*samples{}
	var order []string
	first, last := int64(math.MaxInt64), int64(0)
	for _, r := range pt.Requests {
		first = min(first, r.ArrivalUs)
		switch {
		case r.Outcome == dataplane.Completed.String() || r.Outcome == dataplane.Late.String():
		case r.Reason == string(dataplane.DropCancelled):
			rep.Cancelled++
			continue
		default:
			rep.Refused++
			if rep.Dropped == nil {
				rep.Dropped = map[string]int{}
			}
			rep.Dropped[r.Reason]++
			continue
		}
		rep.Answered++
		last = max(last, r.DoneUs)
		rep.PromptTokens += int64(r.InputTokens)
		rep.OutputTokens += int64(r.OutputTokens)
		keys := []string{"all"}
		if r.Class != "all" {
			keys = append(keys, r.Class)
		}
		for _, k := range keys {
			s := by[k]
			if s == nil {
				s = &samples{}
				by[k] = s
				order = append(order, k)
			}
			s.e2e = append(s.e2e, float64(r.DoneUs-r.ArrivalUs))
			if r.FirstTokenUs != nil {
				s.ttft = append(s.ttft, float64(*r.FirstTokenUs-r.ArrivalUs))
				if r.OutputTokens > 1 {
					s.tpot = append(s.tpot, float64(r.DoneUs-*r.FirstTokenUs)/float64(r.OutputTokens-1))
				}
			}
		}
	}
	if len(order) == 2 { // one class: its row is the "all" row
		order = order[:1]
	}
	for _, k := range order {
		s := by[k]
		rep.Classes = append(rep.Classes, EngineClassRow{Class: k, Answered: len(s.e2e), TTFT: SummarizeUs(s.ttft), TPOT: SummarizeUs(s.tpot), E2E: SummarizeUs(s.e2e)})
	}
	if rep.Answered > 0 && last > first {
		rep.SpanUs = last - first
		secs := float64(rep.SpanUs) / 1e6
		rep.RequestsPerS = math.Round(float64(rep.Answered)/secs*1000) / 1000
		rep.OutputTokensPerS = math.Round(float64(rep.OutputTokens)/secs*1000) / 1000
	}
	return rep
}

// engineSettings are the engine settings the replay's instance runs with, as the LLM engine
// resolves them (llm.NewModel: the profile's engine block, else the older iteration fields,
// else vLLM V1's default for the GPU), each with its source.
func engineSettings(l formats.LLMProfile) []EngineSetting {
	set := llm.NewModel(&l).Settings()
	out := make([]EngineSetting, len(set))
	for i, s := range set {
		out[i] = EngineSetting{s.Name, s.Value, string(s.Source)}
	}
	return out
}
