package kerneltab

import (
	"fmt"

	"github.com/plan-dev/plan/profiler/gpus"
)

// A GPU without FP8 tensor cores (the A100: Ampere) runs an FP8 checkpoint through vLLM's
// weight-only kernels: FP8 Marlin for linear layers and the Marlin fused-MoE for experts
// (vLLM's FP8 documentation: "FP8 models will run on compute capability >= 7.5 (Turing) as
// weight-only W8A16, utilizing FP8 Marlin"). They read one byte a weight and dequantize in
// registers to BF16 tensor-core math, so a layer reads half the BF16 weight bytes and does
// the BF16 FLOPs: up to 2× faster where decode is bound by the weight read, the BF16 time
// where a large prefill is bound by the math. No table measures these kernels, so their
// time is the BF16 measurement of the same shape times the ratio of the two floors.

// weightOnly reports whether g runs dtype dt weight-only: FP8 weights on a GPU without FP8
// tensor cores.
func weightOnly(g gpus.Spec, dt DType) bool {
	return (dt == FP8 || dt == FP8Block) && g.FP8TFLOPS == 0
}

// weightOnlyRatio is the floor of a weight-only layer in dt over the BF16 layer's: the
// weights' bytes at the memory bandwidth and the FLOPs at the FP16 peak (activations stay
// BF16), each plus the launch time that no size removes.
func weightOnlyRatio(g gpus.Spec, launchUs, flops, weights, activationBytes float64, dt DType) float64 {
	bw := g.MemBWGBps * 1e3 // bytes per µs
	at := func(bytes float64) float64 {
		return max(flops/(g.FP16TFLOPS*1e6), bytes/bw) + launchUs
	}
	return at(weights*weightBytes(dt)+activationBytes) / at(weights*weightBytes(BF16)+activationBytes)
}

// gemmWeightOnlyUs is GEMMUs for a dtype g runs weight-only.
func (t *Tables) gemmWeightOnlyUs(g gpus.Spec, dt DType, m, n, k int) (float64, Point, error) {
	us, p, err := t.lookup(TableGEMM, string(BF16), []float64{float64(m), float64(n), float64(k)})
	if err != nil {
		return 0, p, err
	}
	fm, fn, fk := float64(m), float64(n), float64(k)
	r := weightOnlyRatio(g, t.gemmLaunchUs(), 2*fm*fn*fk, fn*fk, 2*(fm*fk+fm*fn), dt)
	p.Slice, p.ScaledFrom, p.Measured = string(dt), weightOnlyFrom(BF16, dt), false
	return us * r, p, nil
}

// moeWeightOnlyUs is MoEUs for a dtype g runs weight-only: the BF16 measurement of the
// shape (its own slice, or scaled from the nearest BF16 shape) times the floors' ratio at
// these tokens, the weights being the experts the batch is expected to touch.
func (t *Tables) moeWeightOnlyUs(g gpus.Spec, s MoEShape, tokens int) (float64, Point, error) {
	b := s
	b.DType = BF16
	var us float64
	var p Point
	var err error
	if _, ok := t.slices[TableMoE+"/"+b.slice()]; ok {
		us, p, err = t.lookup(TableMoE, b.slice(), []float64{float64(tokens)})
	} else {
		us, p, err = t.moeScaled(b, tokens, "")
	}
	if err != nil {
		return 0, p, err
	}
	tp, ep := float64(max(s.TP, 1)), float64(max(s.EP, 1))
	touched := min(max(ExpectedDistinctExperts(s.Experts, s.TopK, float64(tokens))/ep, 1), float64(s.Experts)/ep)
	expert := 3 * float64(s.Hidden) * float64(s.Inter) / tp
	flops := 2 * float64(tokens) * float64(s.TopK) / ep * expert
	t.once()
	r := weightOnlyRatio(g, t.moeLaunch, flops, touched*expert, 2*float64(tokens)*float64(s.Hidden)*2, s.DType)
	from := p.ScaledFrom
	if from == "" {
		from = b.slice()
	}
	p.Slice, p.ScaledFrom, p.Measured = s.slice(), weightOnlyFrom(DType(from), s.DType), false
	return us * r, p, nil
}

// weightOnlyFrom names the measured slice a weight-only time is scaled from, and why.
func weightOnlyFrom(from, dt DType) string {
	return fmt.Sprintf("%s by the weight-read floors: %s runs weight-only on this GPU", from, dt)
}

// gemmLaunchUs is the GEMM table's fastest point (fastestUs), found once.
func (t *Tables) gemmLaunchUs() float64 {
	t.once()
	return t.gemmLaunch
}

// weightOnlyGPU is the tables' GPU when it runs dt weight-only.
func (t *Tables) weightOnlyGPU(dt DType) (gpus.Spec, bool) {
	if dt != FP8 && dt != FP8Block {
		return gpus.Spec{}, false
	}
	t.once()
	return t.spec, t.specOK && weightOnly(t.spec, dt)
}

// weightOnlyMoEGPU is weightOnlyGPU for an expert layer, and also true for MXFP4 experts
// (gpt-oss) where the tables measured no MXFP4 kernel (the A100): vLLM runs them with the
// Marlin MXFP4 MoE, 4-bit weights at BF16 math, as the measured w4a16_mxfp4 kernels of the
// other GPUs are.
func (t *Tables) weightOnlyMoEGPU(dt DType) (gpus.Spec, bool) {
	if dt != MXFP4 {
		return t.weightOnlyGPU(dt)
	}
	t.once()
	return t.spec, t.specOK && !t.mxfp4MoE
}

func (t *Tables) once() {
	t.launchOnce.Do(func() {
		t.gemmLaunch = t.fastestUs(TableGEMM)
		t.moeLaunch = t.fastestUs(TableMoE)
		t.attnLaunch = t.fastestUs(TableGenAttn)
		s, err := gpus.Lookup(t.GPU)
		t.spec, t.specOK = s, err == nil
		for _, k := range t.sliceKeys(TableMoE) {
			if m, ok := parseMoESlice(k); ok && m.DType == MXFP4 {
				t.mxfp4MoE = true
			}
		}
	})
}

// kvDTypeRatio is the floor of decode attention over a KV cache of dtype kv against a BF16
// one, for a GPU whose tables measured only BF16 caches (the A100): the kernel dequantizes
// the cache as it reads it, so the bytes follow the cache's dtype and the math stays BF16.
func (t *Tables) kvDTypeRatio(batch, heads, kvHeads, headDim int, kv DType, step float64) float64 {
	t.once()
	if !t.specOK {
		return 1
	}
	g := t.spec
	elem := weightBytes(kv)
	b, h, k, d := float64(batch), float64(heads), float64(kvHeads), float64(headDim)
	flops := 4 * b * h * step * d
	at := func(e float64) float64 {
		return max(flops/(g.FP16TFLOPS*1e6), b*step*k*d*2*e/(g.MemBWGBps*1e3)) + t.attnLaunch
	}
	return at(elem) / at(2)
}

// kvScaled marks p, a BF16-cache measurement, as scaled to a kv cache.
func (p Point) kvScaled(kv DType) Point {
	p.ScaledFrom = p.Slice + " by the KV-read floors (no " + string(kv) + " KV measurements on this GPU)"
	p.Measured = false
	return p
}
