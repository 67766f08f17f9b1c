package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileLLMImportSteps: plan profile --llm MODEL --gpu GPU --import
// STEPS writes the profile with both measured curves and names the falling point on stderr;
// a bad table or a --llm giving several profiles is exit 2 with nothing written.
func TestProfileLLMImportSteps(t *testing.T) {
	steps := filepath.Join("..", "..", "..", "..", "profiler", "llm", "testdata", "steps.csv")
	dir := t.TempDir()
	out := filepath.Join(dir, "llm.json")
	code, _, stderr := rootRun(t, "profile", "--llm", "mistral-7b", "--gpu", "A100", "--import", steps, "-o", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p := readProfile(t, out)
	if len(p.LLMs) != 1 || p.LLMs[0].Iteration == nil || len(p.LLMs[0].Iteration.Decode) != 4 || len(p.LLMs[0].Iteration.Prefill) != 4 {
		t.Fatalf("llms %+v", p.LLMs)
	}
	if !strings.Contains(stderr, "warning: llms[0].iteration.decode[2].us: 6000 µs at 32 tokens is 17% below the previous point") {
		t.Errorf("stderr does not name the falling point: %s", stderr)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("tokens,prefill_tokens,seconds\n8,0,0.01\n16,0,Inf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad seconds", []string{"--llm", "mistral-7b", "--gpu", "A100", "--import", bad}, "bad.csv: line 3: seconds: +Inf: must be > 0 and finite"},
		{"several profiles", []string{"--llm", "mistral-7b", "--gpu", "A100,H100", "--import", steps}, "--import: --llm mistral-7b gives 2 LLM profiles"},
		{"no llm", []string{"--import", steps}, "--import: give --llm MODEL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := filepath.Join(dir, tc.name+".json")
			code, _, stderr := rootRun(t, append(append([]string{"profile"}, tc.args...), "-o", o)...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, ExitUsage, tc.want)
			}
			if _, err := os.Stat(o); err == nil {
				t.Error("wrote an output file on bad input")
			}
		})
	}
}
