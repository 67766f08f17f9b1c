package llm

import (
	"fmt"
	"sort"
	"strings"
)

// Model is an LLM architecture: a decoder of Layers blocks, each grouped-query attention
// (Heads query and KVHeads key/value heads of HeadDim) and a gated (SwiGLU) MLP of
// Intermediate, between a Vocab-row embedding and an untied LM head.
type Model struct {
	Name    string
	ParamsB float64 // parameters, billions (as published; TestParamsMatchShapes checks it)
	Layers  int
	Hidden  int
	Heads   int
	KVHeads int
	// HeadDim is the attention head size: Hidden/Heads except where the config sets
	// head_dim (Mistral-Nemo: 128 with a 5120 hidden size and 32 heads).
	HeadDim      int
	Intermediate int
	Vocab        int
	// Context is the maximum sequence length.
	Context int
	// HF is the Hugging Face id whose config.json the shapes are from.
	HF string
	// TiedEmbeddings: the LM head shares the embedding's weights (tie_word_embeddings).
	TiedEmbeddings bool
}

// Models from their published configurations (config.json of the HF id; field names in
// parentheses): hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
// head_dim, intermediate_size, vocab_size, max_position_embeddings. Parameter counts are the
// model cards'.
var models = []Model{
	// mistralai/Mistral-7B-Instruct-v0.2: 4096, 32 layers, 32/8 heads, 14336, 32000.
	{Name: "mistral-7b", ParamsB: 7.24, Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 32000, Context: 32768, HF: "mistralai/Mistral-7B-Instruct-v0.2"},
	// lmsys/vicuna-13b-v1.5 (Llama-2-13B): 5120, 40 layers, 40 heads (MHA), 13824, 32000.
	{Name: "vicuna-13b", ParamsB: 13.0, Layers: 40, Hidden: 5120, Heads: 40, KVHeads: 40, HeadDim: 128, Intermediate: 13824, Vocab: 32000, Context: 4096, HF: "lmsys/vicuna-13b-v1.5"},
	// meta-llama/Llama-2-70b-hf: 8192, 80 layers, 64/8 heads, 28672, 32000.
	{Name: "llama-2-70b", ParamsB: 69.0, Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 32000, Context: 4096, HF: "meta-llama/Llama-2-70b-hf"},
	// meta-llama/Llama-2-7b-hf: 4096, 32 layers, 32 heads (MHA), 11008, 32000 — the 8B-class
	// shape of the measured H100 kernel table (testdata/h100-kernels.csv).
	{Name: "llama-2-7b", ParamsB: 6.74, Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, Intermediate: 11008, Vocab: 32000, Context: 4096, HF: "meta-llama/Llama-2-7b-hf"},
	// meta-llama/Llama-3.1-8B-Instruct: 4096, 32 layers, 32/8 heads, 14336, 128256, 131072.
	{Name: "llama-3.1-8b", ParamsB: 8.03, Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 128256, Context: 131072, HF: "meta-llama/Llama-3.1-8B-Instruct"},
	// meta-llama/Llama-3.1-70B-Instruct: 8192, 80 layers, 64/8 heads, 28672, 128256, 131072.
	{Name: "llama-3.1-70b", ParamsB: 70.6, Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 128256, Context: 131072, HF: "meta-llama/Llama-3.1-70B-Instruct"},
	// Qwen/Qwen2.5-7B-Instruct: 3584, 28 layers, 28/4 heads, 18944, 152064, 32768 (131072
	// with YaRN scaling, which the config does not enable). 7.61B.
	{Name: "qwen2.5-7b", ParamsB: 7.61, Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128, Intermediate: 18944, Vocab: 152064, Context: 32768, HF: "Qwen/Qwen2.5-7B-Instruct"},
	// Qwen/Qwen2.5-32B-Instruct: 5120, 64 layers, 40/8 heads, 27648, 152064, 32768. 32.5B.
	{Name: "qwen2.5-32b", ParamsB: 32.5, Layers: 64, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128, Intermediate: 27648, Vocab: 152064, Context: 32768, HF: "Qwen/Qwen2.5-32B-Instruct"},
	// mistralai/Mistral-Nemo-Instruct-2407: 5120, 40 layers, 32/8 heads, head_dim 128, 14336,
	// 131072; a 128k context (the config's max_position_embeddings says 1024000). 12.2B.
	{Name: "mistral-nemo-12b", ParamsB: 12.2, Layers: 40, Hidden: 5120, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 131072, Context: 131072, HF: "mistralai/Mistral-Nemo-Instruct-2407"},
}

// DefaultGPUs are the GPU types QLM's evaluation used.
var DefaultGPUs = []string{"A10", "A100", "H100"}

// Names lists the known models.
func Names() []string {
	out := make([]string, len(models))
	for i, m := range models {
		out[i] = m.Name
	}
	sort.Strings(out)
	return out
}

// Lookup finds a model by name, case-insensitively.
func Lookup(name string) (Model, error) {
	for _, m := range models {
		if strings.EqualFold(m.Name, name) {
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("LLM %q: unknown; known LLMs: %s", name, strings.Join(Names(), ", "))
}

// ShapeParams is the parameter count the shapes give: embedding and LM head (untied), per
// layer the Q, K, V and O projections, the gate, up and down projections and two norms, and
// the final norm. Biases (Qwen2.5's QKV bias) are left out: under 0.01%.
func (m Model) ShapeParams() float64 {
	h, q, kv, d := float64(m.Hidden), float64(m.Heads), float64(m.KVHeads), float64(m.HeadDim)
	attn := h*(q+2*kv)*d + q*d*h
	mlp := 3 * h * float64(m.Intermediate)
	layer := attn + mlp + 2*h
	emb := 2.0 // embedding and LM head
	if m.TiedEmbeddings {
		emb = 1
	}
	return float64(m.Layers)*layer + emb*float64(m.Vocab)*h + h
}

// WeightBytes is the fp16 weight size.
func (m Model) WeightBytes() int64 { return int64(m.ParamsB * 1e9 * 2) }

// KVBytesPerToken is K and V, fp16, for every layer and KV head.
func (m Model) KVBytesPerToken() int64 {
	return int64(2 * m.Layers * m.KVHeads * m.HeadDim * 2)
}

// kvHeadsPerGPU: tensor parallelism splits the KV heads, and replicates them once there are
// more GPUs than heads (vLLM's rule).
func (m Model) kvHeadsPerGPU(tp int) int { return max(1, m.KVHeads/tp) }

// kvBytesPerTokenTP is the BF16 KV bytes of one token summed over tp GPUs (more than
// KVBytesPerToken where heads are replicated).
func (m Model) kvBytesPerTokenTP(tp int) int64 {
	return int64(2*m.Layers*m.kvHeadsPerGPU(tp)*m.HeadDim*2) * int64(tp)
}

// kvElemBytes is the bytes of one KV element: 1 in an FP8 cache, else 2 (BF16).
func kvElemBytes(fp8 bool) int64 {
	if fp8 {
		return 1
	}
	return 2
}

// CheckTP refuses a tensor-parallel degree the engine cannot shard the model over: 1–8 GPUs,
// dividing the query heads, and dividing or divided by the KV heads (vLLM's checks).
func (m Model) CheckTP(tp int) error {
	switch {
	case tp < 1 || tp > 8:
		return fmt.Errorf("tensor parallel size %d: must be in 1..8", tp)
	case m.Heads%tp != 0:
		return fmt.Errorf("tensor parallel size %d: does not divide %s's %d attention heads", tp, m.Name, m.Heads)
	case m.KVHeads%tp != 0 && tp%m.KVHeads != 0:
		return fmt.Errorf("tensor parallel size %d: neither divides nor is a multiple of %s's %d KV heads", tp, m.Name, m.KVHeads)
	}
	return nil
}
