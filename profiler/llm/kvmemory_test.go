package llm

import (
	"math"
	"testing"

	"github.com/plan-dev/plan/profiler/gpus"
)

// TestSamplerPeakMatchesVLLM: at vLLM's H100 defaults (8,192 batched tokens, 1,024
// sequences) the profiling run's peak is the dummy sampler pass, and the rule's bytes per
// (sequence, vocabulary entry) reproduce the "peak activation" vLLM logged for models whose
// vocabularies span 128K to 201K entries, within 5% (llm-d-benchmark's
// config_explorer/empirical-vllm-memory-results.md; Qwen3-0.6B is not catalogued).
func TestSamplerPeakMatchesVLLM(t *testing.T) {
	tests := []struct {
		model   string
		tp      int
		wantGiB float64
	}{
		{"llama-3.1-8b", 1, 4.76},
		{"llama-3.3-70b", 2, 4.84},
		{"gpt-oss-20b", 1, 7.38},
	}
	for _, tc := range tests {
		m, err := Lookup(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		got := float64(activationPeak(m, tc.tp, 8192, 1024)) / (1 << 30)
		if math.Abs(got-tc.wantGiB)/tc.wantGiB > 0.05 {
			t.Errorf("%s at TP %d: peak %.2f GiB, vLLM logged %.2f", tc.model, tc.tp, got, tc.wantGiB)
		}
	}
}

// TestActivationPeakTerms: the peak is the larger of the forward's and the sampler pass's;
// the sampler's grows with sequences × vocabulary alone, so where it dominates the KV budget
// does not move with max_num_batched_tokens — vLLM allocated the same 30,425 blocks for
// Llama-3.1-70B at TP 4 with 8,192 and with 2,048 batched tokens (128 sequences; the
// validation runs of bench/vllmruns) — and where the forward dominates, it does.
func TestActivationPeakTerms(t *testing.T) {
	m, err := Lookup("llama-3.1-70b")
	if err != nil {
		t.Fatal(err)
	}
	h100, err := gpus.Lookup("H100")
	if err != nil {
		t.Fatal(err)
	}
	sampler := int64(samplerBytesPerLogit) * 128 * int64(m.Vocab)
	tests := []struct {
		name          string
		tokens, seqs  int
		wantSampler   bool
		sameBudgetAs  int // batched tokens giving the same budget; 0 = none
		differentFrom int // batched tokens giving a different budget; 0 = none
	}{
		{"runs 60 and 61: the sampler dominates", 8192, 128, true, 2048, 0},
		{"a 64K-token forward dominates", 65536, 128, false, 0, 8192},
	}
	for _, tc := range tests {
		k := KVBudgetWith(m, h100, 4, false, KVSettings{BatchedTokens: tc.tokens, MaxSeqs: tc.seqs})
		if (k.ActivationPeak == sampler) != tc.wantSampler {
			t.Errorf("%s: peak %d, sampler pass %d", tc.name, k.ActivationPeak, sampler)
		}
		if tc.sameBudgetAs > 0 {
			o := KVBudgetWith(m, h100, 4, false, KVSettings{BatchedTokens: tc.sameBudgetAs, MaxSeqs: tc.seqs})
			if o.Blocks != k.Blocks {
				t.Errorf("%s: %d blocks at %d batched tokens, %d at %d", tc.name, k.Blocks, tc.tokens, o.Blocks, tc.sameBudgetAs)
			}
		}
		if tc.differentFrom > 0 {
			o := KVBudgetWith(m, h100, 4, false, KVSettings{BatchedTokens: tc.differentFrom, MaxSeqs: tc.seqs})
			if o.Blocks <= k.Blocks {
				t.Errorf("%s: %d blocks at %d batched tokens, %d at %d: want fewer at more tokens", tc.name, k.Blocks, tc.tokens, o.Blocks, tc.differentFrom)
			}
		}
	}
}

// TestRopeTable: vLLM builds its rotary-embedding table for max_position_embeddings
// positions (not max_model_len, and not a usable context the catalogue states instead) over
// the rotary part of a head, in BF16, whole on every GPU, and counts it in the model's
// loading memory. Llama-4-Scout's 10,485,760 positions make it 2.5 GiB a GPU — its public
// BF16 TP 8 start-up log reads "Model loading took 27.8072 GiB" where the weights alone are
// 25.30 GiB — so the KV budget has that much less at any tensor-parallel degree.
func TestRopeTable(t *testing.T) {
	base := `"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000`
	config := func(extra string) Model {
		t.Helper()
		m, err := ReadConfig("c.json", "m", []byte(`{`+base+extra+`}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tests := []struct {
		name string
		m    Model
		want int64
	}{
		{"scout", mustLookup(t, "llama-4-scout"), 10485760 * 128 * 2},
		// The catalogue states Mistral-Nemo's usable context (128k); the table is the
		// config's 1,024,000 positions.
		{"nemo", mustLookup(t, "mistral-nemo-12b"), 1024000 * 128 * 2},
		{"latent", mustLookup(t, "deepseek-v3"), 163840 * 64 * 2},
		{"partial", config(`, "max_position_embeddings": 8192, "partial_rotary_factor": 0.5`), 8192 * 64 * 2},
		{"whole head", config(`, "max_position_embeddings": 8192`), 8192 * 128 * 2},
	}
	for _, tc := range tests {
		if got := tc.m.ropeTableBytes(); got != tc.want {
			t.Errorf("%s: table %d B, want %d", tc.name, got, tc.want)
		}
	}
	fp8, err := LookupHF("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpus.Lookup("H100")
	for _, tc := range []struct {
		m  Model
		tp int
	}{{fp8, 2}, {mustLookup(t, "llama-4-scout"), 4}} {
		m, tp := tc.m, tc.tp
		with := KVBudgetWith(m, g, tp, false, KVSettings{BatchedTokens: 2048, MaxSeqs: 128})
		without := m
		without.RopePositions = 0
		bare := KVBudgetWith(without, g, tp, false, KVSettings{BatchedTokens: 2048, MaxSeqs: 128})
		if with.RopeTable != 2560<<20 || with.KVBytes <= 0 || bare.KVBytes-with.KVBytes != 2560<<20 {
			t.Errorf("scout at TP %d: table %d B, KV %d B against %d B without it: want 2.5 GiB less", tp, with.RopeTable, with.KVBytes, bare.KVBytes)
		}
	}
}

func mustLookup(t *testing.T, name string) Model {
	t.Helper()
	m, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
