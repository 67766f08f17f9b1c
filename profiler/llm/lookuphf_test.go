package llm

import "testing"

// TestLookupHF: a server's Hugging Face id resolves to the catalogue model whose shapes it
// has — the catalogue's own id, another organisation's copy, the release's base, chat or
// instruct variant wherever the variant word stands, a quantized re-publication — and an
// id of other shapes (another version, another size) is refused.
func TestLookupHF(t *testing.T) {
	for _, c := range []struct {
		id, want string // want "": refused
	}{
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"},
		{"mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"},
		{"mistralai/Mixtral-8x22B-v0.1", "mixtral-8x22b"},
		{"mistralai/Mistral-Nemo-Base-2407", "mistral-nemo-12b"},
		{"meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"},
		{"meta-llama/Llama-3.1-8B", "llama-3.1-8b"},
		{"Qwen/Qwen3-14B-Base", "qwen3-14b"},
		{"01-ai/Yi-34B", "yi-34b"},
		{"google/gemma-3-27b-pt", "gemma-3-27b"},
		{"RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b"}, // the repository's old name
		{"RedHatAI/Llama-3.1-8B-Instruct-FP8-dynamic", "llama-3.1-8b"},
		{"mistralai/Mistral-7B-v0.1", ""}, // v0.1 has a sliding window; the catalogue holds v0.2
		{"meta-llama/Llama-2-13b-hf", ""},
		{"instruct", ""},
	} {
		m, err := LookupHF(c.id)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("LookupHF(%q) = %s, want refused", c.id, m.Name)
		case c.want != "" && err != nil:
			t.Errorf("LookupHF(%q): %v", c.id, err)
		case c.want != "" && m.Name != c.want:
			t.Errorf("LookupHF(%q) = %s, want %s", c.id, m.Name, c.want)
		}
	}
}
