package llm

import (
	"github.com/plan-dev/plan/profiler/kerneltab"
)

// moeUs is one fused-MoE layer over tokens rows on one GPU. Under tensor parallelism every
// GPU holds every expert split TP ways (moe_tp_size = TP) and computes all the tokens'
// experts on its shard; under expert parallelism each holds Experts/TP whole experts
// (moe_ep_size = TP) and computes the tokens routed to them. Either way vLLM leaves the
// hidden states replicated over the group after attention's all-reduce and sums the
// experts' outputs with one all-reduce after the layer (the naive dispatch when the expert
// group is the tensor-parallel group), so the communication is the dense model's and only
// this term differs: EP reads whole experts (fewer, larger GEMMs) but takes skewed routing
// unevenly. Measured where the GPU's tables hold the model's shape, scaled from the nearest
// measured shape where not (kerneltab.MoEUs); elsewhere the roofline times the experts the
// batch is expected to touch (kerneltab.ExpectedDistinctExperts) as one grouped GEMM.
func (d Deployment) moeUs(b *Breakdown, tokens int) float64 {
	e := d.Model.MoE
	if e == nil || tokens <= 0 {
		return 0
	}
	tp, ep := d.TP, 1
	if d.ep {
		tp, ep = 1, d.TP
	}
	if d.tab != nil {
		s := kerneltab.MoEShape{DType: d.Model.moeDType(), Hidden: d.Model.Hidden, Inter: e.Intermediate, TopK: e.TopK, Experts: e.Experts, TP: tp, EP: ep}
		if us, p, err := d.tab.MoEUs(s, tokens); err == nil {
			b.Sources = append(b.Sources, Source{Term: "moe", Point: p})
			return us
		}
	}
	return d.moeRooflineUs(tokens, tp, ep)
}

// moeRooflineUs is the roofline's fused-MoE layer: the experts one GPU holds that the batch
// is expected to touch, read once, and the routed tokens' FLOPs, as one grouped GEMM whose
// rows are the tokens per touched expert.
func (d Deployment) moeRooflineUs(tokens, tp, ep int) float64 {
	e := d.Model.MoE
	perRank := float64(e.Experts) / float64(ep)
	touched := kerneltab.ExpectedDistinctExperts(e.Experts, e.TopK, float64(tokens)) / float64(ep)
	touched = min(max(touched, 1), perRank)
	routed := float64(tokens) * float64(e.TopK) / float64(ep)
	rows := max(int(routed/touched+0.5), 1)
	inter := max(e.Intermediate/tp, 1)
	n := int(touched*float64(3*inter) + 0.5)
	return d.k.GEMMUs(rows, n, d.Model.Hidden)
}
