package kerneltab

import (
	"fmt"
	"math"
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
	if err != nil {
		return 0, Point{Table: TableContextAttn}, err
	}
	us, p, err := t.lookup(TableContextAttn, s, []float64{float64(batch), float64(isl), float64(heads), float64(kvHeads)})
	return us * f, p, err
}

// GenerationAttentionUs is one decode attention layer over batch sequences whose KV caches
// hold step tokens each (one new token per sequence).
func (t *Tables) GenerationAttentionUs(batch, heads, kvHeads, headDim int, kv DType, step float64) (float64, Point, error) {
	if batch <= 0 {
		return 0, Point{Table: TableGenAttn}, nil
	}
	s, f, err := t.attnSlice(TableGenAttn, headDim, kv)
	if err != nil {
		return 0, Point{Table: TableGenAttn}, err
	}
	b, h, k := float64(batch), float64(heads), float64(kvHeads)
	// Decode attention runs one block per (sequence, KV head) and reads each KV head's
	// cache once: b sequences of k KV heads (h query heads) are the same work and the same
	// parallelism as b·k/K sequences of K KV heads (h·K/k query heads). The tables measure
	// up to 8 KV heads per GPU (H100, H200, A100, L40S); more (multi-head attention, e.g.
	// 40 KV heads of a Llama-2-13B) fold into the batch rather than growing past the grid.
	if g := t.slices[TableGenAttn+"/"+s]; g != nil {
		if top := g.axes[2][len(g.axes[2])-1]; k > top {
			fold := k / top
			b, h, k = b*fold, h/fold, top
		}
	}
	us, p, err := t.lookup(TableGenAttn, s, []float64{b, h, k, max(step, 1)})
	return us * f, p, err
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
