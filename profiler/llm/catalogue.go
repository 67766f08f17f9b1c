package llm

import (
	"embed"
	"encoding/json"
	"fmt"
)

// The catalogue is Hugging Face config.json subsets, one file per model, with an index of
// each model's HF id, published parameter count and source (catalogue/README.md). A model
// joins by its file and index entry alone.
//
//go:embed catalogue/*.json
var catalogueFS embed.FS

// CatalogueEntry is one model's index entry.
type CatalogueEntry struct {
	Name    string  `json:"name"`
	HF      string  `json:"hf"`
	ParamsB float64 `json:"params_b"`
	// ActiveParamsB is a mixture-of-experts model's published parameters per token.
	ActiveParamsB float64 `json:"active_params_b,omitempty"`
	// Context overrides max_position_embeddings where the usable context differs
	// (ContextNote says why).
	Context     int    `json:"context,omitempty"`
	ContextNote string `json:"context_note,omitempty"`
	Source      string `json:"source"`
	// Checkpoints are quantized re-publications whose quantization differs from what
	// vLLM's online --quantization of the same dtype does (layers they leave in BF16).
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
}

// Checkpoint is a quantized re-publication of a catalogue model: its Hugging Face id, its
// config.json's quantization_config (what ReadConfig reads from the checkpoint itself) and
// where that comes from.
type Checkpoint struct {
	HF                 string          `json:"hf"`
	QuantizationConfig json.RawMessage `json:"quantization_config"`
	Source             string          `json:"source"`
}

// checkpoints are the catalogue's quantized re-publications, read (loadCheckpoints).
var checkpoints = mustLoad(loadCheckpoints)

// loadCheckpoints reads each index entry's checkpoints: the base model with the
// checkpoint's quantization_config applied, named by the checkpoint's id.
func loadCheckpoints() ([]Model, error) {
	var out []Model
	for _, e := range Catalogue() {
		for i, c := range e.Checkpoints {
			base, err := Lookup(e.Name)
			if err != nil {
				return nil, err
			}
			field := fmt.Sprintf("catalogue/index.json: %s: checkpoints[%d]", e.Name, i)
			if c.HF == "" || c.Source == "" {
				return nil, fmt.Errorf("%s: hf and source are required", field)
			}
			q, err := readQuantization(c.QuantizationConfig, func(f string, v any, r string) error {
				return fmt.Errorf("%s.%s: %v: %s", field, f, v, r)
			})
			if err != nil {
				return nil, err
			}
			if q.weights == WeightsBF16 {
				return nil, fmt.Errorf("%s.quantization_config: missing: a checkpoint listed here is quantized", field)
			}
			m := base
			m.HF = c.HF
			q.apply(&m)
			out = append(out, m)
		}
	}
	return out, nil
}

// loadCatalogue reads every indexed config through ReadConfig; the index's published
// parameter count, HF id and context override the shape-derived ones.
func loadCatalogue() ([]Model, error) {
	raw, err := catalogueFS.ReadFile("catalogue/index.json")
	if err != nil {
		return nil, err
	}
	var index []CatalogueEntry
	if err := json.Unmarshal(raw, &index); err != nil {
		return nil, fmt.Errorf("catalogue/index.json: %v", err)
	}
	out := make([]Model, 0, len(index))
	for _, e := range index {
		file := "catalogue/" + e.Name + ".json"
		data, err := catalogueFS.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("catalogue/index.json: %s: %v", e.Name, err)
		}
		m, err := ReadConfig(file, e.Name, data)
		if err != nil {
			return nil, err
		}
		if e.ParamsB <= 0 || e.HF == "" {
			return nil, fmt.Errorf("catalogue/index.json: %s: params_b and hf are required", e.Name)
		}
		m.ParamsB, m.HF = e.ParamsB, e.HF
		if e.Context > 0 {
			m.Context = e.Context
		}
		out = append(out, m)
	}
	return out, nil
}

func mustLoadCatalogue() []Model { return mustLoad(loadCatalogue) }

func mustLoad(load func() ([]Model, error)) []Model {
	ms, err := load()
	if err != nil {
		// The catalogue is compiled in; TestCatalogue reads it, so this cannot ship broken.
		panic(err)
	}
	return ms
}

// Catalogue lists the embedded models' index entries (their sources), sorted by name.
func Catalogue() []CatalogueEntry {
	raw, _ := catalogueFS.ReadFile("catalogue/index.json")
	var index []CatalogueEntry
	_ = json.Unmarshal(raw, &index)
	return index
}
