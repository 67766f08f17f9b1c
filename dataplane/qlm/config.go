// Package qlm is QLM's data plane (Patke et al., "One Queue Is
// All You Need", arXiv 2407.00047): LLM instances emulated as iteration-level continuous
// batching on the dataplane engine (our simulator model), and the queue-management policies that
// drive them — QLM itself (request groups, virtual queues, the RCT estimator, the plan
// generator and the serving operations of §5) and the baselines of §8 (vLLM-FCFS, EDF,
// round-robin and random assignment, ablations).
//
// An instance is one worker of the deployment's single Manual stage, running the LLM engine of
// dataplane/llm (the LLM engine digest §2; QLM's queueing layer is its scheduler policy,
// sched.go, and step.go does QLM's part of each step): each step hands out tokens under
// max_num_batched_tokens and max_num_seqs (running requests first, then waiting ones with
// chunked prefill and head-of-line blocking), and is a dispatched one-hop batch whose
// PathHop.Dur is the step's time from the profile's measured curves (formats.LLMIteration:
// prefill-containing and decode-only, over scheduled tokens); between steps the policy
// admits, finishes (Complete, after the output delay) or preempts sequences. The engine
// settings are the LLM profile's (formats.LLMEngine, vLLM's flag names). Requests of several classes (applications) in
// one iteration travel as one batch per application on the same worker: the first carries
// the iteration's duration, the others take zero time, so they all end together.
package qlm

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// Kind is the plan section this data plane serves.
const Kind = "qlm"

// Parameter keys under which the deployer stores the LLM set-up in App.Params (JSON), so a
// deployment stays a plain value that sim and serve share.
const (
	paramClass = "qlm.class"
	paramSetup = "qlm.setup"
)

// Class is one LLM request class (one application): model and token-length profiles.
type Class struct {
	Name        string               `json:"name"`
	Model       string               `json:"model"`
	Interactive bool                 `json:"interactive,omitempty"`
	In          llmspec.TokenProfile `json:"in"`
	Out         llmspec.TokenProfile `json:"out"`
	// PrefixTokens is the prompt prefix the class's requests share (llmspec.LLMClass).
	PrefixTokens int `json:"prefix_tokens,omitempty"`
}

// Instance is one LLM engine instance: its worker's GPU type and the model loaded at start.
type Instance struct {
	Name  string `json:"name"`
	GPU   string `json:"gpu"`
	Model string `json:"model,omitempty"`
	// GPUCount is the GPUs the instance spans (tensor parallelism; 0 = 1): it runs the
	// profiles measured at that gpu_count, which describe the whole instance.
	GPUCount int `json:"gpu_count,omitempty"`
	// CPUModelBytes is the host memory for warm model copies (0 = 2× the largest model).
	CPUModelBytes int64 `json:"cpu_model_bytes,omitempty"`
	// Role is the instance's part in a disaggregated deployment (qlmsec.QLMInstance.Role:
	// "", prefill or decode; disaggpol.go).
	Role string `json:"role,omitempty"`
}

// Setup is what the policies need besides the engine view: the LLM profiles and instances.
type Setup struct {
	Profiles  []formats.LLMProfile `json:"profiles"`
	Instances []Instance           `json:"instances"`
	// Delta is the request-group cap factor δ (QLM §4; 0 = 4).
	Delta float64 `json:"delta,omitempty"`
	// Confidence is the chance-constraint level Δ (QLM §7, Eq. 12; 0 = 0.95).
	Confidence float64 `json:"confidence,omitempty"`
	// MaxBinaries is the MILP size up to which a re-plan also solves the exact MILP of QLM
	// §7 (linearised [ours], warm-started from the decomposed plan, kept only when better), and
	// SolveMs bounds that solve (0 = 100 ms). 0 = never: the decomposed generator alone,
	// which is deterministic (a step budget, not the wall clock).
	SolveMs float64 `json:"solve_ms,omitempty"`
	// Grouping is how a re-plan forms request groups: "kmeans" re-forms the waiting,
	// not-started requests by Alg. 1 (k-means over model, SLO and token statistics, split
	// above δ·avg_batch); "" keeps the arrival-time buckets [ours].
	Grouping    string `json:"grouping,omitempty"`
	MaxBinaries int    `json:"max_binaries,omitempty"`
	// ReplanMs is the least time between two re-plans (the plan's replan_ms; 0 = 500 ms).
	// QLM §7 re-plans only when the RCT check predicts a violation; under sustained overload
	// that check holds at every arrival, and this bounds how often the generator runs.
	ReplanMs float64 `json:"replan_ms,omitempty"`
	// Routes are the least-cost plan's request-size routes to GPU types (route.go).
	Routes []qlmsec.QLMRoute `json:"routes,omitempty"`
	// KVLinkGBps is the KV link of disaggregated instances in GB/s (the cluster's
	// kv_link_gbps; disaggpol.go).
	KVLinkGBps float64 `json:"kv_link_gbps,omitempty"`
}

// replanGap is the least time between two re-plans (Setup.ReplanMs).
func (s *Setup) replanGap() dataplane.Time {
	if s.ReplanMs > 0 {
		return dataplane.Time(math.Round(s.ReplanMs * 1e3))
	}
	return dataplane.Second / 2
}

// pwl is the engine's piecewise-linear step time (llm.PWL).
type pwl = llm.PWL

// lm is one model's engine on one GPU type (llm.Model: the step-time curves and engine
// settings, read once there) plus what QLM's estimators read of its profile.
type lm struct {
	*llm.Model
	warmUs, coldUs   dataplane.Time
	thetaTokPerSec   float64
	avgBatch         float64
	epsilon          float64
	decodeStepSecond float64
	// knee is the batch size where decode stops being memory-bound: below it a decode step
	// costs about the same whatever the batch (weights are read once per step), so a wider
	// batch is nearly free throughput (see flatBatch).
	knee int
}

func newLM(p *formats.LLMProfile) *lm {
	m := &lm{Model: llm.NewModel(p), warmUs: dataplane.Time(math.Round(p.LoadWarmUs)), coldUs: dataplane.Time(math.Round(p.LoadColdUs + p.LoadWarmUs)),
		thetaTokPerSec: p.ThroughputTokensPerS, avgBatch: p.AvgBatch, epsilon: p.Epsilon, decodeStepSecond: p.DecodeUsPerToken / 1e6}
	if m.epsilon <= 0 {
		m.epsilon = 1
	}
	m.knee = flatBatch(m.Decode, m.MaxSeqs)
	if m.warmUs <= 0 {
		m.warmUs = 1
	}
	if m.coldUs <= 0 {
		m.coldUs = 1
	}
	return m
}

// flatBatch is the knee of a decode curve: the largest batch (at most maxSeqs) whose decode
// step stays within 25% of a single sequence's. Up to there decode is memory-bound (QLM §2:
// the weights are read once per step whatever the batch; Insight #1, QLM §2.4, profiles the
// throughput of a full batch), so widening the batch costs the running sequences little time
// per token and gains throughput almost linearly. The per-context-token cost is left out:
// it is each sequence's own attention work, paid batched or not.
func flatBatch(d pwl, maxSeqs int) int {
	if len(d) < 2 {
		return maxSeqs
	}
	b := 1
	for b < maxSeqs && d.At(b+1) <= 1.25*d.At(1) {
		b++
	}
	return b
}

// IterationUs evaluates a profile's iteration model (llm.IterationUs).
func IterationUs(p *formats.LLMProfile, decode bool, prefillTokens, seqs, ctx int) dataplane.Time {
	return llm.IterationUs(p, decode, prefillTokens, seqs, ctx)
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("qlm: encode: %v", err))
	}
	return string(b)
}

// decodeSetup reads the set-up and classes the deployer stored in a deployment.
func decodeSetup(dep *dataplane.Deployment) (*Setup, []Class, error) {
	if dep.Kind != Kind || len(dep.Apps) == 0 {
		return nil, nil, fmt.Errorf("qlm: deployment of kind %q is not a QLM deployment", dep.Kind)
	}
	var s Setup
	if err := json.Unmarshal([]byte(dep.Apps[0].Params[paramSetup]), &s); err != nil {
		return nil, nil, fmt.Errorf("qlm: apps[0].params.%s: %v", paramSetup, err)
	}
	cls := make([]Class, len(dep.Apps))
	for i, a := range dep.Apps {
		if err := json.Unmarshal([]byte(a.Params[paramClass]), &cls[i]); err != nil {
			return nil, nil, fmt.Errorf("qlm: apps[%d].params.%s: %v", i, paramClass, err)
		}
	}
	if len(s.Instances) != len(dep.Topo.Workers) {
		return nil, nil, fmt.Errorf("qlm: %d instances for %d workers", len(s.Instances), len(dep.Topo.Workers))
	}
	return &s, cls, nil
}

// runs tells whether an instance runs profile pr: the same GPU type and GPU count.
func (in Instance) runs(pr *formats.LLMProfile) bool {
	return pr.GPU == in.GPU && max(pr.GPUCount, 1) == max(in.GPUCount, 1)
}

// modelKey names an engine: a model on a GPU type and count (a tensor-parallel profile is
// another engine than the one-GPU profile of the same model and type).
type modelKey struct {
	model, gpu string
	count      int
}

func keyOf(pr *formats.LLMProfile) modelKey { return modelKey{pr.Model, pr.GPU, max(pr.GPUCount, 1)} }
