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

// gemmWeightOnlyUs is GEMMUs for a dtype g runs weight-only: the BF16 measurement times
// the ratio of the two floors (floorUs: dt's weight bytes at the bandwidth, the FLOPs at the
// peak g has for dt, which without its tensor cores is the FP16 one).
func (t *Tables) gemmWeightOnlyUs(g gpus.Spec, dt DType, m, n, k int) (float64, Point, error) {
	x := []float64{float64(m), float64(n), float64(k)}
	us, p, err := t.lookup(TableGEMM, string(BF16), x)
	if err != nil {
		return 0, p, err
	}
	launch := t.gemmLaunchUs()
	fq, _ := floorUs(g, launch, TableGEMM, string(dt), x)
	fb, _ := floorUs(g, launch, TableGEMM, string(BF16), x)
	p.Slice, p.ScaledFrom, p.Measured = string(dt), weightOnlyFrom(BF16, dt), false
	return us * fq / fb, p, nil
}

// moeWeightOnlyUs is MoEUs for a dtype the GPU runs weight-only (moeScaledFromBF16, the
// weights being the experts the batch is expected to touch).
func (t *Tables) moeWeightOnlyUs(s MoEShape, tokens int) (float64, Point, error) {
	us, p, err := t.moeScaledFromBF16(s, tokens)
	if err != nil {
		return 0, p, err
	}
	b := s
	b.DType = BF16
	from := b.slice()
	if p.ScaledFrom != "" {
		from = p.ScaledFrom
	}
	p.ScaledFrom = weightOnlyFrom(DType(from), s.DType)
	return us, p, nil
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

// weightOnlyMoE reports whether the GPU runs experts of dtype dt weight-only: FP8 without
// FP8 tensor cores (weightOnlyGPU), and MXFP4 experts (gpt-oss) where the tables measured no
// MXFP4 kernel (the A100): vLLM runs them with the Marlin MXFP4 MoE, 4-bit weights at BF16
// math, as the measured w4a16_mxfp4 kernels of the other GPUs are.
func (t *Tables) weightOnlyMoE(dt DType) bool {
	if dt != MXFP4 {
		_, ok := t.weightOnlyGPU(dt)
		return ok
	}
	t.once()
	return t.specOK && !t.mxfp4MoE
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
// one (floorUs), for a GPU whose tables measured only BF16 caches (the A100): the kernel
// dequantizes the cache as it reads it, so the bytes follow the cache's dtype and the math
// stays BF16.
func (t *Tables) kvDTypeRatio(batch, heads, kvHeads, headDim int, kv DType, step float64) float64 {
	t.once()
	if !t.specOK {
		return 1
	}
	x := []float64{float64(batch), float64(heads), float64(kvHeads), step}
	fq, _ := floorUs(t.spec, t.attnLaunch, TableGenAttn, fmt.Sprintf("%d/%s", headDim, kv), x)
	fb, _ := floorUs(t.spec, t.attnLaunch, TableGenAttn, fmt.Sprintf("%d/%s", headDim, BF16), x)
	return fq / fb
}

// kvScaled marks p, a BF16-cache measurement, as scaled to a kv cache.
func (p Point) kvScaled(kv DType) Point {
	p.ScaledFrom = p.Slice + " by the KV-read floors (no " + string(kv) + " KV measurements on this GPU)"
	p.Measured = false
	return p
}
