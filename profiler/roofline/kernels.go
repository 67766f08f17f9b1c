package roofline

import (
	"math"

	"github.com/plan-dev/plan/profiler/gpus"
)

// LLM engine kernels. A transformer decoder step is a handful of kernel kinds — the
// projection GEMMs, attention, elementwise kernels (RMSNorm, rotary embedding, SiLU-and-mul,
// residual add) and, under tensor parallelism, all-reduces — and each has its own roofline.
// The constants below were fitted to published per-kernel timings measured on an H100 SXM in
// BF16 (CALIBRATION.md, "LLM kernels"; the reference table is
// profiler/llm/testdata/h100-kernels.csv). profiler/llm composes them into engine steps.

// KernelParams are the per-GPU constants of the LLM kernel model.
type KernelParams struct {
	// EtaGEMM and GEMMHalfM: a GEMM over M tokens reaches EtaGEMM·M/(M+GEMMHalfM) of the
	// dense FP16/BF16 peak — tile quantisation and the wave tail cost small M the most
	// (GEMMHalfM 0: EtaGEMM at every M).
	EtaGEMM, GEMMHalfM float64
	// EtaMem is the share of HBM bandwidth a weight-streaming GEMM (small M) and the KV read
	// of decode attention reach.
	EtaMem float64
	// EtaElem is the share of HBM bandwidth of the elementwise kernels.
	EtaElem float64
	// EtaAttn is the share of the dense peak prefill attention (FlashAttention) reaches.
	EtaAttn float64
	// KernelUs is the fixed cost of a GEMM or attention kernel (launch and tail, µs);
	// ElemFloorUs the shortest elementwise kernel.
	KernelUs, ElemFloorUs float64
	// All-reduce: a ring all-reduce of S bytes over n GPUs takes
	// CollectiveUs + 2(n−1)/n·S/(LinkEff·link bandwidth), and at least SmallFloorUs below
	// SmallBytes (NCCL's low-latency protocol, which it picks for small messages, is slower
	// than that line on the measured system).
	LinkEff, CollectiveUs, SmallFloorUs, SmallBytes float64
}

// h100Kernels were fitted to the H100 SXM measurements (CALIBRATION.md, "LLM kernels").
var h100Kernels = KernelParams{
	EtaGEMM: 0.78, GEMMHalfM: 70, EtaMem: 0.85, EtaElem: 0.54, EtaAttn: 0.85,
	KernelUs: 3, ElemFloorUs: 4,
	LinkEff: 0.72, CollectiveUs: 27, SmallFloorUs: 41, SmallBytes: 1 << 20,
}

// kernelParams: the H100 class's hand calibration against the published H100 kernel
// timings (CALIBRATION.md, "LLM kernels"), kept for the H100 and H200.
var kernelParams = map[string]KernelParams{"H100": h100Kernels, "H200": h100Kernels}

// defaultKernels: the GEMM and memory shares of the roofline before any calibration (0.45
// of the FP16 peak at every M, 0.70 of the bandwidth); kernel, elementwise and collective
// constants the H100's. The start of a fit (profiler/kerneltab.FitRoofline), and the
// constants of a GPU with no measured architecture near it.
var defaultKernels = KernelParams{
	EtaGEMM: 0.45, GEMMHalfM: 0, EtaMem: 0.70, EtaElem: 0.54, EtaAttn: 0.45,
	KernelUs: 3, ElemFloorUs: 4,
	LinkEff: 0.72, CollectiveUs: 27, SmallFloorUs: 41, SmallBytes: 1 << 20,
}

// DefaultKernelParams returns the uncalibrated constants.
func DefaultKernelParams() KernelParams { return defaultKernels }

// NearestMeasured names the measured GPU whose fitted constants s borrows, other than
// exclude ("" = none: s keeps the defaults): the catalogue's measured GPU of its
// architecture (gpucat.Spec.NearestMeasured: Ampere, Volta, Turing and Pascal parts take the
// A100's, the oldest measured; Ada the L40S's, Hopper the H100's, Blackwell the B200's).
// With exclude = s.Name it answers which other GPU would stand in for s — the
// leave-one-GPU-out the error band comes from (the excluded GPU's StandIn).
func NearestMeasured(s gpus.Spec, exclude string) string {
	if n := s.NearestMeasured; n != "" && n != exclude {
		return n
	}
	if exclude == "" {
		return ""
	}
	x, err := gpus.Lookup(exclude)
	if err != nil {
		return ""
	}
	return x.StandIn
}

// KernelParamsFor returns the kernel constants of a GPU type: the H100 class's hand
// calibration, the GPU's own fit where it is measured, else its nearest measured
// architecture's fit, else the defaults.
func KernelParamsFor(s gpus.Spec) KernelParams {
	if p, ok := kernelParams[s.Name]; ok {
		return p
	}
	if p, ok := fittedKernels[s.Name]; ok {
		return p
	}
	if p, ok := fittedKernels[s.NearestMeasured]; ok {
		return p
	}
	return defaultKernels
}

// Link is how tensor-parallel GPUs exchange data.
type Link string

// Links: NVLink where the GPU has it, else PCIe (LinkAuto picks).
const (
	LinkAuto   Link = ""
	LinkNVLink Link = "nvlink"
	LinkPCIe   Link = "pcie"
)

// Kernels evaluates kernel times on one GPU type, µs.
type Kernels struct {
	Spec   gpus.Spec
	Params KernelParams
	peak   float64 // FLOPs per µs, dense FP16/BF16
	bw     float64 // bytes per µs
}

// NewKernels returns the kernel model of a GPU.
func NewKernels(s gpus.Spec) Kernels {
	return Kernels{Spec: s, Params: KernelParamsFor(s), peak: s.FP16TFLOPS * 1e6, bw: s.MemBWGBps * 1e3}
}

// GEMMEfficiency is the share of the peak a GEMM over m tokens reaches.
func (k Kernels) GEMMEfficiency(m int) float64 {
	fm := float64(max(m, 1))
	if k.Params.GEMMHalfM <= 0 {
		return k.Params.EtaGEMM
	}
	return k.Params.EtaGEMM * fm / (fm + k.Params.GEMMHalfM)
}

// GEMMUs is a BF16 GEMM of an m×kd activation by a kd×n weight. Its compute time
// 2·m·n·kd/(η(m)·peak) and its memory time (weights plus activations over EtaMem of the
// bandwidth) are combined as (tc³+tm³)^(1/3): near either limit that is the max of the two,
// and where they are equal (decode batches of ~100 tokens) it is 26% above it, as the
// measured kernels are.
func (k Kernels) GEMMUs(m, n, kd int) float64 {
	if m <= 0 || n <= 0 || kd <= 0 {
		return 0
	}
	fm, fn, fk := float64(m), float64(n), float64(kd)
	tc := 2 * fm * fn * fk / (k.GEMMEfficiency(m) * k.peak)
	tm := 2 * (fn*fk + fm*(fn+fk)) / (k.Params.EtaMem * k.bw)
	return math.Cbrt(tc*tc*tc+tm*tm*tm) + k.Params.KernelUs
}

// ElementwiseUs is an elementwise kernel moving bytes (read plus written).
func (k Kernels) ElementwiseUs(bytes float64) float64 {
	if bytes <= 0 {
		return 0
	}
	return max(k.Params.ElemFloorUs, bytes/(k.Params.EtaElem*k.bw))
}

// PrefillAttentionUs is causal attention of one layer over tokens new tokens of one
// sequence whose KV cache already holds ctx tokens: q query heads and kv KV heads of
// headDim on this GPU. FLOPs 4·headDim·q·tokens·(ctx + (tokens+1)/2) (QKᵀ and PV, the
// causal half of the new block); it reads the KV of ctx+tokens tokens.
func (k Kernels) PrefillAttentionUs(tokens, ctx, q, kv, headDim int) float64 {
	if tokens <= 0 {
		return 0
	}
	ft, fc := float64(tokens), float64(ctx)
	flops := 4 * float64(headDim*q) * ft * (fc + (ft+1)/2)
	bytes := 4*float64(kv*headDim)*(fc+ft) + 4*float64(q*headDim)*ft
	return max(flops/(k.Params.EtaAttn*k.peak), bytes/(k.Params.EtaMem*k.bw)) + k.Params.KernelUs
}

// DecodeAttentionUs is one layer of decode attention for batch sequences whose KV caches
// hold ctxTokens tokens together: reading K and V (2·kv·headDim·2 bytes a token) bounds it.
func (k Kernels) DecodeAttentionUs(batch int, ctxTokens float64, q, kv, headDim int) float64 {
	if batch <= 0 {
		return 0
	}
	flops := 4 * float64(headDim*q) * ctxTokens
	bytes := 4*float64(kv*headDim)*ctxTokens + 4*float64(q*headDim*batch)
	return max(flops/(k.Params.EtaAttn*k.peak), bytes/(k.Params.EtaMem*k.bw)) + k.Params.KernelUs
}

// LinkGBps is the per-direction GPU↔GPU bandwidth of a link on this GPU (LinkAuto: NVLink
// where the GPU has it, else PCIe) and the link it resolves to.
func (k Kernels) LinkGBps(l Link) (float64, Link) {
	switch {
	case l == LinkPCIe || (l == LinkAuto && k.Spec.NVLinkGBps <= 0):
		return k.Spec.HostLinkGBps, LinkPCIe
	case k.Spec.NVLinkGBps <= 0:
		return 0, LinkNVLink // asked for NVLink on a GPU without it
	}
	return k.Spec.NVLinkGBps, LinkNVLink
}

// AllReduceUs is a ring all-reduce of bytes over n GPUs on link: 2(n−1)/n of the message
// crosses each GPU's link (nccl-tests' bus bandwidth, llm-deploy-search.md §3) plus a fixed
// latency per collective. 0 for one GPU.
func (k Kernels) AllReduceUs(bytes float64, n int, l Link) float64 {
	if n <= 1 || bytes <= 0 {
		return 0
	}
	gbps, _ := k.LinkGBps(l)
	if gbps <= 0 {
		return math.Inf(1)
	}
	busBW := k.Params.LinkEff * gbps * 1e3 // bytes per µs
	t := k.Params.CollectiveUs + 2*float64(n-1)/float64(n)*bytes/busBW
	if bytes < k.Params.SmallBytes {
		t = max(t, k.Params.SmallFloorUs)
	}
	return t
}
