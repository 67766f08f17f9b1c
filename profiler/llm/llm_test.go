package llm

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/kerneltab"
	"github.com/plan-dev/plan/profiler/roofline"
)

func TestKVBytesPerToken(t *testing.T) {
	// K and V in fp16 from the model configs: 32 layers × 8 KV heads × 128, 40 layers × 5120
	// (MHA), 80 layers × 8 KV heads × 128.
	want := map[string]int64{"mistral-7b": 128 << 10, "vicuna-13b": 800 << 10, "llama-2-70b": 320 << 10}
	for name, w := range want {
		m, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.KVBytesPerToken(); got != w {
			t.Errorf("%s: %d, want %d", name, got, w)
		}
	}
}

// TestEstimateMatchesReference: the tensor-parallel degree is the smallest whose GPUs hold
// the weights and two 4K contexts; the KV capacity is vLLM's budget (KVBudget) in whole
// 16-token blocks, and the terms account for it — utilisation × memory less the weights,
// the activation peak, the workspaces and the graph pool is the KV memory, and the cache
// fits in it; a one-sequence decode step streams the weights: between their read at the
// full HBM bandwidth (plus the host overhead) and 1.6× that — 1.8× on a GPU without
// measured tables, which takes its stand-in's fitted bandwidth share (the A10 the A100's,
// 0.60).
func TestEstimateMatchesReference(t *testing.T) {
	tests := []struct {
		model, gpu string
		tp         int
	}{
		{"mistral-7b", "A100", 1},
		{"mistral-7b", "A10", 1},
		{"vicuna-13b", "A100", 1},
		{"vicuna-13b", "A10", 2},
		// 138 GB of weights over two 80 GB A100s leave 3.7 GB a GPU for KV: vLLM runs it.
		{"llama-2-70b", "A100", 2},
		{"llama-3.1-8b", "H100", 1},
	}
	for _, tc := range tests {
		p, err := Estimate(tc.model, tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		if p.GPUCount != tc.tp {
			t.Errorf("%s on %s: %d GPUs, want %d", tc.model, tc.gpu, p.GPUCount, tc.tp)
		}
		m, _ := Lookup(tc.model)
		g, _ := gpus.Lookup(tc.gpu)
		k := KVBudget(m, g, p.GPUCount, false)
		if p.KVCapacityTokens != k.Tokens || k.Tokens%16 != 0 || k.Tokens < minKVTokens {
			t.Errorf("%s on %s: capacity %d, budget %+v", tc.model, tc.gpu, p.KVCapacityTokens, k)
		}
		left := int64(0.9*float64(g.MemoryBytes)) - m.WeightBytes()/int64(p.GPUCount) - m.ropeTableBytes() - k.ActivationPeak - k.NonTorch - k.CUDAGraphs
		if k.KVBytes != left || k.Tokens*k.BytesPerTokenPerGPU > left || (k.Blocks+1)*16*k.BytesPerTokenPerGPU <= left {
			t.Errorf("%s on %s: KV %d bytes, %d tokens × %d B: want the whole blocks of %d bytes", tc.model, tc.gpu, k.KVBytes, k.Tokens, k.BytesPerTokenPerGPU, left)
		}
		// Streaming the weights, plus the host overhead and the step's all-reduces.
		stream := float64(m.WeightBytes())/float64(p.GPUCount)/(g.MemBWGBps*1e3) + mustDeployment(m, g, p.GPUCount).overheadUs() + mustDeployment(m, g, p.GPUCount).Decode(1, 0).AllReduce
		hi := 1.6
		if !kerneltab.Has(tc.gpu) {
			hi = 1.8
		}
		if lo := StepUs(m, g, p.GPUCount, 1, 0); lo < stream || lo > hi*stream {
			t.Errorf("%s on %s: one-sequence step %.1f ms, weight streaming %.1f ms: want ×1–%.1f", tc.model, tc.gpu, lo/1000, stream/1000, hi)
		}
		if p.ThroughputTokensPerS <= 0 || p.AvgBatch < 1 || p.PrefillUsPerToken <= 0 {
			t.Errorf("%s on %s: incomplete %+v", tc.model, tc.gpu, p)
		}
	}
}

func TestEstimateAllAndImport(t *testing.T) {
	ps, skipped, err := EstimateAll(Names(), DefaultGPUs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(Names()) * len(DefaultGPUs); len(ps)+len(skipped) != want || len(ps) < want/2 {
		t.Fatalf("%d profiles (%d skipped), want %d in all", len(ps), len(skipped), want)
	}
	for _, s := range skipped {
		// Only what eight GPUs cannot hold: Llama-4-Maverick's 400B on A10s, say.
		if m, _ := Lookup(s.Model); !strings.Contains(s.Reason.Error(), "does not fit 8") || m.ParamsB < 20 {
			t.Errorf("skipped %s on %s: %v", s.Model, s.GPU, s.Reason)
		}
	}
	doc := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile}, LLMs: ps}
	path := filepath.Join(t.TempDir(), "llm.json")
	if err := formats.WriteFile(path, doc, intree.Sections()); err != nil {
		t.Fatal(err)
	}
	got, err := Import(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ps) || got[0].Backend != "import" {
		t.Fatalf("import: %d profiles, backend %q", len(got), got[0].Backend)
	}
	empty := filepath.Join(t.TempDir(), "empty.json")
	os.WriteFile(empty, []byte(`{"apiVersion":"plan/v1","kind":"Profile","metadata":{},"models":[]}`), 0o644)
	if _, err := Import(empty); err == nil {
		t.Error("empty profile: want an error")
	}
	if _, err := Estimate("gpt-5", "A100"); err == nil || !strings.Contains(err.Error(), "mistral-7b") {
		t.Errorf("unknown model: %v", err)
	}
}

// TestEstimateIteration: the roofline profile carries the piecewise-linear iteration model
// the emulated instances run: it validates, it agrees with StepUs at its
// breakpoints at the typical context, and a decode iteration at the average batch equals the
// profile's DecodeUsPerToken within the interpolation between breakpoints (10 %).
func TestEstimateIteration(t *testing.T) {
	for _, mg := range [][2]string{{"mistral-7b", "A100"}, {"mistral-7b", "A10"}, {"vicuna-13b", "A100"}, {"llama-2-70b", "A100"}} {
		t.Run(mg[0]+"/"+mg[1], func(t *testing.T) {
			p, err := Estimate(mg[0], mg[1])
			if err != nil {
				t.Fatal(err)
			}
			it := p.Iteration
			if it == nil || len(it.Prefill) < 2 || len(it.Decode) < 2 || it.DecodeUsPerContextToken <= 0 {
				t.Fatalf("iteration %+v", it)
			}
			doc := formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: "Profile"}, LLMs: []formats.LLMProfile{*p}}
			if errs := doc.Validate(); errs != nil {
				t.Fatalf("validate: %v", errs)
			}
			m, _ := Lookup(mg[0])
			g, _ := gpus.Lookup(mg[1])
			prev := 0.0
			for _, pt := range it.Decode {
				ctx := float64(pt.Tokens) * avgReqTokens / 2
				// Exact, except where the breakpoint was lifted to the one before it to keep
				// the curve monotone (measured decode attention is not exactly linear in the
				// context, and GEMMs of 1 and 2 rows differ by noise): ≤ 1% above the larger.
				got, want := pt.Us+it.DecodeUsPerContextToken*ctx, StepUs(m, g, p.GPUCount, pt.Tokens, ctx)
				lifted := prev + it.DecodeUsPerContextToken*ctx
				if got < want-0.05 || got > max(want, lifted)*1.01+0.05 {
					t.Errorf("decode at %d sequences, typical context: %g µs, StepUs %g", pt.Tokens, got, want)
				}
				prev = pt.Us
			}
			b := int(p.AvgBatch)
			ctx := p.AvgBatch * avgReqTokens / 2
			got := formats.PWLAt(it.Decode, b) + it.DecodeUsPerContextToken*ctx
			if r := got / p.DecodeUsPerToken; r < 0.9 || r > 1.1 {
				t.Errorf("decode iteration at the average batch %d: %.0f µs, profile step %.0f µs", b, got, p.DecodeUsPerToken)
			}
			for i := 1; i < len(it.Prefill); i++ {
				if it.Prefill[i].Us < it.Prefill[i-1].Us {
					t.Errorf("prefill not monotone: %v", it.Prefill)
				}
			}
		})
	}
}

// TestMeasuredH100 holds the H100 estimates to what a real H100 measured: bf16 decoders of
// the models' shapes, prefill of one sequence and decode steps over a KV cache, each in a
// CUDA graph (scripts/gpu/measure_torch.py; testdata/gpu/h100-torch.json). The bounds are
// the iteration model's (the curve the emulated instances run): prefill from 512 tokens
// within 15% (it was 25–34% slow with the unmeasured compute share), decode steps at 512
// tokens of context within 20%: the measured steps read weights and KV at 0.67 (Mistral's
// grouped KV heads) to 0.79 (Vicuna's full heads) of the HBM peak, and the roofline's single
// 0.70 sits between (Vicuna at batch 64 is 15% slow). A warm start (weights from pinned host
// memory) within 15% of the measured host link.
func TestMeasuredH100(t *testing.T) {
	var m struct {
		GPU      string `json:"gpu"`
		HostLink struct {
			Bytes        int64   `json:"bytes"`
			H2DPinnedGBs float64 `json:"h2d_pinned_gbps"`
		} `json:"host_link"`
		LLM []struct {
			Model   string `json:"model"`
			Prefill []struct {
				Tokens int     `json:"tokens"`
				Ms     float64 `json:"ms"`
			} `json:"prefill"`
			Decode []struct {
				Batch, Context int
				Ms             float64 `json:"ms"`
			} `json:"decode"`
		} `json:"llm"`
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "gpu", "h100-torch.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.GPU, "H100") || len(m.LLM) == 0 {
		t.Fatalf("fixture: gpu %q, %d LLMs", m.GPU, len(m.LLM))
	}
	for _, ml := range m.LLM {
		// The fixture is plain PyTorch: no scheduler, no torch.compile fusion of the
		// elementwise kernels. The engine model nearest it is an uncompiled one (V0), whose
		// elementwise kernels run as timed (the compiled V1 share is fitted on real vLLM runs,
		// bench/vllmruns).
		mod, err := Lookup(ml.Model)
		if err != nil {
			t.Fatal(err)
		}
		p, err := EstimateWith(mod, "H100", 0, Variant{Engine: &formats.LLMEngine{VLLMVersion: "0.7"}})
		if err != nil {
			t.Fatal(err)
		}
		// A warm start copies the weights from pinned host memory (measured 54.6 GB/s).
		measured := float64(p.WeightBytes) / (m.HostLink.H2DPinnedGBs * 1e3)
		if ratio := p.LoadWarmUs / measured; math.Abs(ratio-1) > 0.15 {
			t.Errorf("%s warm load: estimate %.0f µs, at the measured host link %.0f µs (×%.2f)", ml.Model, p.LoadWarmUs, measured, ratio)
		}
		it := p.Iteration
		for _, r := range ml.Prefill {
			if r.Tokens < 512 {
				continue
			}
			est := formats.PWLAt(it.Prefill, r.Tokens) / 1000
			if ratio := est / r.Ms; math.Abs(ratio-1) > 0.15 {
				t.Errorf("%s prefill %d tokens: estimate %.1f ms, measured %.1f (×%.2f)", ml.Model, r.Tokens, est, r.Ms, ratio)
			}
		}
		for _, r := range ml.Decode {
			if r.Context != 512 {
				continue
			}
			est := (formats.PWLAt(it.Decode, r.Batch) + it.DecodeUsPerContextToken*float64(r.Batch*r.Context)) / 1000
			if ratio := est / r.Ms; math.Abs(ratio-1) > 0.20 {
				t.Errorf("%s decode batch %d: estimate %.2f ms, measured %.2f (×%.2f)", ml.Model, r.Batch, est, r.Ms, ratio)
			}
		}
	}
}

// TestEstimateEngineDefaults: the roofline estimator writes the engine block with vLLM V1's
// defaults for the GPU (8192 tokens and 1024 sequences on H100, 2048 and 256 on A100 and
// L4; 16-token blocks) instead of the old iteration max_batched_tokens 4096,
// and the profile validates.
func TestEstimateEngineDefaults(t *testing.T) {
	for _, tc := range []struct {
		gpu          string
		tokens, seqs int
	}{
		{"A100", 2048, 256},
		{"L4", 2048, 256},
		{"H100", 8192, 1024},
	} {
		t.Run(tc.gpu, func(t *testing.T) {
			p, err := Estimate("mistral-7b", tc.gpu)
			if err != nil {
				t.Fatal(err)
			}
			e := p.Engine
			if e == nil || e.MaxNumBatchedTokens != tc.tokens || e.MaxNumSeqs != tc.seqs || e.BlockSize != 16 {
				t.Fatalf("engine %+v, want %d tokens, %d sequences, 16-token blocks", e, tc.tokens, tc.seqs)
			}
			if it := p.Iteration; it == nil || it.MaxBatchedTokens != 0 || it.MaxSeqs != 0 || it.BlockTokens != 0 {
				t.Errorf("iteration %+v: want the budgets in the engine block only", it)
			}
			doc := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile}, LLMs: []formats.LLMProfile{*p}}
			if err := doc.Validate(); len(err) > 0 {
				t.Errorf("profile does not validate: %v", err)
			}
		})
	}
}

// TestKVCacheFP8: an FP8 KV cache (vLLM's --kv-cache-dtype fp8) halves a token's KV bytes,
// about doubles the capacity in the same memory, reads the measured FP8-cache decode
// attention (no slower than BF16's on the H100), lands in the engine block for the exports,
// and an unknown dtype is refused naming the value.
func TestKVCacheFP8(t *testing.T) {
	bf, err := EstimateKV("llama-3.1-8b", "H100", 1, roofline.LinkAuto, "")
	if err != nil {
		t.Fatal(err)
	}
	f8, err := EstimateKV("llama-3.1-8b", "H100", 1, roofline.LinkAuto, "fp8")
	if err != nil {
		t.Fatal(err)
	}
	if f8.KVBytesPerToken*2 != bf.KVBytesPerToken {
		t.Errorf("KV bytes a token: fp8 %d, bf16 %d", f8.KVBytesPerToken, bf.KVBytesPerToken)
	}
	if r := float64(f8.KVCapacityTokens) / float64(bf.KVCapacityTokens); r < 1.99 || r > 2.01 {
		t.Errorf("capacity fp8/bf16 ×%.3f, want 2", r)
	}
	if f8.Engine == nil || f8.Engine.KVCacheDtype != "fp8" || bf.Engine.KVCacheDtype != "" {
		t.Errorf("engine blocks: fp8 %+v, bf16 %+v", f8.Engine, bf.Engine)
	}
	m, _ := Lookup("llama-3.1-8b")
	h100, _ := gpus.Lookup("H100")
	d, _ := NewDeployment(m, h100, 1, roofline.LinkAuto)
	a16, a8 := d.Decode(64, 4096).Attention, d.WithKVCache(true).Decode(64, 4096).Attention
	if a8 > a16 {
		t.Errorf("decode attention, 64 × 4096 tokens: fp8 %.0f µs, bf16 %.0f µs", a8, a16)
	}
	if _, err := EstimateKV("llama-3.1-8b", "H100", 1, roofline.LinkAuto, "int4"); err == nil || !strings.Contains(err.Error(), `"int4"`) {
		t.Errorf("kv dtype int4: %v", err)
	}
}

// TestEstimateMem: a cluster's memory_bytes bounds what fits — 1000 bytes hold nothing, and
// 40 GiB GPUs hold less KV than the 80 GiB datasheet part.
func TestEstimateMem(t *testing.T) {
	if _, err := EstimateMem("llama-3.1-8b", "H100", 1, roofline.LinkAuto, "", 1000); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("1000-byte H100: %v, want does not fit", err)
	}
	small, err := EstimateMem("llama-3.1-8b", "A100", 1, roofline.LinkAuto, "", 40<<30)
	if err != nil {
		t.Fatal(err)
	}
	big, _ := EstimateMem("llama-3.1-8b", "A100", 1, roofline.LinkAuto, "", 0)
	if small.KVCapacityTokens >= big.KVCapacityTokens/2 {
		t.Errorf("A100 40 GiB: %d KV tokens, 80 GiB %d", small.KVCapacityTokens, big.KVCapacityTokens)
	}
}
