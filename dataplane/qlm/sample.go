package qlm

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// sampleProfile is a synthetic piecewise-linear LLM profile for Sample: a model of paramsB
// billion parameters on gpu, with iteration times scaled by speed (larger = slower GPU).
func sampleProfile(model, gpu string, paramsB, speed float64, kvTokens int64) formats.LLMProfile {
	w := int64(paramsB * 2e9)
	pre := []formats.PWLPoint{{Tokens: 1, Us: 8000 * speed}, {Tokens: 100, Us: 9000 * speed}, {Tokens: 4096, Us: 300000 * speed * paramsB / 7}}
	dec := []formats.PWLPoint{{Tokens: 1, Us: 9000 * speed}, {Tokens: 64, Us: 11000 * speed}, {Tokens: 256, Us: 24000 * speed}}
	return formats.LLMProfile{Model: model, GPU: gpu, GPUCount: 1, Backend: "import", ParamsB: paramsB, WeightBytes: w,
		PrefillBaseUs: 8000 * speed, PrefillUsPerToken: 70 * speed, DecodeUsPerToken: 11000 * speed,
		ThroughputTokensPerS: 4000 / speed, KVBytesPerToken: 131072, KVCapacityTokens: kvTokens, AvgBatch: 32, Epsilon: 1,
		LoadColdUs: 4e5, LoadWarmUs: 1e5, HostLinkGBps: 25,
		Iteration: &formats.LLMIteration{Prefill: pre, Decode: dec, DecodeUsPerContextToken: 0.05, MaxBatchedTokens: 4096,
			MaxSeqs: 64, BlockTokens: 16, PreemptMode: "auto", CPUSwapBytes: 2e9}}
}

// Sample builds a small random QLM deployment from r for the conformance harness
// (internal/registry/conformance): one or two models, A100 instances that host both and possibly an
// A10 that hosts only the small one (heterogeneous eligibility), interactive and batch
// classes with short token lengths and SLOs of a few seconds, so overload, preemption,
// model swaps and re-plans all occur within a two-second arrival window.
func Sample(r *rand.Rand) *dataplane.Deployment {
	kv := int64(2000 + r.IntN(6000)) // small KV caches: preemption happens
	profs := []formats.LLMProfile{
		sampleProfile("small", "A100", 7, 1, kv),
		sampleProfile("small", "A10", 7, 2.5, kv/3),
		sampleProfile("large", "A100", 13, 1.6, kv/2),
	}
	models := []string{"small", "large"}[:1+r.IntN(2)]
	var setup Setup
	setup.Profiles = profs
	n := 1 + r.IntN(3)
	for i := 0; i < n; i++ {
		in := Instance{Name: fmt.Sprintf("i%d", i), GPU: "A100", Model: models[i%len(models)]}
		if i > 0 && r.IntN(3) == 0 {
			in.GPU, in.Model = "A10", "small"
		}
		setup.Instances = append(setup.Instances, in)
	}
	var cls []llmspec.LLMClass
	for k := 0; k < 1+r.IntN(3); k++ {
		model := models[k%len(models)]
		slo := time.Duration(500+r.IntN(5000)) * time.Millisecond
		if k == 2 {
			slo = time.Duration(10+r.IntN(20)) * time.Second // a batch class
		}
		in := 20 + float64(r.IntN(200))
		out := 5 + float64(r.IntN(60))
		cls = append(cls, llmspec.LLMClass{Name: fmt.Sprintf("c%d", k), Model: model, SLO: formats.Duration(slo), Interactive: k < 2,
			RateRPS:      float64(2 + r.IntN(15)),
			InputTokens:  llmspec.TokenProfile{Mean: in, Std: in / 2, Max: int(4 * in)},
			OutputTokens: llmspec.TokenProfile{Mean: out, Std: out / 2, Max: int(4 * out)}})
	}
	d, err := Build(cls, setup)
	if err != nil {
		panic(fmt.Sprintf("qlm.Sample built an invalid deployment: %v", err)) // a bug in Sample
	}
	return d
}
