package cli

import (
	"path/filepath"
	"testing"
)

// TestProfileLLMConfig: --llm-config profiles models a user brings as Hugging Face
// config.json files (a directory of them, or one file beside --llm names), each named by
// its directory and carrying its engine id.
func TestProfileLLMConfig(t *testing.T) {
	repoRoot(t)
	out := filepath.Join(t.TempDir(), "p.json")
	code, _, stderr := rootRun(t, "profile", "--llm-config", "profiler/llm/testdata/configs", "--llm", "llama-3.1-8b", "--gpu", "H100", "--tp", "1,2", "-o", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := map[string]string{}
	for _, l := range readProfile(t, out).LLMs {
		got[l.Model] = l.HFModel
	}
	for m, id := range map[string]string{"llama-3.2-3b": "meta-llama/Llama-3.2-3B-Instruct", "qwen3-14b": "Qwen/Qwen3-14B", "llama-3.1-8b": ""} {
		if h, ok := got[m]; !ok || h != id {
			t.Errorf("%s: hf_model %q (present %v), want %q", m, h, ok, id)
		}
	}
}

// TestProfileLLMConfigBadInput: what the dense step model cannot describe is refused naming
// the file, field and value, writing nothing.
func TestProfileLLMConfigBadInput(t *testing.T) {
	runBadInput(t, []badInputCase{
		{name: "moe config", args: []string{"profile", "--llm-config", "profiler/llm/testdata/configs-bad/mixtral.json", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"profiler/llm/testdata/configs-bad/mixtral.json: num_local_experts: 8: a mixture-of-experts model"}},
		{name: "missing config", args: []string{"profile", "--llm-config", "$TMP/none.json", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"--llm-config:", "none.json"}},
		{name: "with import", args: []string{"profile", "--llm-config", "profiler/llm/testdata/configs", "--import", "profiler/llm/testdata/steps.csv", "--llm", "mistral-7b", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"--llm-config profiler/llm/testdata/configs: profiles a model from its shapes: not with --import"}},
	})
}
