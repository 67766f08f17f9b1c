package llm

import (
	"github.com/plan-dev/plan/profiler/kerneltab"
)

// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2) in the step model. Where the GPU's
// tables hold DeepSeek-V3's attention block (kerneltab's mla_context and mla_generation:
// the latent down- and up-projections, norms, RoPE, the MLA kernel and the output
// projection of one layer, as vLLM's model code runs them), the block is that one term,
// measured at the heads one tensor-parallel GPU holds: the projections are inside it, so
// attnProjUs adds none. Elsewhere the roofline times the projections as GEMMs and the
// attention as multi-query attention over the latent (decode reads kv_lora_rank +
// qk_rope_head_dim values a token, the absorbed form vLLM decodes with) or as multi-head
// attention of qk_nope + qk_rope a head (prefill).

// mlaMeasured reports whether the tables time d's attention block (a DeepSeek-V3-shaped one:
// the module tables are of that model's ranks).
func (d Deployment) mlaMeasured() bool {
	a := d.Model.MLA
	return d.tab != nil && d.tab.HasMLA() && a != nil && a.KVLoraRank == 512 && a.QKRope == 64 && a.QKNope == 128 && a.VHeadDim == 128
}

// mlaGEMM is the module tables' projection dtype for d's weights.
func (d Deployment) mlaGEMM() kerneltab.DType {
	if d.Model.Weights == WeightsFP8 {
		return kerneltab.FP8Block
	}
	return kerneltab.BF16
}

// mlaProjUs is one layer's latent projections (0 where the measured block includes them).
func (d Deployment) mlaProjUs(b *Breakdown, tokens int) float64 {
	if d.mlaMeasured() {
		return 0
	}
	m, a := d.Model, d.Model.MLA
	heads := m.Heads / d.TP
	qk := a.QKNope + a.QKRope
	dt := m.attnDType()
	var us float64
	if a.QLoraRank > 0 {
		us += d.gemmAt(b, dt, tokens, a.QLoraRank, m.Hidden) + d.gemmAt(b, dt, tokens, heads*qk, a.QLoraRank)
	} else {
		us += d.gemmAt(b, dt, tokens, heads*qk, m.Hidden)
	}
	us += d.gemmAt(b, dt, tokens, a.latentWidth(), m.Hidden)
	us += d.gemmAt(b, dt, tokens, heads*(a.QKNope+a.VHeadDim), a.KVLoraRank)
	return us + d.gemmAt(b, dt, tokens, m.Hidden, heads*a.VHeadDim)
}

// mlaPrefillUs is one layer's attention over a chunk of tokens after ctx cached ones: the
// measured block's whole-prompt times differenced as for grouped-query attention
// (prefillAttentionUs), never less than the chunk alone.
func (d Deployment) mlaPrefillUs(b *Breakdown, tokens, ctx int) float64 {
	m, a := d.Model, d.Model.MLA
	heads := m.Heads / d.TP
	if d.mlaMeasured() && tokens > 0 {
		at := func(n int) (float64, kerneltab.Point, error) {
			return d.tab.MLAContextUs(d.mlaGEMM(), d.kvDType(), heads, 1, n)
		}
		alone, p, err := at(tokens)
		if err == nil {
			t := alone
			if ctx > 0 {
				whole, p2, err1 := at(ctx + tokens)
				before, _, err2 := at(ctx)
				if err1 == nil && err2 == nil {
					t, p = max(whole-before, alone), p2
				}
			}
			b.Sources = append(b.Sources, Source{Term: "attention", Point: p})
			return t
		}
	}
	return d.k.PrefillAttentionUs(tokens, ctx, heads, heads, a.QKNope+a.QKRope)
}

// mlaDecodeUs is one layer's decode attention of batch sequences holding ctx tokens each.
func (d Deployment) mlaDecodeUs(b *Breakdown, batch int, ctx float64) float64 {
	m, a := d.Model, d.Model.MLA
	heads := m.Heads / d.TP
	if d.mlaMeasured() && batch > 0 {
		if us, p, err := d.tab.MLAGenerationUs(d.mlaGEMM(), d.kvDType(), heads, batch, ctx); err == nil {
			b.Sources = append(b.Sources, Source{Term: "attention", Point: p})
			return us
		}
	}
	return d.k.DecodeAttentionUs(batch, float64(batch)*ctx, heads, 1, a.latentWidth())
}
