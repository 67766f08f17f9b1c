package kerneltab

import (
	"fmt"
	"math"
	"slices"

	"github.com/plan-dev/plan/internal/base/gpucat"
)

// DType names a GEMM or KV-cache data type as the tables spell it.
type DType string

// Data types the embedded tables carry.
const (
	BF16 DType = "bfloat16"
	FP8  DType = "fp8"
)

// GEMMUs is one vLLM linear layer Y[m,n] = X[m,k]·W[n,k]ᵀ on one GPU (n already divided by
// the tensor-parallel degree where the layer is sharded).
func (t *Tables) GEMMUs(dt DType, m, n, k int) (float64, Point, error) {
	if m <= 0 || n <= 0 || k <= 0 {
		return 0, Point{Table: TableGEMM}, nil
	}
	if g, ok := t.weightOnlyGPU(dt); ok {
		return t.gemmWeightOnlyUs(g, dt, m, n, k)
	}
	return t.lookup(TableGEMM, string(dt), []float64{float64(m), float64(n), float64(k)})
}

// attnSlice picks the measured head size nearest headDim (the larger on a tie) for kv, and
// the factor the time scales by for the difference: attention's work and KV traffic are
// linear in the head size.
func (t *Tables) attnSlice(table string, headDim int, kv DType) (string, float64, error) {
	best, bestHD := "", 0
	for _, s := range t.sliceKeys(table) {
		var hd int
		var dt string
		if _, err := fmt.Sscanf(s, "%d/%s", &hd, &dt); err != nil || dt != string(kv) {
			continue
		}
		d, bd := math.Abs(float64(hd-headDim)), math.Abs(float64(bestHD-headDim))
		if best == "" || d < bd || (d == bd && hd > bestHD) {
			best, bestHD = s, hd
		}
	}
	if best == "" {
		return "", 0, fmt.Errorf("%s %s: no measurements with kv_cache_dtype %s", t.GPU, table, kv)
	}
	return best, float64(headDim) / float64(bestHD), nil
}

// ContextAttentionUs is one prefill attention layer (KV-cache write and the attention
// kernel, no projections) over batch sequences of isl new tokens each, with no cached
// prefix: heads query and kvHeads KV heads of headDim on this GPU.
func (t *Tables) ContextAttentionUs(batch, isl, heads, kvHeads, headDim int, kv DType) (float64, Point, error) {
	if batch <= 0 || isl <= 0 {
		return 0, Point{Table: TableContextAttn}, nil
	}
	s, f, err := t.attnSlice(TableContextAttn, headDim, kv)
	if err != nil && kv != BF16 {
		// A KV dtype the GPU's tables lack (FP8 on the A100): prefill attention is bound by
		// its math, which stays BF16, and the cache write it halves is a sliver of it.
		us, p, berr := t.ContextAttentionUs(batch, isl, heads, kvHeads, headDim, BF16)
		if berr == nil {
			p.ScaledFrom = p.Slice + " (no " + string(kv) + " KV measurements: its BF16 time)"
			p.Measured = false
			return us, p, nil
		}
	}
	if err != nil {
		return 0, Point{Table: TableContextAttn}, err
	}
	us, p, err := t.lookup(TableContextAttn, s, []float64{float64(batch), float64(isl), float64(heads), float64(kvHeads)})
	return us * f, p, err
}

// GenerationAttentionUs is one decode attention layer over batch sequences whose KV caches
// hold step tokens each (one new token per sequence), as the tables measured it.
func (t *Tables) GenerationAttentionUs(batch, heads, kvHeads, headDim int, kv DType, step float64) (float64, Point, error) {
	us, p, _, err := t.generationAttention(batch, heads, kvHeads, headDim, kv, step, false)
	return us, p, err
}

// foldKVHeads is the measured KV-head count (axis, ascending) a decode of k KV heads per
// GPU is read at: k itself where measured, else the largest measured count below it (the
// batch grows by the ratio), or k where none is below it.
func foldKVHeads(axis []float64, k float64) float64 {
	if i, ok := slices.BinarySearch(axis, k); !ok && i > 0 {
		return axis[i-1]
	}
	return k
}

// GenerationAttentionFromMemoryUs is GenerationAttentionUs with the KV cache read from
// memory, as a serving step reads it. The tables time one layer's kernel called again and
// again over the same cache (CUDA-graph replay after warm-up), so a cache that fits in the
// GPU's L2 is served from the L2 after the first call: the H100 (50 MB of L2) measures 8
// sequences × 8 KV heads at 2,048 tokens (34 MB) in 18 µs and at 4,096 tokens (67 MB) in
// 40 µs; the L40S (96 MB) reads 67 MB at 1.5 TB/s, above its 864 GB/s memory. A serving
// step reads each layer's cache once, with the whole model's weights streamed through the
// L2 in between. raised reports whether the measurement was raised (fromMemoryUs).
func (t *Tables) GenerationAttentionFromMemoryUs(batch, heads, kvHeads, headDim int, kv DType, step float64) (us float64, p Point, raised bool, err error) {
	return t.generationAttention(batch, heads, kvHeads, headDim, kv, step, true)
}

func (t *Tables) generationAttention(batch, heads, kvHeads, headDim int, kv DType, step float64, fromMemory bool) (float64, Point, bool, error) {
	if batch <= 0 {
		return 0, Point{Table: TableGenAttn}, false, nil
	}
	s, f, err := t.attnSlice(TableGenAttn, headDim, kv)
	if err != nil && kv != BF16 {
		if us, p, raised, berr := t.generationAttention(batch, heads, kvHeads, headDim, BF16, step, fromMemory); berr == nil {
			return us * t.kvDTypeRatio(batch, heads, kvHeads, headDim, kv, step), p.kvScaled(kv), raised, nil
		}
	}
	if err != nil {
		return 0, Point{Table: TableGenAttn}, false, err
	}
	b, h, k := float64(batch), float64(heads), float64(kvHeads)
	// Decode attention runs one block per (sequence, KV head) and reads each KV head's
	// cache once: b sequences of k KV heads (h query heads) are the same work and the same
	// parallelism as b·k/K sequences of K KV heads (h·K/k query heads). The tables measure
	// 1, 2, 4 and 8 KV heads per GPU (H100, H200, A100, L40S); any other count folds into
	// the batch at the measured count below it (foldKVHeads): more than 8 (multi-head
	// attention, 40 KV heads of a Llama-2-13B) rather than growing past the grid, and one
	// between two (its 5 a GPU at TP 8) rather than interpolating across KV heads, where
	// the grid lacks the corner of fewer query heads than KV heads (4 query heads over 8 KV
	// heads) and the interpolation read 5 × 5 heads 4.7× either measured neighbour.
	if g := t.slices[TableGenAttn+"/"+s]; g != nil {
		if K := foldKVHeads(g.axes[2], k); K != k {
			fold := k / K
			b, h, k = b*fold, h/fold, K
		}
	}
	step = max(step, 1)
	us, p, err := t.lookup(TableGenAttn, s, []float64{b, h, k, step})
	if err != nil || !fromMemory {
		return us * f, p, false, err
	}
	cold := t.fromMemoryUs(s, b, h, k, step, us)
	return cold * f, p, cold > us, nil
}

// fromMemoryUs raises a decode attention time us measured over an L2-resident cache to the
// line through the first two measured steps whose cache exceeds the L2, at the same batch
// and heads: the cache at the rate the table itself shows from memory. On every measured
// GPU those points already lie on the line through the larger ones (H100 and H200 from 67
// MB, L40S from 134 MB, B200 from 134 MB, A100 from 67 MB). Never above the kernel's fixed
// time (its time at one token) plus the bytes at that rate: the line's intercept overstates
// a small cache, whose reads are too few to reach the rate measured on hundreds of
// megabytes. Where the tables hold no such pair (a tiny batch at the longest steps) us
// stands.
func (t *Tables) fromMemoryUs(slice string, b, h, k, step, us float64) float64 {
	spec, err := gpucat.Lookup(t.GPU)
	if err != nil || spec.L2Bytes <= 0 {
		return us
	}
	var hd int
	var dt string
	if _, err := fmt.Sscanf(slice, "%d/%s", &hd, &dt); err != nil || hd <= 0 {
		return us
	}
	elem := 2.0
	if DType(dt) == FP8 {
		elem = 1
	}
	perToken := b * k * float64(hd) * 2 * elem // K and V bytes a token of context adds
	g := t.slices[TableGenAttn+"/"+slice]
	if g == nil {
		return us
	}
	steps := g.axes[3]
	i := slices.IndexFunc(steps, func(s float64) bool { return (s+1)*perToken > float64(spec.L2Bytes) })
	if i < 0 || i+1 >= len(steps) || step >= steps[i] {
		return us
	}
	s1, s2 := steps[i], steps[i+1]
	t1, _, err1 := t.lookup(TableGenAttn, slice, []float64{b, h, k, s1})
	t2, _, err2 := t.lookup(TableGenAttn, slice, []float64{b, h, k, s2})
	fixed, _, err3 := t.lookup(TableGenAttn, slice, []float64{b, h, k, 1})
	if err1 != nil || err2 != nil || err3 != nil || t2 <= t1 {
		return us
	}
	rate := (t2 - t1) / (s2 - s1) // per token of context: bytes are linear in step+1
	return max(us, min(t1-rate*(s1-step), fixed+rate*(step+1)))
}

// MLAContextUs is one DeepSeek-V3 attention block (its latent projections, the MLA kernel
// and the output projection, vLLM's model code) prefilling batch sequences of isl tokens
// each on one GPU holding heads of the 128 heads, projections in gemm (bfloat16 or
// fp8_block), KV cache in kv.
func (t *Tables) MLAContextUs(gemm DType, kv DType, heads, batch, isl int) (float64, Point, error) {
	if batch <= 0 || isl <= 0 {
		return 0, Point{Table: TableMLAContext}, nil
	}
	return t.lookup(TableMLAContext, string(gemm)+"/"+string(kv), []float64{float64(heads), float64(batch), float64(isl)})
}

// MLAGenerationUs is one DeepSeek-V3 attention block decoding batch sequences whose caches
// hold step tokens each.
func (t *Tables) MLAGenerationUs(gemm DType, kv DType, heads, batch int, step float64) (float64, Point, error) {
	if batch <= 0 {
		return 0, Point{Table: TableMLAGen}, nil
	}
	return t.lookup(TableMLAGen, string(gemm)+"/"+string(kv), []float64{float64(heads), float64(batch), max(step, 2)})
}

// HasMLA reports whether the GPU's tables hold DeepSeek's attention block.
func (t *Tables) HasMLA() bool {
	_, ok := t.slices[TableMLAGen+"/"+string(BF16)+"/"+string(BF16)]
	return ok
}

// AllReduceUs is vLLM's tensor-parallel all-reduce (tensor_model_parallel_all_reduce: its
// custom one-shot/two-shot kernel where vLLM uses it, its fallback beyond) of elements BF16
// values across tp GPUs, captured in a CUDA graph (decode and small steps) or eager.
func (t *Tables) AllReduceUs(graph bool, tp int, elements float64) (float64, Point, error) {
	if tp <= 1 || elements <= 0 {
		return 0, Point{Table: TableAllReduce}, nil
	}
	src := "vLLM_custom_eager"
	if graph {
		src = "vLLM_custom_graph"
	}
	return t.lookup(TableAllReduce, src, []float64{float64(tp), math.Max(elements, 1)})
}

// NCCLUs is an NCCL collective (op all_gather, all_reduce, reduce_scatter or alltoall) of
// elements half-precision values across tp GPUs (for all_gather, the gathered output).
func (t *Tables) NCCLUs(op string, tp int, elements float64) (float64, Point, error) {
	if tp <= 1 || elements <= 0 {
		return 0, Point{Table: TableNCCL}, nil
	}
	return t.lookup(TableNCCL, op, []float64{float64(tp), math.Max(elements, 1)})
}
