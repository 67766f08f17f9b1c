package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/sim"
)

// engineReport is what `plan simulate --llm` reports of one engine's replay: the token
// timings and throughput users measure (LLM engine digest §3), the preemptions the engine
// counts (vllm:num_preemptions_total), and what produced them: the profile entry, the
// policy and the engine settings, so two replays that differ say why.
type engineReport struct {
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
	Engine        []engineSetting `json:"engine"`
	// Requests counts the replayed requests, Answered those finished (on time or late),
	// Refused those the engine dropped (the reasons in Dropped), Cancelled those withdrawn.
	Requests  int              `json:"requests"`
	Answered  int              `json:"answered"`
	Refused   int              `json:"refused"`
	Dropped   map[string]int   `json:"dropped,omitempty"`
	Cancelled int              `json:"cancelled,omitempty"`
	Classes   []engineClassRow `json:"classes"`
	// SpanUs is from the first arrival to the last finish: the throughputs are over it.
	SpanUs           int64   `json:"span_us"`
	RequestsPerS     float64 `json:"requests_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	PromptTokens     int64   `json:"prompt_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	// Preemptions counts preemption events, where the policy counts them.
	Preemptions *int64 `json:"preemptions,omitempty"`
	// PrefixCache is the engine's prefix-cache use when the profile enables it.
	PrefixCache *enginePrefixCache `json:"prefix_cache,omitempty"`
}

// enginePrefixCache is what the engine's prefix cache saved (llm-engine-2 §2): prompt tokens
// looked up (vllm:prefix_cache_queries) and found cached (vllm:prefix_cache_hits, the
// prefill skipped), and their ratio.
type enginePrefixCache struct {
	QueriedTokens int64   `json:"queried_tokens"`
	CachedTokens  int64   `json:"cached_tokens"`
	HitRate       float64 `json:"hit_rate"`
}

// engineSetting is one engine setting the replay ran with, in vLLM's flag name, and where
// its value came from (the profile's engine block, or the default).
type engineSetting struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// engineClassRow is the token timings of one class of the trace ("all": every request).
type engineClassRow struct {
	Class    string       `json:"class"`
	Answered int          `json:"answered"`
	TTFT     percentilesU `json:"ttft"`
	TPOT     percentilesU `json:"tpot"`
	E2E      percentilesU `json:"e2e"`
}

// percentilesU are the quantiles of a latency in µs, each the smallest sample x with
// F(x) ≥ p (as sim.Summarize: a latency some request really had), and the mean.
type percentilesU struct {
	N      int     `json:"n"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P95Us  float64 `json:"p95_us"`
	P99Us  float64 `json:"p99_us"`
}

func summarizeUs(xs []float64) percentilesU {
	if len(xs) == 0 {
		return percentilesU{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 {
		k := int(math.Ceil(p*float64(len(s)) - 1e-9))
		return s[min(max(k, 1), len(s))-1]
	}
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return percentilesU{N: len(s), MeanUs: math.Round(sum/float64(len(s))*1000) / 1000, P50Us: q(0.50), P90Us: q(0.90), P95Us: q(0.95), P99Us: q(0.99)}
}

// newEngineReport summarizes a replay's point from its request records: TTFT = first token
// − arrival and TPOT = (finish − first token) / (output tokens − 1) of the answered requests
// the engine stamped a first token for, E2E = finish − arrival of every answered request
// (the definitions of sim's LLM metrics).
func newEngineReport(profile string, l formats.LLMProfile, policy string, def bool, trace string, pt *sim.Point) *engineReport {
	rep := &engineReport{Profile: profile, Model: l.Model, GPU: l.GPU, GPUCount: max(l.GPUCount, 1), Backend: l.Backend,
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
		rep.Classes = append(rep.Classes, engineClassRow{Class: k, Answered: len(s.e2e), TTFT: summarizeUs(s.ttft), TPOT: summarizeUs(s.tpot), E2E: summarizeUs(s.e2e)})
	}
	if rep.Answered > 0 && last > first {
		rep.SpanUs = last - first
		secs := float64(rep.SpanUs) / 1e6
		rep.RequestsPerS = math.Round(float64(rep.Answered)/secs*1000) / 1000
		rep.OutputTokensPerS = math.Round(float64(rep.OutputTokens)/secs*1000) / 1000
	}
	return rep
}

// engineSettings are the engine settings the replay's instance runs with, each from the
// profile's engine block, else the older iteration fields, else vLLM V1's default for the GPU
// (formats.LLMEngine; the precedence the LLM engine applies).
func engineSettings(l formats.LLMProfile) []engineSetting {
	e := l.Engine
	if e == nil {
		e = &formats.LLMEngine{}
	}
	it := l.Iteration
	if it == nil {
		it = &formats.LLMIteration{}
	}
	var out []engineSetting
	add := func(name string, engine, iteration int, def string) {
		switch {
		case engine > 0:
			out = append(out, engineSetting{name, strconv.Itoa(engine), "engine"})
		case iteration > 0:
			out = append(out, engineSetting{name, strconv.Itoa(iteration), "iteration"})
		default:
			out = append(out, engineSetting{name, def, "default"})
		}
	}
	tokens, seqs := formats.DefaultBatchedTokens(l.GPU)
	add("max_num_batched_tokens", e.MaxNumBatchedTokens, it.MaxBatchedTokens, strconv.Itoa(tokens))
	add("max_num_seqs", e.MaxNumSeqs, it.MaxSeqs, strconv.Itoa(seqs))
	add("block_size", e.BlockSize, it.BlockTokens, "16")
	chunked := engineSetting{"enable_chunked_prefill", strconv.FormatBool(e.Chunked()), "default"}
	if e.EnableChunkedPrefill != nil {
		chunked.Source = "engine"
	}
	out = append(out, chunked)
	add("max_num_partial_prefills", e.MaxNumPartialPrefills, 0, "1")
	add("max_model_len", e.MaxModelLen, 0, strconv.FormatInt(l.KVCapacityTokens, 10)) // 0 = the KV capacity
	delay := engineSetting{"output_delay_steps", "1", "default"}
	if e.OutputDelaySteps != nil {
		delay = engineSetting{"output_delay_steps", strconv.Itoa(*e.OutputDelaySteps), "engine"}
	}
	out = append(out, delay)
	policy := engineSetting{"scheduling_policy", "fcfs", "default"}
	if e.SchedulingPolicy != "" {
		policy = engineSetting{"scheduling_policy", e.SchedulingPolicy, "engine"}
	}
	out = append(out, policy)
	str := func(name, v, def string) {
		if v == "" {
			out = append(out, engineSetting{name, def, "default"})
		} else {
			out = append(out, engineSetting{name, v, "engine"})
		}
	}
	// The KV rules that decide queueing against preemption under pressure (llm-engine-2 §1).
	str("kv_allocation", e.KVAllocation, formats.KVAllocDefault)
	alloc := e.KVAllocation
	if alloc == "" {
		alloc = formats.KVAllocDefault
	}
	if e.Watermark != nil {
		out = append(out, engineSetting{"watermark", strconv.FormatFloat(*e.Watermark, 'g', -1, 64), "engine"})
	} else {
		out = append(out, engineSetting{"watermark", strconv.FormatFloat(formats.DefaultWatermark(alloc), 'g', -1, 64), "default"})
	}
	str("release", e.Release, formats.ReleaseDefault)
	str("preemption_mode", e.PreemptionMode, formats.PreemptionRecompute)
	if e.SwapSpace > 0 {
		out = append(out, engineSetting{"swap_space", strconv.FormatFloat(e.SwapSpace, 'g', -1, 64), "engine"})
	}
	if e.EnablePrefixCaching {
		out = append(out, engineSetting{"enable_prefix_caching", "true", "engine"})
	}
	out = append(out, engineSetting{"kv_capacity_tokens", strconv.FormatInt(l.KVCapacityTokens, 10), "profile"})
	return out
}

// printEngineReport prints a one-engine replay: what ran (profile entry, policy, engine
// settings), then per class the TTFT, TPOT and E2E percentiles, the throughput and the
// preemptions.
func printEngineReport(app *App, rep *engineReport) {
	fmt.Fprintf(app.Out, "one engine: %s on %d×%s (%s, %s), trace %s\n", rep.Model, rep.GPUCount, rep.GPU, rep.Profile, rep.Backend, rep.Trace)
	how := "--policy"
	if rep.DefaultPolicy {
		how = "default: the engine's own scheduling"
	}
	fmt.Fprintf(app.Out, "policy: %s (%s)\n", rep.Policy, how)
	var settings []string
	for _, s := range rep.Engine {
		v := s.Name + " " + s.Value
		if s.Source == "default" {
			v += "*"
		}
		settings = append(settings, v)
	}
	fmt.Fprintf(app.Out, "engine: %s (* default)\n", strings.Join(settings, ", "))
	line := fmt.Sprintf("requests: %d replayed, %d answered", rep.Requests, rep.Answered)
	if rep.Refused > 0 {
		var why []string
		for _, r := range slices.Sorted(maps.Keys(rep.Dropped)) {
			why = append(why, fmt.Sprintf("%d %s", rep.Dropped[r], r))
		}
		line += fmt.Sprintf(", %d refused (%s)", rep.Refused, strings.Join(why, ", "))
	}
	if rep.Cancelled > 0 {
		line += fmt.Sprintf(", %d cancelled", rep.Cancelled)
	}
	fmt.Fprintln(app.Out, line)
	fmt.Fprintln(app.Out)
	var rows [][]string
	for _, c := range rep.Classes {
		rows = append(rows, []string{c.Class, strconv.Itoa(c.Answered), ms4(c.TTFT), ms4(c.TPOT), ms4(c.E2E),
			msMean(c.TTFT) + "/" + msMean(c.TPOT) + "/" + msMean(c.E2E)})
	}
	app.Table([]string{"class", "answered", "ttft p50/p90/p95/p99 ms", "tpot p50/p90/p95/p99 ms", "e2e p50/p90/p95/p99 ms", "mean ttft/tpot/e2e ms"}, rows)
	fmt.Fprintln(app.Out)
	fmt.Fprintf(app.Out, "throughput: %.3f req/s, %.1f output tokens/s over %.3f s (first arrival to last finish); %d prompt, %d output tokens\n",
		rep.RequestsPerS, rep.OutputTokensPerS, float64(rep.SpanUs)/1e6, rep.PromptTokens, rep.OutputTokens)
	if rep.Preemptions != nil {
		fmt.Fprintf(app.Out, "preemptions: %d\n", *rep.Preemptions)
	}
	if c := rep.PrefixCache; c != nil {
		fmt.Fprintf(app.Out, "prefix cache: hit rate %.1f%%, %d of %d prompt tokens cached (prefill skipped)\n", 100*c.HitRate, c.CachedTokens, c.QueriedTokens)
	}
}

func ms4(p percentilesU) string {
	if p.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f/%.1f/%.1f/%.1f", p.P50Us/1000, p.P90Us/1000, p.P95Us/1000, p.P99Us/1000)
}

func msMean(p percentilesU) string {
	if p.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", p.MeanUs/1000)
}

// writeJSONL writes the values as JSON lines, atomically.
func writeJSONL[T any](path string, vs []T) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range vs {
		if err := enc.Encode(&vs[i]); err != nil {
			return err
		}
	}
	return formats.WriteAtomic(path, buf.Bytes())
}
