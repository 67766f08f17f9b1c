package vllmruns

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/sim"
)

// Replayer replays a trace once, as recorded, through one engine of an LLM profile under
// the engine's own scheduling and returns every request's record: what `plan simulate
// --llm` runs (the CLI hands down internal/run/replay.Records, which sits above benches).
type Replayer func(ctx context.Context, prof formats.LLMProfile, name string, t *formats.Trace) ([]sim.RequestRecord, error)

// chatTemplateTokens is what the chat template and tokenization add to each prompt beyond
// system prompt + question: the runs' README measured the real tokenized prompts 25–36
// tokens longer; the middle of that range. A fact of the workload, not fitted.
const chatTemplateTokens = 30

// Profile is the analytic profile of run's deployment as `plan profile --llm NAME --gpu G
// --tp N [--quantization fp8]` writes it with the run's engine settings (vLLM's flags as
// the run was started: the token and sequence budgets, block size 16, chunked prefill and
// prefix caching on, max_model_len 4096, its memory utilization, vLLM 0.15), with the KV
// capacity vLLM allocated (its GPU blocks × 16) and the CPU offload tier its connector had;
// plan's own KV estimate under those settings is returned beside it. corr, when not nil,
// are candidate step-model corrections (the fit's).
func Profile(run Run, corr *llm.Corrections) (formats.LLMProfile, int64, error) {
	on := true
	settings := &formats.LLMEngine{MaxNumSeqs: run.MaxNumSeqs, MaxNumBatchedTokens: run.MaxNumBatchedTokens, BlockSize: blockTokens,
		EnableChunkedPrefill: &on, EnablePrefixCaching: &on, MaxModelLen: maxModelLen, GPUMemoryUtilization: run.GPUMemUtil,
		VLLMVersion: vllmVersion}
	p, err := llm.EstimateWith(run.model, run.GPU, run.TP, llm.Variant{Engine: settings, Corrections: corr})
	if err != nil {
		return formats.LLMProfile{}, 0, fmt.Errorf("run %s: %s: %v", run.ID, run.Label(), err)
	}
	est := p.KVCapacityTokens
	p.KVCapacityTokens = run.KVGPUBlocks * blockTokens
	if run.KVCPUBlocks > 0 {
		p.Engine.KVOffloadBytes = run.KVCPUBlocks * blockTokens * p.KVBytesPerToken
	}
	return *p, est, nil
}

// The runs' engine settings the file does not vary (its README): vLLM's 16-token blocks
// and a 4,096-token max_model_len.
const (
	blockTokens = 16
	maxModelLen = 4096
	// vllmVersion is the release every bundled run served with (the runs' README).
	vllmVersion = "0.15"
)

// Trace is the run's workload as inference-perf's shared_prefix generator drove it: its
// stages back to back, arrivals at constant intervals within each (load type "constant"),
// generating exactly its output tokens (ignore_eos). The prompts are the run's
// (promptCycle): with users_per_system_prompt given, inference-perf's pre-drawn prompts
// cycled; without it, one of the system prompts chosen uniformly (seeded) plus a fresh
// question.
func Trace(run Run, seed uint64) *formats.Trace {
	rng := rand.New(rand.NewPCG(seed, 0x76_6c6c_6d)) // "vllm"
	t := &formats.Trace{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: "Trace"}}
	t.Metadata.Name = "run-" + run.ID
	start := 0.0
	prompt := run.SystemPromptTokens + run.QuestionTokens + chatTemplateTokens
	requests := 0
	for _, s := range run.Stages {
		requests += int(s.RateRPS*s.DurationS + 0.5)
	}
	cycle := promptCycle(run, prompt, requests, rng)
	if cycle != nil {
		t.HashBlockTokens = blockTokens
	}
	for _, s := range run.Stages {
		n := int(s.RateRPS*s.DurationS + 0.5)
		for i := range n {
			at := start + float64(i)/s.RateRPS
			r := formats.TraceRequest{TimeUs: int64(at * 1e6), InputTokens: prompt, OutputTokens: run.OutputTokens}
			switch {
			case cycle != nil:
				r.HashIDs = &cycle[len(t.Requests)%len(cycle)]
			case run.SystemPromptTokens > 0:
				r.PrefixGroup = formats.PrefixGroup(fmt.Sprint(rng.IntN(run.SystemPrompts)))
				r.PrefixTokens = run.SystemPromptTokens
			}
			t.Requests = append(t.Requests, r)
		}
		start += s.DurationS
	}
	return t
}

// promptCycle is the prompt list inference-perf's shared_prefix generator draws once and
// its requests cycle through (request i sends prompt i mod the list's length): for each
// system prompt, users_per_system_prompt questions, each prompt the system prompt then its
// question, the list shuffled once (seeded). A prompt is given as the hash ids of its
// 16-token blocks: the blocks wholly inside its system prompt are its group's, the rest its
// own, so a repeat of a prompt finds every full block cached, as vLLM's prefix cache does.
// A list longer than the run's requests is never sent whole: only its first requests
// prompts are drawn, without building the rest (a partial Fisher–Yates shuffle over a
// sparse map), so its length costs no memory. Nil when the run does not give
// users_per_system_prompt.
func promptCycle(run Run, promptTokens, requests int, rng *rand.Rand) [][]int64 {
	m := run.UsersPerSystemPrompt
	if m <= 0 {
		return nil
	}
	blocks := (promptTokens + blockTokens - 1) / blockTokens
	shared := min(run.SystemPromptTokens/blockTokens, blocks)
	n := run.SystemPrompts * m
	// prompt k (system prompt k / m): its system prompt's whole blocks, then its own.
	prompt := func(k int) []int64 {
		ids := make([]int64, blocks)
		for b := range shared {
			ids[b] = int64(k/m*shared + b)
		}
		own := int64(n*shared) + int64(k)*int64(blocks-shared)
		for b := shared; b < blocks; b++ {
			ids[b] = own + int64(b-shared)
		}
		return ids
	}
	if n <= requests {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		cycle := make([][]int64, n)
		for i, k := range order {
			cycle[i] = prompt(k)
		}
		return cycle
	}
	swapped := map[int]int{}
	at := func(i int) int {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	cycle := make([][]int64, requests)
	for i := range requests {
		j := i + rng.IntN(n-i)
		vi, vj := at(i), at(j)
		swapped[i], swapped[j] = vj, vi
		cycle[i] = prompt(vj)
	}
	return cycle
}

// Result is one run replayed: its measurements and plan's prediction of each, per stage and
// over the run, with the KV capacity the replay used and plan's own estimate.
type Result struct {
	Run        string `json:"run"`
	Deployment string `json:"deployment"`
	// Group is the run's group for comparison with published simulators' accuracy
	// (GroupOf): H100 at TP 1, H100 at TP ≥ 2, A100 and L40S, else its GPU.
	Group  string        `json:"group"`
	MoE    bool          `json:"moe,omitempty"`
	Stages []StageResult `json:"stages"`
	All    StageResult   `json:"all"`
	// KVTokens is the KV capacity replayed (the run's); KVEstimateTokens plan's estimate
	// under the run's engine settings, KVEstimateErrorPct its signed error.
	KVTokens           int64   `json:"kv_tokens"`
	KVEstimateTokens   int64   `json:"kv_estimate_tokens"`
	KVEstimateErrorPct float64 `json:"kv_estimate_error_pct"`
	// Preempted counts replayed requests that were preempted at least once.
	Preempted int `json:"preempted,omitempty"`
	// UsersPerSystemPrompt is the prompt list the replay cycled (Run.UsersPerSystemPrompt;
	// 0: every question fresh).
	UsersPerSystemPrompt int `json:"users_per_system_prompt,omitempty"`
	// Utilisation is how close the replay ran to the deployment's saturation
	// (llm.Utilisation): the regime the expected-error bands key on.
	Utilisation float64 `json:"utilisation"`
}

// StageResult is one stage (or, in Result.All, the whole run): measured, predicted, and the
// signed error of each figure in percent of the measurement.
type StageResult struct {
	Stage     string   `json:"stage"`
	RateRPS   float64  `json:"rate_rps,omitempty"`
	Requests  int      `json:"requests"`
	Measured  Measured `json:"measured_ms"`
	Predicted Measured `json:"predicted_ms"`
	ErrorPct  Measured `json:"error_pct"`
}

// Replay replays run through replay and scores each stage and the whole run; corr as
// Profile's.
func Replay(ctx context.Context, run Run, replay Replayer, seed uint64, corr *llm.Corrections) (Result, error) {
	prof, est, err := Profile(run, corr)
	if err != nil {
		return Result{}, err
	}
	tr := Trace(run, seed)
	recs, err := replay(ctx, prof, tr.Metadata.Name, tr)
	if err != nil {
		return Result{}, fmt.Errorf("run %s: %v", run.ID, err)
	}
	res := Result{Run: run.ID, Deployment: run.Label(), Group: GroupOf(run), MoE: run.MoE(), KVTokens: prof.KVCapacityTokens, KVEstimateTokens: est,
		UsersPerSystemPrompt: run.UsersPerSystemPrompt}
	res.KVEstimateErrorPct = pct(float64(est), float64(prof.KVCapacityTokens))
	// Records by stage of arrival.
	bounds := make([]int64, len(run.Stages))
	end := 0.0
	for i, s := range run.Stages {
		end += s.DurationS
		bounds[i] = int64(end * 1e6)
	}
	by := make([][]sim.RequestRecord, len(run.Stages))
	var inEngineUs float64
	first, last := int64(math.MaxInt64), int64(0)
	for _, r := range recs {
		inEngineUs += float64(r.DoneUs - r.ArrivalUs)
		first, last = min(first, r.ArrivalUs), max(last, r.DoneUs)
		if r.Preemptions > 0 {
			res.Preempted++
		}
		i, _ := slices.BinarySearch(bounds, r.ArrivalUs+1)
		by[min(i, len(by)-1)] = append(by[min(i, len(by)-1)], r)
	}
	if last > first {
		ctxTokens := float64(run.SystemPromptTokens+run.QuestionTokens+chatTemplateTokens) + float64(run.OutputTokens)/2
		res.Utilisation = round2(llm.Utilisation(inEngineUs/float64(last-first), run.MaxNumSeqs, prof.KVCapacityTokens, ctxTokens))
	}
	for i, s := range run.Stages {
		sr, err := score(fmt.Sprint(i), s.RateRPS, s.Measured, by[i], run.OutputTokens)
		if err != nil {
			return res, fmt.Errorf("run %s: stage %d: %v", run.ID, i, err)
		}
		res.Stages = append(res.Stages, sr)
	}
	if res.All, err = score("all", 0, run.All, recs, run.OutputTokens); err != nil {
		return res, fmt.Errorf("run %s: %v", run.ID, err)
	}
	return res, nil
}

// score turns a stage's records into its predicted figures beside the measured ones. A
// request the replay refused or left unanswered is an error: the real server answered all.
func score(stage string, rate float64, meas Measured, recs []sim.RequestRecord, out int) (StageResult, error) {
	sr := StageResult{Stage: stage, RateRPS: rate, Requests: len(recs), Measured: meas}
	if len(recs) == 0 {
		return sr, fmt.Errorf("no requests replayed")
	}
	ttft := make([]float64, 0, len(recs))
	e2e := make([]float64, 0, len(recs))
	for _, r := range recs {
		if r.FirstTokenUs == nil || (r.Outcome != dataplane.Completed.String() && r.Outcome != dataplane.Late.String()) {
			return sr, fmt.Errorf("request %d: %s %s: the real server answered every request", r.ID, r.Outcome, r.Reason)
		}
		ttft = append(ttft, float64(*r.FirstTokenUs-r.ArrivalUs)/1e3)
		e2e = append(e2e, float64(r.DoneUs-r.ArrivalUs)/1e3)
	}
	t, e := quantile.Sorted(ttft), quantile.Sorted(e2e)
	p := Measured{
		E2EMean: quantile.Mean(e2e), E2EP90: quantile.Percentile(e, 90), E2EP99: quantile.Percentile(e, 99),
		TTFTMean: quantile.Mean(ttft), TTFTP90: quantile.Percentile(t, 90), TTFTP99: quantile.Percentile(t, 99),
	}
	p.ITLMean = (p.E2EMean - p.TTFTMean) / float64(out-1)
	sr.Predicted = p
	sr.ErrorPct = Measured{
		E2EMean: pct(p.E2EMean, meas.E2EMean), E2EP90: pct(p.E2EP90, meas.E2EP90), E2EP99: pct(p.E2EP99, meas.E2EP99),
		TTFTMean: pct(p.TTFTMean, meas.TTFTMean), TTFTP90: pct(p.TTFTP90, meas.TTFTP90), TTFTP99: pct(p.TTFTP99, meas.TTFTP99),
		ITLMean: pct(p.ITLMean, meas.ITLMean),
	}
	return sr, nil
}

// pct is the signed error of got against want in percent, to 0.01.
func pct(got, want float64) float64 {
	if want == 0 {
		return 0
	}
	return round2((got - want) / want * 100)
}
