package zoo

import (
	"fmt"

	"github.com/plan-dev/plan/profiler/graph"
)

// bert builds a BERT encoder (Devlin et al. 2019) at sequence length seq: token-id input,
// word-embedding lookup, then per layer multi-head self-attention (Q, K, V, scores, softmax,
// context, output projection, residual, layer norm) and the GELU feed-forward block. Position
// and segment embeddings and attention scaling are folded away (they add no layer).
func bert(name string, layers int, hidden, heads, seq int64) (*graph.Graph, error) {
	b := &builder{g: &graph.Graph{Name: name, Tensors: map[string]graph.Tensor{}}, count: map[string]int{}}
	b.g.Tensors["input_ids"] = graph.Tensor{Name: "input_ids", Shape: []int64{seq}, DType: "int64"}
	b.g.Inputs = []string{"input_ids"}
	b.scope("embeddings")
	x := b.node("Gather", []string{"input_ids"}, []int64{seq, hidden}, map[string][]int64{"axis": {0}, "vocab_size": {30522}})
	x = b.layernorm(x)
	dh := hidden / heads
	for l := 0; l < layers; l++ {
		b.scope(fmt.Sprintf("encoder.layer%d", l))
		split := func(t string) string { return b.reshape(t, seq, heads, dh) }
		q := b.transpose(split(b.linear(x, hidden)), 1, 0, 2) // [heads, seq, dh]
		k := b.transpose(split(b.linear(x, hidden)), 1, 2, 0) // [heads, dh, seq]
		v := b.transpose(split(b.linear(x, hidden)), 1, 0, 2) // [heads, seq, dh]
		s := b.softmax(b.matmul(q, k))                        // [heads, seq, seq]
		c := b.transpose(b.matmul(s, v), 1, 0, 2)             // [seq, heads, dh]
		c = b.reshape(c, seq, hidden)
		x = b.layernorm(b.add(b.linear(c, hidden), x))
		f := b.gelu(b.linear(x, 4*hidden))
		x = b.layernorm(b.add(b.linear(f, hidden), x))
	}
	return b.finish(x)
}
