package llm

import (
	"fmt"

	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/roofline"
)

// Breakdown is the analytic time of one engine step by term, µs. The kernel terms are
// summed (the engine runs them one after the other on each GPU); Overhead is the per-step
// host work (scheduling, input preparation, sampling) that does not overlap them.
type Breakdown struct {
	// GEMM: the Q/K/V, output, gate/up and down projections of every layer and the LM head.
	GEMM float64 `json:"gemm_us"`
	// Attention: prefill (FlashAttention, compute-bound) or decode (KV read) attention.
	Attention float64 `json:"attention_us"`
	// AllReduce: two tensor-parallel all-reduces per layer and one after the embedding.
	AllReduce float64 `json:"allreduce_us"`
	// Elementwise: RMSNorms, rotary embedding, SiLU-and-mul and the residual add.
	Elementwise float64 `json:"elementwise_us"`
	// Overhead: the per-step host overhead.
	Overhead float64 `json:"overhead_us"`
}

// Kernels is the GPU time of the step: every term but the overhead.
func (b Breakdown) Kernels() float64 { return b.GEMM + b.Attention + b.AllReduce + b.Elementwise }

// Total is the step time.
func (b Breakdown) Total() float64 { return b.Kernels() + b.Overhead }

// Deployment is a model served on TP GPUs of one type joined by Link.
type Deployment struct {
	Model Model
	GPU   gpus.Spec
	TP    int
	Link  roofline.Link
	k     roofline.Kernels
}

// NewDeployment checks the tensor-parallel degree and the link.
func NewDeployment(m Model, g gpus.Spec, tp int, link roofline.Link) (Deployment, error) {
	if err := m.CheckTP(tp); err != nil {
		return Deployment{}, err
	}
	d := Deployment{Model: m, GPU: g, TP: tp, Link: link, k: roofline.NewKernels(g)}
	if gbps, l := d.k.LinkGBps(link); tp > 1 && gbps <= 0 {
		return Deployment{}, fmt.Errorf("link %s: %s has none", l, g.Name)
	}
	return d, nil
}

// mustDeployment is NewDeployment for degrees already checked (GPUCount's).
func mustDeployment(m Model, g gpus.Spec, tp int) Deployment {
	d, err := NewDeployment(m, g, tp, roofline.LinkAuto)
	if err != nil {
		// GPUCount picks powers of two up to 8; a catalogue model they do not divide is a
		// catalogue error, which TestCatalogueShards rules out.
		panic(err)
	}
	return d
}

// LayerGEMMUs is the projection GEMMs of one layer over tokens rows on one GPU: QKV (the
// GPU's query and KV heads), output, gate and up fused, down.
func (d Deployment) LayerGEMMUs(tokens int) float64 {
	m, tp := d.Model, d.TP
	qd := m.Heads / tp * m.HeadDim
	kvd := m.kvHeadsPerGPU(tp) * m.HeadDim
	inter := m.Intermediate / tp
	return d.k.GEMMUs(tokens, qd+2*kvd, m.Hidden) +
		d.k.GEMMUs(tokens, m.Hidden, qd) +
		d.k.GEMMUs(tokens, 2*inter, m.Hidden) +
		d.k.GEMMUs(tokens, m.Hidden, inter)
}

// LayerElementwiseUs is the elementwise kernels of one layer over tokens rows: two RMSNorms
// (read and write tokens×hidden), rotary embedding of the GPU's query and key heads (read and
// write), SiLU-and-mul (read gate and up, write one) and one residual add (read two, write
// one; vLLM fuses the other into the next norm) — the kernels of the measured table.
func (d Deployment) LayerElementwiseUs(tokens int) float64 {
	m, tp := d.Model, d.TP
	t, h := float64(tokens), float64(m.Hidden)
	norm := d.k.ElementwiseUs(4 * t * h)
	rope := d.k.ElementwiseUs(4 * t * float64((m.Heads/tp+m.kvHeadsPerGPU(tp))*m.HeadDim))
	act := d.k.ElementwiseUs(6 * t * float64(m.Intermediate/tp))
	add := d.k.ElementwiseUs(6 * t * h)
	return 2*norm + rope + act + add
}

// AllReduceUs is one all-reduce of a tokens×hidden BF16 activation across the GPUs.
func (d Deployment) AllReduceUs(tokens int) float64 {
	return d.k.AllReduceUs(2*float64(tokens*d.Model.Hidden), d.TP, d.Link)
}

// allReduces per step: after attention and after the MLP in every layer (Megatron tensor
// parallelism, llm-deploy-search.md §3) and after the vocabulary-parallel embedding (161 for
// an 80-layer model: llm-engine-2.md, "Measured H100 kernel facts").
func (d Deployment) allReduces() int { return 2*d.Model.Layers + 1 }

// step is the terms common to prefill and decode: tokens rows through every layer, logits
// for logits rows, attention given.
func (d Deployment) step(tokens, logits int, attnPerLayer float64) Breakdown {
	m := d.Model
	l := float64(m.Layers)
	b := Breakdown{
		GEMM:        l*d.LayerGEMMUs(tokens) + d.k.GEMMUs(logits, m.Vocab/d.TP, m.Hidden),
		Attention:   l * attnPerLayer,
		Elementwise: l * d.LayerElementwiseUs(tokens),
		Overhead:    stepOverheadUs,
	}
	if d.TP > 1 {
		b.AllReduce = float64(d.allReduces()) * d.AllReduceUs(tokens)
	}
	return b
}

// Prefill is one step prefilling tokens prompt tokens of one sequence whose KV cache holds
// ctx tokens already (a chunk of a longer prompt when ctx > 0); logits for its last token.
func (d Deployment) Prefill(tokens, ctx int) Breakdown {
	m, tp := d.Model, d.TP
	attn := d.k.PrefillAttentionUs(tokens, ctx, m.Heads/tp, m.kvHeadsPerGPU(tp), m.HeadDim)
	return d.step(tokens, 1, attn)
}

// Decode is one decode step of batch sequences whose KV caches hold ctx tokens each.
func (d Deployment) Decode(batch int, ctx float64) Breakdown {
	m, tp := d.Model, d.TP
	attn := d.k.DecodeAttentionUs(batch, float64(batch)*ctx, m.Heads/tp, m.kvHeadsPerGPU(tp), m.HeadDim)
	return d.step(batch, batch, attn)
}

// DecodeUsPerContextToken is the decode attention time per token of context held in the KV
// caches (the iteration model's context term).
func (d Deployment) DecodeUsPerContextToken() float64 {
	m := d.Model
	perGPU := float64(m.kvBytesPerTokenTP(d.TP)) / float64(d.TP)
	return perGPU / (d.k.Params.EtaMem * d.GPU.MemBWGBps * 1e3)
}

// Cell is one (phase, size) point of the step model, as `plan profile --llm --explain`
// reports it.
type Cell struct {
	Phase   string    `json:"phase"` // "prefill" or "decode"
	Tokens  int       `json:"tokens"`
	Batch   int       `json:"batch"`
	Context int       `json:"context"`
	Terms   Breakdown `json:"terms"`
	TotalUs float64   `json:"total_us"`
}

// ExplainCells are the cells the published H100 kernel timings cover (CALIBRATION.md):
// prefill of 512, 2,048 and 8,192 tokens of one sequence, and decode of 1, 8, 32 and 128
// sequences at 2,048 tokens of context.
func (d Deployment) ExplainCells() []Cell {
	var out []Cell
	for _, n := range []int{512, 2048, 8192} {
		b := d.Prefill(n, 0)
		out = append(out, Cell{Phase: "prefill", Tokens: n, Batch: 1, Terms: b, TotalUs: b.Total()})
	}
	for _, bs := range []int{1, 8, 32, 128} {
		b := d.Decode(bs, 2048)
		out = append(out, Cell{Phase: "decode", Tokens: bs, Batch: bs, Context: 2048, Terms: b, TotalUs: b.Total()})
	}
	return out
}
