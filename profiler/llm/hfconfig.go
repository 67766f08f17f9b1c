package llm

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// denseTypes are the Hugging Face model_type values of decoders the step model describes:
// grouped-query attention and a gated MLP, one dense layer kind (Llama and its descendants).
var denseTypes = []string{"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "granite", "olmo2", "internlm2", "exaone"}

// moeFields name a mixture-of-experts config (the experts' count under its families' names),
// mlaFields a multi-head-latent-attention one (DeepSeek): shapes the dense step model does
// not describe.
var (
	moeFields = []string{"num_local_experts", "n_routed_experts", "num_experts"}
	mlaFields = []string{"kv_lora_rank"}
)

// hfConfig is the part of a Hugging Face config.json the step model reads.
type hfConfig struct {
	ModelType          string   `json:"model_type"`
	NameOrPath         string   `json:"_name_or_path"`
	HiddenSize         *int     `json:"hidden_size"`
	Layers             *int     `json:"num_hidden_layers"`
	Heads              *int     `json:"num_attention_heads"`
	KVHeads            *int     `json:"num_key_value_heads"`
	HeadDim            *int     `json:"head_dim"`
	Intermediate       *int     `json:"intermediate_size"`
	Vocab              *int     `json:"vocab_size"`
	MaxPosition        *int     `json:"max_position_embeddings"`
	TieWordEmbeddings  *bool    `json:"tie_word_embeddings"`
	TorchDtype         string   `json:"torch_dtype"`
	SlidingWindow      *float64 `json:"sliding_window"`
	QuantizationConfig any      `json:"quantization_config"`
}

// ReadConfigs reads every config a path names: a config.json file, or a directory holding
// config.json files (directly, or one level down, one per model directory).
func ReadConfigs(path string) ([]Model, error) {
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
	if _, err := os.Stat(filepath.Join(path, "config.json")); err == nil {
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
	for _, f := range files {
		m, err := ReadConfigFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// ReadConfigFile reads one Hugging Face config.json (ReadConfig); the model's name is its
// directory's (Llama-3.1-8B/config.json: "llama-3.1-8b"), or the file's without .json; its
// engine id (hf_model) the config's _name_or_path, else the directory it is in.
func ReadConfigFile(path string) (Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Model{}, err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	if name == "config" {
		name = filepath.Base(filepath.Dir(path))
	}
	m, err := ReadConfig(path, strings.ToLower(name), data)
	if err == nil && m.HF == "" && filepath.Base(path) == "config.json" {
		// No _name_or_path: the engine loads the model from the config's directory.
		m.HF = filepath.Dir(path)
	}
	return m, err
}

// ReadConfig reads a dense decoder's shapes from a Hugging Face config.json: hidden_size,
// num_hidden_layers, num_attention_heads, num_key_value_heads (default: the heads),
// head_dim (default hidden/heads), intermediate_size, vocab_size, max_position_embeddings,
// tie_word_embeddings. A mixture-of-experts or latent-attention config, a quantized
// checkpoint, or a model_type outside the dense families is refused naming the field, as
// is a missing or out-of-range field. Errors name file, field and value.
func ReadConfig(file, name string, data []byte) (Model, error) {
	bad := func(field string, v any, rule string) error {
		return fmt.Errorf("%s: %s: %v: %s", file, field, v, rule)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Model{}, fmt.Errorf("%s: not a JSON object: %v", file, err)
	}
	var c hfConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return Model{}, fmt.Errorf("%s: %v", file, err)
	}
	for _, f := range moeFields {
		if v, ok := raw[f]; ok && string(v) != "null" && string(v) != "0" {
			return Model{}, bad(f, string(v), "a mixture-of-experts model: the step model describes dense decoders only (MoE is not modelled yet)")
		}
	}
	for _, f := range mlaFields {
		if v, ok := raw[f]; ok && string(v) != "null" {
			return Model{}, bad(f, string(v), "multi-head latent attention (DeepSeek): not modelled yet")
		}
	}
	if c.QuantizationConfig != nil {
		return Model{}, bad("quantization_config", "present", "a quantized checkpoint: the step model times BF16 weights only (weight quantization is not modelled yet)")
	}
	if c.ModelType == "" {
		return Model{}, bad("model_type", `""`, "missing: the architecture must be named")
	}
	if !slices.Contains(denseTypes, c.ModelType) {
		return Model{}, bad("model_type", fmt.Sprintf("%q", c.ModelType), "not a dense decoder family the step model describes ("+strings.Join(denseTypes, ", ")+")")
	}
	need := func(field string, p *int, lo int) (int, error) {
		if p == nil {
			return 0, bad(field, "missing", fmt.Sprintf("required for model_type %q", c.ModelType))
		}
		if *p < lo || *p > 1<<24 {
			return 0, bad(field, *p, fmt.Sprintf("must be in [%d, %d]", lo, 1<<24))
		}
		return *p, nil
	}
	m := Model{Name: name, HF: c.NameOrPath}
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
			return Model{}, bad("num_key_value_heads", m.KVHeads, fmt.Sprintf("must divide num_attention_heads (%d)", m.Heads))
		}
	}
	m.HeadDim = m.Hidden / m.Heads
	if c.HeadDim != nil {
		if m.HeadDim, err = need("head_dim", c.HeadDim, 1); err != nil {
			return Model{}, err
		}
	} else if m.Hidden%m.Heads != 0 {
		return Model{}, bad("num_attention_heads", m.Heads, fmt.Sprintf("must divide hidden_size (%d) when head_dim is not given", m.Hidden))
	}
	m.TiedEmbeddings = c.TieWordEmbeddings != nil && *c.TieWordEmbeddings
	m.ParamsB = math.Round(m.ShapeParams()/1e7) / 100
	return m, nil
}
