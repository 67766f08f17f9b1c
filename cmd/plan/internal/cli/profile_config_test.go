package cli

import (
	"path/filepath"
	"testing"
)

// TestProfileLLMConfig: --llm-config profiles models a user brings as Hugging Face
// config.json files (a directory of them, or one file beside --llm names), each named by
// its directory and carrying its engine id; a config of a catalogue model (same name, same
// shapes) is the catalogue's, whose id the exports know; a mixture-of-experts config
// profiles with its experts.
func TestProfileLLMConfig(t *testing.T) {
	repoRoot(t)
	out := filepath.Join(t.TempDir(), "p.json")
	code, _, stderr := rootRun(t, "profile", "--llm-config", "profiler/llm/testdata/configs", "--llm-config", "profiler/llm/testdata/configs-moe", "--llm", "llama-3.1-8b", "--gpu", "H100", "--tp", "1,2", "-o", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := map[string]string{}
	for _, l := range readProfile(t, out).LLMs {
		got[l.Model] = l.HFModel
	}
	for m, id := range map[string]string{"llama-3.2-3b": "", "qwen3-14b": "", "llama-3.1-8b": "", "mixtral-8x7b": ""} {
		if h, ok := got[m]; !ok || h != id {
			t.Errorf("%s: hf_model %q (present %v), want %q", m, h, ok, id)
		}
	}
}

// TestProfileLLMConfigBadInput: what the dense step model cannot describe is refused naming
// the file, field and value, writing nothing.
func TestProfileLLMConfigBadInput(t *testing.T) {
	runBadInput(t, []badInputCase{
		{name: "experts per token past the experts", args: []string{"profile", "--llm-config", "profiler/llm/testdata/configs-bad/moe-topk.json", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"profiler/llm/testdata/configs-bad/moe-topk.json: num_experts_per_tok: 10: more experts per token than the 8 experts"}},
		{name: "fp4 before blackwell", args: []string{"profile", "--llm", "mixtral-8x7b", "--quantization", "nvfp4", "--gpu", "H100", "--tp", "2", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"quantization nvfp4: needs a Blackwell GPU"}},
		{name: "ep not dividing experts", args: []string{"profile", "--llm", "mixtral-8x7b", "--expert-parallel", "--gpu", "H100", "--tp", "3", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"tensor parallel size 3"}},
		{name: "unknown quantization", args: []string{"profile", "--llm", "mixtral-8x7b", "--quantization", "int3", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{`--quantization: "int3": must be one of auto, bf16, fp8, mxfp4, nvfp4`}},
		{name: "ep without tp", args: []string{"profile", "--llm", "mixtral-8x7b", "--expert-parallel", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"--expert-parallel: needs --tp"}},
		{name: "missing config", args: []string{"profile", "--llm-config", "$TMP/none.json", "--gpu", "H100", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"--llm-config:", "none.json"}},
		{name: "with import", args: []string{"profile", "--llm-config", "profiler/llm/testdata/configs", "--import", "profiler/llm/testdata/steps.csv", "--llm", "mistral-7b", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", want: []string{"--llm-config profiler/llm/testdata/configs: profiles a model from its shapes: not with --import"}},
	})
}
