package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkloadFromTrace: the workload written from a trace validates and is the one solve
// reads (its classes, rates and suggested SLOs); traces with nothing to classify exit 2
// naming the field, writing nothing.
func TestWorkloadFromTrace(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	cases := []struct {
		name  string
		args  []string
		code  int
		want  string // in stderr
		fresh bool   // the output file must exist
	}{
		{"two LLM classes", []string{"testdata/fromtrace/llm-two-classes.json", "--profile", "testdata/qlm/profile.json"}, ExitOK, "rag (mistral-7b)", true},
		{"mean rate and a given SLO", []string{"testdata/fromtrace/llm-two-classes.json", "--rate", "mean", "--slo", "30s"}, ExitOK, "chat (mistral-7b)", true},
		{"no timestamps", []string{"testdata/fromtrace/no-timestamps.json", "--slo", "1s"}, ExitUsage, "requests[].t_us: all 0", false},
		{"LLM and DNN mixed", []string{"testdata/fromtrace/mixed.json"}, ExitUsage, "requests[].input_tokens: 1 of 2", false},
		{"no SLO to suggest", []string{"testdata/fromtrace/llm-two-classes.json"}, ExitUsage, "no SLO to suggest", false},
		{"bad window", []string{"testdata/fromtrace/llm-two-classes.json", "--window", "0s"}, ExitUsage, "--window: 0s", false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			args := append([]string{"workload", "from-trace"}, c.args...)
			code, stderr := runTB(append(args, "-o", out)...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Fatalf("case %d: exit %d, stderr %q; want exit %d and %q", i, code, stderr, c.code, c.want)
			}
			_, err := os.Stat(out)
			if c.fresh != (err == nil) {
				t.Fatalf("output written: %v, want %v", err == nil, c.fresh)
			}
			if !c.fresh {
				return
			}
			if code, stderr := runTB("validate", out, "testdata/qlm/profile.json"); code != ExitOK {
				t.Fatalf("the written workload does not validate with the profile: %s", stderr)
			}
		})
	}
}
