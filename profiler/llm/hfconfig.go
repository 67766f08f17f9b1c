package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/plan-dev/plan/formats"
)

// denseTypes are the Hugging Face model_type values of decoders the step model describes
// with one dense layer kind: grouped-query attention and a gated MLP (Llama and its
// descendants; Gemma-3's language model).
var denseTypes = []string{"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text", "granite", "olmo2", "internlm2", "exaone"}

// moeTypes are the mixture-of-experts families: the same attention, and MLPs that route
// each token to top-k experts (Mixtral, Qwen-MoE, Llama-4, gpt-oss, Phi-MoE, OLMoE).
var moeTypes = []string{"mixtral", "qwen2_moe", "qwen3_moe", "llama4_text", "gpt_oss", "phimoe", "olmoe", "deepseek_v2", "deepseek_v3", "kimi_k2"}

// wrapperTypes hold their language model's config under text_config (multimodal
// checkpoints whose text decoder is what serves tokens).
var wrapperTypes = []string{"llama4", "gemma3", "mistral3"}

// hfConfig is the part of a Hugging Face config.json the step model reads.
type hfConfig struct {
	ModelType         string   `json:"model_type"`
	NameOrPath        string   `json:"_name_or_path"`
	HiddenSize        *int     `json:"hidden_size"`
	Layers            *int     `json:"num_hidden_layers"`
	Heads             *int     `json:"num_attention_heads"`
	KVHeads           *int     `json:"num_key_value_heads"`
	HeadDim           *int     `json:"head_dim"`
	Intermediate      *int     `json:"intermediate_size"`
	Vocab             *int     `json:"vocab_size"`
	MaxPosition       *int     `json:"max_position_embeddings"`
	PartialRotary     *float64 `json:"partial_rotary_factor"`
	TieWordEmbeddings *bool    `json:"tie_word_embeddings"`
	TorchDtype        string   `json:"torch_dtype"`
	SlidingWindow     *float64 `json:"sliding_window"`
	// Sliding-window attention (window.go).
	LayerTypes           []string `json:"layer_types"`
	SlidingWindowPattern *int     `json:"sliding_window_pattern"`
	UseSlidingWindow     *bool    `json:"use_sliding_window"`
	// Chunked local attention (Llama-4, window.go).
	AttentionChunkSize  *int            `json:"attention_chunk_size"`
	NoRopeLayers        []int           `json:"no_rope_layers"`
	NoRopeLayerInterval *int            `json:"no_rope_layer_interval"`
	QuantizationConfig  json.RawMessage `json:"quantization_config"`
	TextConfig          json.RawMessage `json:"text_config"`
	// Mixture of experts, under each family's names.
	NumLocalExperts   *int  `json:"num_local_experts"` // Mixtral, Llama-4, gpt-oss
	NRoutedExperts    *int  `json:"n_routed_experts"`  // DeepSeek
	NumExperts        *int  `json:"num_experts"`       // Qwen-MoE, OLMoE
	ExpertsPerTok     *int  `json:"num_experts_per_tok"`
	ExpertsPerToken   *int  `json:"experts_per_token"` // gpt-oss
	MoEIntermediate   *int  `json:"moe_intermediate_size"`
	SharedIntermedate *int  `json:"shared_expert_intermediate_size"` // Qwen2-MoE
	NSharedExperts    *int  `json:"n_shared_experts"`                // DeepSeek
	FirstKDense       *int  `json:"first_k_dense_replace"`           // DeepSeek
	DecoderSparseStep *int  `json:"decoder_sparse_step"`             // Qwen-MoE
	MLPOnlyLayers     []int `json:"mlp_only_layers"`                 // Qwen-MoE
	InterleaveMoEStep *int  `json:"interleave_moe_layer_step"`       // Llama-4
	IntermediateMLP   *int  `json:"intermediate_size_mlp"`           // Llama-4 dense layers
	// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2).
	QLoraRank  *int `json:"q_lora_rank"`
	KVLoraRank *int `json:"kv_lora_rank"`
	QKNope     *int `json:"qk_nope_head_dim"`
	QKRope     *int `json:"qk_rope_head_dim"`
	VHeadDim   *int `json:"v_head_dim"`
}

// MaxConfigBytes bounds one config.json: published configs, id2label maps and all, are
// kilobytes; a larger file is a wrong path, not a config.
const MaxConfigBytes = 16 << 20

// ReadConfigs reads every config a path names: a config.json file, or a directory holding
// config.json files (directly, or one level down, one per model directory). Every file goes
// through formats' reader (ReadText, ReadTextIn): a FIFO, a device, a file over
// MaxConfigBytes or, without --follow-links, a file that resolves outside the directory
// named is refused before it is read. A cancelled ctx (SIGINT, SIGTERM) stops the reading
// between two files.
func ReadConfigs(ctx context.Context, path string) ([]Model, error) {
	// Stat, not open: opening a FIFO blocks (formats.ReadText refuses it before opening).
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		m, err := ReadConfigFile(path)
		if err != nil {
			return nil, err
		}
		return []Model{m}, nil
	}
	var files []string
	if _, err := os.Lstat(filepath.Join(path, "config.json")); err == nil {
		files = append(files, filepath.Join(path, "config.json"))
	}
	more, _ := filepath.Glob(filepath.Join(path, "*", "config.json"))
	files = append(files, more...)
	jsons, _ := filepath.Glob(filepath.Join(path, "*.json"))
	for _, f := range jsons {
		if filepath.Base(f) != "config.json" {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no config.json in the directory or its subdirectories", path)
	}
	var out []Model
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: interrupted after %d of %d configs: %w", path, i, len(files), context.Cause(ctx))
		}
		data, err := formats.ReadTextIn(path, f, MaxConfigBytes)
		if err != nil {
			return nil, err
		}
		m, err := readConfigData(f, data)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// ReadConfigFile reads one Hugging Face config.json (ReadConfig) through formats.ReadText (a
// regular file, no link out of its directory, at most MaxConfigBytes); the model's name is
// its directory's (Llama-3.2-3B/config.json: "llama-3.2-3b"), or the file's without .json.
func ReadConfigFile(path string) (Model, error) {
	data, err := formats.ReadText(path, MaxConfigBytes)
	if err != nil {
		return Model{}, err
	}
	return readConfigData(path, data)
}

// readConfigData is ReadConfig of file path's content, named as ReadConfigFile says. The
// engine id (hf_model) is the config's _name_or_path when that is a Hugging Face repository
// id (HubID), else none: a config's directory, or a _name_or_path that is a local path,
// exists on the planning machine only, and an export passing it to an engine elsewhere would
// load nothing (the exports then require hf_model, naming the field).
func readConfigData(path string, data []byte) (Model, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	if name == "config" {
		name = filepath.Base(filepath.Dir(path))
	}
	m, err := ReadConfig(path, strings.ToLower(name), data)
	if err != nil {
		return Model{}, err
	}
	if !HubID(m.HF) {
		m.HF = ""
	}
	return m, nil
}

// HubID reports whether id is a Hugging Face repository id: NAME or OWNER/NAME, each part of
// letters, digits, '-', '_' and '.', starting with a letter or digit, not holding "..", the
// name at most 96 characters (the Hub's rules). A local path (/data/ckpt, ./out, ~/m) is not.
func HubID(id string) bool {
	owner, name, scoped := strings.Cut(id, "/")
	if !scoped {
		owner, name = "", id
	}
	part := func(s string, most int) bool {
		if s == "" || len(s) > most || strings.Contains(s, "..") || !isAlnum(s[0]) {
			return false
		}
		for i := 0; i < len(s); i++ {
			if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
				return false
			}
		}
		return true
	}
	return part(name, 96) && (!scoped || part(owner, 96))
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ReadConfig reads a decoder's shapes from a Hugging Face config.json: hidden_size,
// num_hidden_layers, num_attention_heads, num_key_value_heads (default: the heads),
// head_dim (default hidden/heads), intermediate_size, vocab_size, max_position_embeddings,
// tie_word_embeddings; for a mixture-of-experts family the experts (readMoE); a quantized
// checkpoint's weight dtype (readQuantization); a multimodal wrapper's text_config. A
// latent-attention config, a model_type outside the families, or a missing or out-of-range
// field is refused; errors name file, field and value.
func ReadConfig(file, name string, data []byte) (Model, error) {
	bad := func(field string, v any, rule string) error {
		return fmt.Errorf("%s: %s: %v: %s", file, field, v, rule)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Model{}, fmt.Errorf("%s: not a JSON object: %v", file, err)
	}
	var top hfConfig
	if err := json.Unmarshal(data, &top); err != nil {
		return Model{}, fmt.Errorf("%s: %v", file, err)
	}
	if v, ok := raw["_name_or_path"]; ok && !cleanText(v, top.NameOrPath) {
		// encoding/json turns bytes that are not UTF-8 (and lone surrogate escapes) into
		// U+FFFD: the id written to the profile and the exports would name no model.
		return Model{}, bad("_name_or_path", strconv.Quote(strings.Trim(string(v), `"`)), "not UTF-8 text (or holds control characters): no model id or path")
	}
	c, prefix := top, ""
	if slices.Contains(wrapperTypes, top.ModelType) {
		if len(top.TextConfig) == 0 || string(top.TextConfig) == "null" {
			return Model{}, bad("text_config", "missing", fmt.Sprintf("model_type %q keeps its language model there", top.ModelType))
		}
		raw = nil
		if err := json.Unmarshal(top.TextConfig, &raw); err != nil {
			return Model{}, bad("text_config", "not an object", err.Error())
		}
		c = hfConfig{}
		if err := json.Unmarshal(top.TextConfig, &c); err != nil {
			return Model{}, fmt.Errorf("%s: text_config: %v", file, err)
		}
		prefix = "text_config."
		if c.ModelType == "" {
			c.ModelType = top.ModelType + "_text"
		}
		if len(c.QuantizationConfig) == 0 {
			c.QuantizationConfig = top.QuantizationConfig
		}
	}
	if c.ModelType == "" {
		return Model{}, bad(prefix+"model_type", `""`, "missing: the architecture must be named")
	}
	familyDefaults(&c)
	moe := slices.Contains(moeTypes, c.ModelType)
	if !moe && !slices.Contains(denseTypes, c.ModelType) {
		return Model{}, bad(prefix+"model_type", fmt.Sprintf("%q", c.ModelType), "not a decoder family the step model describes (dense: "+strings.Join(denseTypes, ", ")+"; mixture-of-experts: "+strings.Join(moeTypes, ", ")+")")
	}
	need := func(field string, p *int, lo int) (int, error) {
		if p == nil {
			return 0, bad(prefix+field, "missing", fmt.Sprintf("required for model_type %q", c.ModelType))
		}
		if *p < lo || *p > 1<<24 {
			return 0, bad(prefix+field, *p, fmt.Sprintf("must be in [%d, %d]", lo, 1<<24))
		}
		return *p, nil
	}
	m := Model{Name: name, HF: top.NameOrPath}
	var err error
	if m.Hidden, err = need("hidden_size", c.HiddenSize, 64); err != nil {
		return Model{}, err
	}
	if m.Layers, err = need("num_hidden_layers", c.Layers, 1); err != nil {
		return Model{}, err
	}
	if m.Heads, err = need("num_attention_heads", c.Heads, 1); err != nil {
		return Model{}, err
	}
	if m.Intermediate, err = need("intermediate_size", c.Intermediate, 1); err != nil {
		return Model{}, err
	}
	if m.Vocab, err = need("vocab_size", c.Vocab, 1); err != nil {
		return Model{}, err
	}
	if m.Context, err = need("max_position_embeddings", c.MaxPosition, 1); err != nil {
		return Model{}, err
	}
	m.KVHeads = m.Heads
	if c.KVHeads != nil {
		if m.KVHeads, err = need("num_key_value_heads", c.KVHeads, 1); err != nil {
			return Model{}, err
		}
		if m.KVHeads > m.Heads || m.Heads%m.KVHeads != 0 {
			return Model{}, bad(prefix+"num_key_value_heads", m.KVHeads, fmt.Sprintf("must divide num_attention_heads (%d)", m.Heads))
		}
	}
	m.HeadDim = m.Hidden / m.Heads
	if c.HeadDim != nil {
		if m.HeadDim, err = need("head_dim", c.HeadDim, 1); err != nil {
			return Model{}, err
		}
	} else if m.Hidden%m.Heads != 0 {
		return Model{}, bad(prefix+"num_attention_heads", m.Heads, fmt.Sprintf("must divide hidden_size (%d) when head_dim is not given", m.Hidden))
	}
	m.TiedEmbeddings = c.TieWordEmbeddings != nil && *c.TieWordEmbeddings
	if err := readWindow(&m, c, func(f string, v any, r string) error { return bad(prefix+f, v, r) }); err != nil {
		return Model{}, err
	}
	if moe {
		if err := readMoE(&m, c, func(f string, v any, r string) error { return bad(prefix+f, v, r) }, need); err != nil {
			return Model{}, err
		}
	} else {
		for _, f := range []string{"num_local_experts", "n_routed_experts", "num_experts"} {
			if v, ok := raw[f]; ok && string(v) != "null" && string(v) != "0" {
				return Model{}, bad(prefix+f, string(v), fmt.Sprintf("experts in a model_type %q config: a mixture-of-experts model names its family (%s)", c.ModelType, strings.Join(moeTypes, ", ")))
			}
		}
	}
	if c.KVLoraRank != nil {
		if err := readMLA(&m, c, need); err != nil {
			return Model{}, err
		}
	}
	if err := readChunked(&m, c, func(f string, v any, r string) error { return bad(prefix+f, v, r) }); err != nil {
		return Model{}, err
	}
	if err := readRope(&m, c, func(f string, v any, r string) error { return bad(prefix+f, v, r) }); err != nil {
		return Model{}, err
	}
	q, err := readQuantization(c.QuantizationConfig, func(f string, v any, r string) error { return bad(f, v, r) })
	if err != nil {
		return Model{}, err
	}
	q.apply(&m)
	if m.Weights == WeightsMXFP4 && m.MoE == nil {
		return Model{}, bad("quantization_config.quant_method", "mxfp4", "quantizes experts: the model has none")
	}
	m.ParamsB = paramsB(m.ShapeParams())
	return m, nil
}

// cleanText reports whether a JSON string field is text an engine id can be: its raw bytes
// UTF-8, its decoded value free of U+FFFD (what the decoder made of bad bytes or lone
// surrogates) and of control characters.
func cleanText(raw json.RawMessage, decoded string) bool {
	return utf8.Valid(raw) && !strings.ContainsRune(decoded, utf8.RuneError) && !strings.ContainsFunc(decoded, unicode.IsControl)
}

// paramsB is a parameter count in billions as profiles state it: to 0.01B, and to three
// significant digits below 0.01B, so a small model's count is not rounded to 0 (which the
// profile's validation refuses: params_billion must be > 0).
func paramsB(params float64) float64 {
	b := math.Round(params/1e7) / 100
	if b > 0 || params <= 0 {
		return b
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(params/1e9, 'g', 3, 64), 64)
	return v
}

// familyDefaults fills what a family's config may leave to transformers' defaults:
// Gemma-3's text config (Gemma3TextConfig: vocab_size 262208, max_position_embeddings
// 131072, tied embeddings).
func familyDefaults(c *hfConfig) {
	if c.ModelType != "gemma3_text" {
		return
	}
	def := func(p **int, v int) {
		if *p == nil {
			*p = &v
		}
	}
	def(&c.Vocab, 262208)
	def(&c.MaxPosition, 131072)
	if c.TieWordEmbeddings == nil {
		t := true
		c.TieWordEmbeddings = &t
	}
}

// readMoE reads the experts of a mixture-of-experts config: their count
// (num_local_experts, n_routed_experts or num_experts), experts per token
// (num_experts_per_tok or experts_per_token), an expert's intermediate size
// (moe_intermediate_size, else intermediate_size), shared experts (Qwen2-MoE's
// shared_expert_intermediate_size, DeepSeek's n_shared_experts, Llama-4's one of
// intermediate_size) and which layers stay dense (first_k_dense_replace, decoder_sparse_step
// and mlp_only_layers, interleave_moe_layer_step with intermediate_size_mlp).
func readMoE(m *Model, c hfConfig, bad func(string, any, string) error, need func(string, *int, int) (int, error)) error {
	e := &MoE{}
	field, p := "num_local_experts", c.NumLocalExperts
	for _, alt := range []struct {
		f string
		p *int
	}{{"n_routed_experts", c.NRoutedExperts}, {"num_experts", c.NumExperts}} {
		if p == nil && alt.p != nil {
			field, p = alt.f, alt.p
		}
	}
	var err error
	if e.Experts, err = need(field, p, 2); err != nil {
		return err
	}
	kf, kp := "num_experts_per_tok", c.ExpertsPerTok
	if kp == nil && c.ExpertsPerToken != nil {
		kf, kp = "experts_per_token", c.ExpertsPerToken
	}
	if e.TopK, err = need(kf, kp, 1); err != nil {
		return err
	}
	if e.TopK > e.Experts {
		return bad(kf, e.TopK, fmt.Sprintf("more experts per token than the %d experts (%s)", e.Experts, field))
	}
	e.Intermediate = m.Intermediate
	if c.MoEIntermediate != nil {
		if e.Intermediate, err = need("moe_intermediate_size", c.MoEIntermediate, 1); err != nil {
			return err
		}
	}
	switch {
	case c.SharedIntermedate != nil:
		if e.SharedIntermediate, err = need("shared_expert_intermediate_size", c.SharedIntermedate, 0); err != nil {
			return err
		}
	case c.NSharedExperts != nil:
		n, err := need("n_shared_experts", c.NSharedExperts, 0)
		if err != nil {
			return err
		}
		e.SharedIntermediate = n * e.Intermediate
	case c.ModelType == "llama4_text":
		e.SharedIntermediate = e.Intermediate // one shared expert per MoE layer
	}
	moeLayer := func(int) bool { return true }
	switch {
	case c.FirstKDense != nil:
		k, err := need("first_k_dense_replace", c.FirstKDense, 0)
		if err != nil {
			return err
		}
		moeLayer = func(i int) bool { return i >= k }
	case c.InterleaveMoEStep != nil:
		s, err := need("interleave_moe_layer_step", c.InterleaveMoEStep, 1)
		if err != nil {
			return err
		}
		moeLayer = func(i int) bool { return (i+1)%s == 0 }
	case c.DecoderSparseStep != nil || len(c.MLPOnlyLayers) > 0:
		s := 1
		if c.DecoderSparseStep != nil {
			if s, err = need("decoder_sparse_step", c.DecoderSparseStep, 1); err != nil {
				return err
			}
		}
		moeLayer = func(i int) bool { return !slices.Contains(c.MLPOnlyLayers, i) && (i+1)%s == 0 }
	}
	for i := range m.Layers {
		if !moeLayer(i) {
			e.DenseLayers++
		}
	}
	if e.DenseLayers == m.Layers {
		return bad("num_hidden_layers", m.Layers, "no layer routes to experts (check first_k_dense_replace, decoder_sparse_step, mlp_only_layers, interleave_moe_layer_step)")
	}
	if c.ModelType == "llama4_text" {
		// Llama-4's dense layers run intermediate_size_mlp; intermediate_size is the experts'.
		if c.IntermediateMLP != nil {
			if m.Intermediate, err = need("intermediate_size_mlp", c.IntermediateMLP, 1); err != nil {
				return err
			}
		}
	}
	m.MoE = e
	return nil
}

// readRope sizes the rotary-embedding table vLLM builds (Model.RopePositions): every
// position up to max_position_embeddings, over the rotary part of a head — head_dim ×
// partial_rotary_factor (Phi-3-small, GLM and StableLM rotate part of each head), a latent
// model's qk_rope_head_dim.
func readRope(m *Model, c hfConfig, bad func(string, any, string) error) error {
	dim := float64(m.HeadDim)
	if m.MLA != nil {
		dim = float64(m.MLA.QKRope)
	} else if f := c.PartialRotary; f != nil {
		if !(*f > 0 && *f <= 1) {
			return bad("partial_rotary_factor", *f, "must be in (0, 1]")
		}
		dim *= *f
	}
	m.RopePositions, m.RotaryDim = m.Context, int(dim)
	return nil
}

// readMLA reads a latent-attention config's ranks (kv_lora_rank, qk_nope_head_dim,
// qk_rope_head_dim, v_head_dim required; q_lora_rank null or absent where the query is
// projected at full rank, as in DeepSeek-V2-Lite).
func readMLA(m *Model, c hfConfig, need func(string, *int, int) (int, error)) error {
	a := &MLA{}
	var err error
	if a.KVLoraRank, err = need("kv_lora_rank", c.KVLoraRank, 1); err != nil {
		return err
	}
	if a.QKNope, err = need("qk_nope_head_dim", c.QKNope, 1); err != nil {
		return err
	}
	if a.QKRope, err = need("qk_rope_head_dim", c.QKRope, 1); err != nil {
		return err
	}
	if a.VHeadDim, err = need("v_head_dim", c.VHeadDim, 1); err != nil {
		return err
	}
	if c.QLoraRank != nil {
		if a.QLoraRank, err = need("q_lora_rank", c.QLoraRank, 1); err != nil {
			return err
		}
	}
	m.MLA = a
	// The heads' sizes are the latent's, not hidden/heads: the attention kernel works on
	// the latent (head_dim is not what sizes the cache).
	m.HeadDim = a.QKNope + a.QKRope
	m.KVHeads = m.Heads
	return nil
}

// readQuantization maps a checkpoint's quantization_config to the weight dtype it runs in:
// fp8 (quant_method fp8, block-scaled where it gives weight_block_size; modelopt FP8; compressed-tensors 8-bit float weights), mxfp4
// (gpt-oss), nvfp4 (modelopt NVFP4; compressed-tensors 4-bit float weights). INT8 and INT4
// methods (AWQ, GPTQ, bitsandbytes, compressed-tensors integer) are refused: no measured
// dense GEMM table times them. Its ignore list (compressed-tensors' ignore, vLLM's
// ignored_layers, Hugging Face's modules_to_not_convert, ModelOpt's exclude_modules) says
// which linear layers stay BF16; the step model reads whether the attention projections do.
func readQuantization(raw json.RawMessage, bad func(string, any, string) error) (quantization, error) {
	w, block, err := readQuantMethod(raw, bad)
	if err != nil || w == WeightsBF16 {
		return quantization{weights: w, blockFP8: block}, err
	}
	var lists map[string]json.RawMessage
	_ = json.Unmarshal(raw, &lists) // an object: readQuantMethod read it
	var rules []ignoreRule
	for _, f := range []string{"ignore", "ignored_layers", "modules_to_not_convert", "exclude_modules"} {
		v, ok := lists[f]
		if !ok || string(v) == "null" {
			continue
		}
		var entries []string
		if err := json.Unmarshal(v, &entries); err != nil {
			return quantization{}, bad("quantization_config."+f, string(v), "must be a list of module names or patterns")
		}
		for i, e := range entries {
			r, err := parseIgnoreRule(e)
			if err != nil {
				return quantization{}, bad(fmt.Sprintf("quantization_config.%s[%d]", f, i), strconv.Quote(e), err.Error())
			}
			rules = append(rules, r)
		}
	}
	return quantization{weights: w, blockFP8: block, ignore: rules}, nil
}

// quantization is what a checkpoint's quantization_config says: the weight dtype, FP8
// block scaling, and the modules it leaves unquantized (its ignore list, in any of the
// formats' names for it).
type quantization struct {
	weights  WeightDType
	blockFP8 bool
	ignore   []ignoreRule
}

// apply sets m's weight dtype from q, and whether its attention projections stay BF16 (a
// quantized checkpoint whose ignore list leaves every layer's out).
func (q quantization) apply(m *Model) {
	m.Weights, m.BlockFP8 = q.weights, q.blockFP8
	m.AttentionBF16 = (m.Weights == WeightsFP8 || m.Weights == WeightsNVFP4) && m.attentionUnquantized(q.ignore)
}

// readQuantMethod is readQuantization's method and weight format.
func readQuantMethod(raw json.RawMessage, bad func(string, any, string) error) (WeightDType, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return WeightsBF16, false, nil
	}
	var q struct {
		BlockSize    []int  `json:"weight_block_size"`
		Method       string `json:"quant_method"`
		Algo         string `json:"quant_algo"`
		ConfigGroups map[string]struct {
			Weights *struct {
				NumBits int    `json:"num_bits"`
				Type    string `json:"type"`
			} `json:"weights"`
		} `json:"config_groups"`
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		return "", false, bad("quantization_config", "not an object", err.Error())
	}
	const f = "quantization_config.quant_method"
	switch strings.ToLower(q.Method) {
	case "fp8", "fbgemm_fp8":
		return WeightsFP8, len(q.BlockSize) > 0, nil
	case "mxfp4":
		return WeightsMXFP4, false, nil
	case "modelopt", "modelopt_fp4":
		switch strings.ToUpper(q.Algo) {
		case "FP8":
			return WeightsFP8, false, nil
		case "NVFP4":
			return WeightsNVFP4, false, nil
		}
		return "", false, bad("quantization_config.quant_algo", fmt.Sprintf("%q", q.Algo), "modelopt: only FP8 and NVFP4 are modelled")
	case "compressed-tensors":
		keys := make([]string, 0, len(q.ConfigGroups))
		for k := range q.ConfigGroups {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w := q.ConfigGroups[k].Weights
			if w == nil {
				continue
			}
			switch {
			case w.Type == "float" && w.NumBits == 8:
				return WeightsFP8, false, nil
			case w.Type == "float" && w.NumBits == 4:
				return WeightsNVFP4, false, nil
			}
			return "", false, bad("quantization_config.config_groups."+k+".weights", fmt.Sprintf("%d-bit %s", w.NumBits, w.Type), "integer weights: no measured kernel table times INT8/INT4 dense GEMMs (FP8, MXFP4 and NVFP4 are modelled)")
		}
		return "", false, bad("quantization_config.config_groups", "no weights", "compressed-tensors: names no weight format")
	case "":
		return "", false, bad(f, `""`, "missing")
	}
	return "", false, bad(f, fmt.Sprintf("%q", q.Method), "not modelled: no measured kernel table times it (fp8, mxfp4, modelopt FP8/NVFP4 and compressed-tensors FP8/NVFP4 are)")
}
