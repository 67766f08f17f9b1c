package llm

import (
	"fmt"
	"slices"
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
	// MoE describes a mixture-of-experts model's expert layers; nil for a dense model.
	MoE *MoE
	// Weights is the dtype the decoder's linear layers run in: WeightsBF16 (""), or a
	// quantized checkpoint's or vLLM --quantization's (Quantize). BlockFP8: its FP8 weights
	// are 128×128 block-scaled (DeepSeek's checkpoints: weight_block_size).
	Weights  WeightDType
	BlockFP8 bool
	// AttentionBF16: the quantized checkpoint leaves every layer's attention projections in
	// BF16 (its quantization_config's ignore list names them: llm-compressor's Llama-4 FP8
	// recipe), so they are read and timed at BF16 while the MLPs and experts are quantized.
	// vLLM's online --quantization fp8 quantizes them: false.
	AttentionBF16 bool
	// MLA is multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): nil for grouped-query
	// attention.
	MLA *MLA
	// SlidingLayers of the Layers attend only to the last SlidingWindow tokens (gpt-oss's
	// alternate layers, Gemma-3's five of six: window.go); 0: every layer attends to the
	// whole context.
	SlidingLayers int
	SlidingWindow int
	// ChunkedLayers of the Layers attend within chunks of AttentionChunk tokens (Llama-4's
	// chunked local attention on its RoPE layers: window.go); 0: none.
	ChunkedLayers  int
	AttentionChunk int
	// RopePositions and RotaryDim size vLLM's rotary-embedding table: the cosine and sine
	// of RotaryDim/2 frequencies at every position up to config.json's
	// max_position_embeddings (not max_model_len, and not the usable context the catalogue
	// may state instead), in the model's dtype, built once and kept whole on every GPU
	// (RotaryEmbeddingBase's cos_sin_cache). 0: no table is known (a model built in code).
	RopePositions int
	RotaryDim     int
}

// MLA is a latent-attention layer's ranks (config.json's q_lora_rank, kv_lora_rank,
// qk_nope_head_dim, qk_rope_head_dim, v_head_dim): every head's K and V come from one
// compressed latent of KVLoraRank plus a shared rotary key of QKRope, which is all the KV
// cache keeps per token and layer — on every tensor-parallel GPU, as vLLM replicates it.
type MLA struct {
	QLoraRank  int `json:"q_lora_rank,omitempty"`
	KVLoraRank int `json:"kv_lora_rank"`
	QKNope     int `json:"qk_nope_head_dim"`
	QKRope     int `json:"qk_rope_head_dim"`
	VHeadDim   int `json:"v_head_dim"`
}

// latentWidth is what one token keeps per layer in an MLA cache: the latent and the rotary
// key.
func (a MLA) latentWidth() int { return a.KVLoraRank + a.QKRope }

// attnParams is one layer's attention projections: Q, K, V and O for grouped-query
// attention; the query (through its low-rank factor where q_lora_rank is set), the KV
// down-projection with the rotary key, the K/V up-projection and O for latent attention.
func (m Model) attnParams() float64 {
	h, q := float64(m.Hidden), float64(m.Heads)
	if a := m.MLA; a != nil {
		qk := float64(a.QKNope + a.QKRope)
		query := h * q * qk
		if a.QLoraRank > 0 {
			r := float64(a.QLoraRank)
			query = h*r + r*q*qk
		}
		return query + h*float64(a.latentWidth()) + float64(a.KVLoraRank)*q*float64(a.QKNope+a.VHeadDim) + q*float64(a.VHeadDim)*h
	}
	kv, d := float64(m.KVHeads), float64(m.HeadDim)
	return h*(q+2*kv)*d + q*d*h
}

// MoE is a mixture-of-experts decoder's expert layers (Mixtral, Qwen-MoE, Llama-4,
// gpt-oss): in each MoE layer a router picks TopK of Experts routed experts per token,
// each a gated MLP of Intermediate, beside an always-on shared expert of
// SharedIntermediate (0: none). DenseLayers of the model's layers keep a dense MLP of
// Model.Intermediate instead (DeepSeek's first_k_dense_replace, Llama-4 Maverick's
// interleaving, Qwen's mlp_only_layers).
type MoE struct {
	Experts            int `json:"experts"`
	TopK               int `json:"experts_per_token"`
	Intermediate       int `json:"expert_intermediate_size"`
	SharedIntermediate int `json:"shared_intermediate_size,omitempty"`
	DenseLayers        int `json:"dense_layers,omitempty"`
}

// SameShapes reports whether m and o are one architecture: every shape the step model
// reads (not the name, id, context or published parameter count).
func (m Model) SameShapes(o Model) bool {
	same := m.Layers == o.Layers && m.Hidden == o.Hidden && m.Heads == o.Heads && m.KVHeads == o.KVHeads &&
		m.HeadDim == o.HeadDim && m.Intermediate == o.Intermediate && m.Vocab == o.Vocab &&
		m.TiedEmbeddings == o.TiedEmbeddings && m.Weights == o.Weights && (m.MoE == nil) == (o.MoE == nil)
	same = same && m.SlidingLayers == o.SlidingLayers && m.SlidingWindow == o.SlidingWindow
	same = same && m.BlockFP8 == o.BlockFP8 && m.AttentionBF16 == o.AttentionBF16 && (m.MLA == nil) == (o.MLA == nil) && (m.MLA == nil || *m.MLA == *o.MLA)
	return same && (m.MoE == nil || *m.MoE == *o.MoE)
}

// moeLayers is how many layers route to experts (0 for a dense model).
func (m Model) moeLayers() int {
	if m.MoE == nil {
		return 0
	}
	return m.Layers - m.MoE.DenseLayers
}

// denseLayers is how many layers run a dense MLP.
func (m Model) denseLayers() int { return m.Layers - m.moeLayers() }

// models is the catalogue: the embedded Hugging Face configs (catalogue.go).
var models = mustLoadCatalogue()

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
	return m.decoderLinearParams(false) + m.otherParams()
}

// otherParams are the parameters outside the decoder's linear layers: the embedding, the
// LM head (untied), the norms and the routers — what stays BF16 in a quantized checkpoint.
func (m Model) otherParams() float64 {
	h := float64(m.Hidden)
	emb := 2.0 // embedding and LM head
	if m.TiedEmbeddings {
		emb = 1
	}
	router := 0.0
	if m.MoE != nil {
		router = float64(m.moeLayers()) * h * float64(m.MoE.Experts)
	}
	return float64(m.Layers)*2*h + emb*float64(m.Vocab)*h + h + router
}

// decoderLinearParams are the attention projections and MLPs of every layer (with
// expertsOnly, the routed experts alone: the part an MXFP4 checkpoint quantizes).
func (m Model) decoderLinearParams(expertsOnly bool) float64 {
	h := float64(m.Hidden)
	attn := m.attnParams()
	dense := 3 * h * float64(m.Intermediate)
	experts := 0.0
	moe := 0.0
	if m.MoE != nil {
		experts = float64(m.MoE.Experts) * 3 * h * float64(m.MoE.Intermediate)
		moe = experts + 3*h*float64(m.MoE.SharedIntermediate)
	}
	if expertsOnly {
		return float64(m.moeLayers()) * experts
	}
	return float64(m.Layers)*attn + float64(m.denseLayers())*dense + float64(m.moeLayers())*moe
}

// ActiveParams is the parameters one token runs through: all but the routed experts it
// does not pick (the shape count for a dense model).
func (m Model) ActiveParams() float64 {
	p := m.ShapeParams()
	if m.MoE == nil {
		return p
	}
	unused := float64(m.MoE.Experts-m.MoE.TopK) * 3 * float64(m.Hidden) * float64(m.MoE.Intermediate)
	return p - float64(m.moeLayers())*unused
}

// WeightBytes is the weights' size: the published parameter count at two bytes (BF16), less
// what quantization saves on the decoder's linear layers (all of them for FP8 and NVFP4 but
// the attention projections a checkpoint leaves unquantized, the routed experts for MXFP4;
// embeddings, LM head, norms and routers stay BF16, as vLLM loads them).
func (m Model) WeightBytes() int64 {
	b := m.ParamsB * 1e9 * 2
	quantized := m.decoderLinearParams(false)
	if m.AttentionBF16 {
		quantized -= float64(m.Layers) * m.attnParams()
	}
	switch m.Weights {
	case WeightsFP8:
		b -= quantized * (2 - 1)
	case WeightsNVFP4:
		b -= quantized * (2 - fp4Bytes)
	case WeightsMXFP4:
		b -= m.decoderLinearParams(true) * (2 - fp4Bytes)
	}
	return int64(b)
}

// ropeTableBytes is the rotary-embedding table one GPU holds beside the weights (vLLM counts
// it in the model's loading memory): 2.5 GiB for Llama-4-Scout's 10,485,760 positions,
// 250 MiB for Mistral-Nemo's 1,024,000, 32 MiB at 131,072.
func (m Model) ropeTableBytes() int64 {
	return int64(m.RopePositions) * int64(m.RotaryDim) * 2
}

// KVBytesPerToken is K and V, fp16, for every layer and KV head (a latent-attention model's
// latent and rotary key: one copy).
func (m Model) KVBytesPerToken() int64 {
	if a := m.MLA; a != nil {
		return int64(m.Layers * a.latentWidth() * 2)
	}
	return int64(2 * m.Layers * m.KVHeads * m.HeadDim * 2)
}

// kvHeadsPerGPU: tensor parallelism splits the KV heads, and replicates them once there are
// more GPUs than heads (vLLM's rule).
func (m Model) kvHeadsPerGPU(tp int) int { return max(1, m.KVHeads/tp) }

// kvBytesPerTokenTP is the BF16 KV bytes of one token summed over tp GPUs (more than
// KVBytesPerToken where heads are replicated; an MLA cache is whole on every GPU).
func (m Model) kvBytesPerTokenTP(tp int) int64 {
	if m.MLA != nil {
		return m.KVBytesPerToken() * int64(tp)
	}
	return int64(2*m.Layers*m.kvHeadsPerGPU(tp)*m.HeadDim*2) * int64(tp)
}

// kvElemBytes is the bytes of one KV element: 1 in an FP8 cache, else 2 (BF16).
func kvElemBytes(fp8 bool) int64 {
	if fp8 {
		return 1
	}
	return 2
}

// CheckEP refuses expert parallelism over tp GPUs where it cannot run: a dense model, one
// GPU, or a degree that does not divide the routed experts (each rank holds whole experts).
func (m Model) CheckEP(tp int) error {
	switch {
	case m.MoE == nil:
		return fmt.Errorf("expert parallelism: %s is a dense model (no experts)", m.Name)
	case tp < 2:
		return fmt.Errorf("expert parallelism over %d GPU: needs at least 2", tp)
	case m.MoE.Experts%tp != 0:
		return fmt.Errorf("expert parallel size %d: does not divide %s's %d experts", tp, m.Name, m.MoE.Experts)
	}
	return nil
}

// CheckTP refuses a tensor-parallel degree the engine cannot shard the model over: 1–8 GPUs,
// dividing the query heads, and dividing or divided by the KV heads (vLLM's checks).
func (m Model) CheckTP(tp int) error {
	switch {
	case tp < 1 || tp > 8:
		return fmt.Errorf("tensor parallel size %d: must be in 1..8", tp)
	case m.Heads%tp != 0:
		return fmt.Errorf("tensor parallel size %d: does not divide %s's %d attention heads", tp, m.Name, m.Heads)
	case m.MLA == nil && m.KVHeads%tp != 0 && tp%m.KVHeads != 0:
		return fmt.Errorf("tensor parallel size %d: neither divides nor is a multiple of %s's %d KV heads", tp, m.Name, m.KVHeads)
	}
	return nil
}

// LookupHF finds a catalogue model by the Hugging Face id a server was started with: the
// catalogue's id exactly, else the same repository name under another organisation, a
// base/chat/instruct variant (same shapes), or a quantized re-publication whose name ends
// in a quantization suffix (RedHatAI's and Neural Magic's "-FP8-dynamic", "-FP8",
// "-quantized.w8a8"…): the model's shapes are the base model's, and the dtype is the
// caller's to set (Quantize). A checkpoint the catalogue lists (Checkpoint) comes with its
// own quantization, which may leave layers in BF16. Case does not matter.
func LookupHF(id string) (Model, error) {
	for _, m := range append(slices.Clip(checkpoints), models...) {
		if strings.EqualFold(m.HF, id) {
			return m, nil
		}
	}
	want := hfStem(id)
	for _, m := range models {
		if want != "" && hfStem(m.HF) == want {
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("LLM %q: no catalogue model has this Hugging Face id (known: %s)", id, strings.Join(hfIDs(), ", "))
}

// hfSuffixes are the name endings that quantized re-publications of one architecture add.
var hfSuffixes = []string{"-fp8-dynamic", "-fp8", "-quantized.w8a8", "-quantized.w8a16", "-quantized.w4a16"}

// hfVariants are the name segments that tell a release's variants of the same weights'
// shapes apart: the base (pretrained) model and its chat or instruction-tuned one, and the
// "-hf" of a Transformers conversion. They may stand before a version ("Mixtral-8x7B-v0.1"
// is "Mixtral-8x7B-Instruct-v0.1"'s base, "Mistral-Nemo-Base-2407" "Mistral-Nemo-Instruct-
// 2407"'s), so they are dropped wherever they stand; a version or size segment is kept, so
// "Mistral-7B-v0.1" (a sliding window, another RoPE base) is not "Mistral-7B-Instruct-v0.2".
// A base model's vocabulary may differ from its instruct model's by a few hundred control
// tokens (Mixtral-8x22B: 32,000 and 32,768), under 0.01% of the weights.
var hfVariants = []string{"instruct", "chat", "base", "hf", "it", "pt"}

// hfStem is an id's repository name, lower case, with hfSuffixes removed from its end and
// hfVariants segments removed.
func hfStem(id string) string {
	_, name, ok := strings.Cut(strings.ToLower(strings.TrimSpace(id)), "/")
	if !ok {
		name = strings.ToLower(strings.TrimSpace(id))
	}
	for changed := true; changed; {
		changed = false
		for _, s := range hfSuffixes {
			if strings.HasSuffix(name, s) && len(name) > len(s) {
				name, changed = strings.TrimSuffix(name, s), true
			}
		}
	}
	// Meta renamed its Llama 3 repositories from "Meta-Llama-3.1-8B-Instruct" to
	// "Llama-3.1-8B-Instruct"; the old name redirects to the new.
	name = strings.TrimPrefix(name, "meta-")
	segs := strings.Split(name, "-")
	kept := segs[:0]
	for i, s := range segs {
		if i > 0 && slices.Contains(hfVariants, s) {
			continue
		}
		kept = append(kept, s)
	}
	return strings.Join(kept, "-")
}

func hfIDs() []string {
	out := make([]string, len(models))
	for i, m := range models {
		out[i] = m.HF
	}
	sort.Strings(out)
	return out
}
