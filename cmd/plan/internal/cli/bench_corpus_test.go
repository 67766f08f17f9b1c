package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/run/corpus"
)

// TestBenchCorpusAuthors: --authors runs the authors' set-up's cases (their planner flags
// in the reproducing command), and every run ends with the regression cases.
func TestBenchCorpusAuthors(t *testing.T) {
	if testing.Short() {
		t.Skip("solves and simulates: not in -short")
	}
	for _, tc := range []struct {
		name  string
		args  []string
		opts  corpus.Options
		flags []string
	}{
		{"authors", []string{"--authors"}, corpus.Options{Seed: 1, Cases: 1, Authors: true}, []string{"--rounding=stage", "--replicas=-1", "--batch-allowance=true", "--fill-surplus=false"}},
		{"general", nil, corpus.Options{Seed: 1, Cases: 1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "ppipe-corpus", "-O", "json", "--cases", "1", "--time-limit", "2s", "--parallel", "1"}, tc.args...)
			code, stdout, stderr := runCLI(t, args...)
			skipWithoutHiGHS(t, stderr)
			var rep corpus.Report
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("exit %d, not a report: %v\n%s\n%s", code, err, stdout, stderr)
			}
			if code != 0 {
				t.Fatalf("exit %d: %d of %d cases broken: %+v", code, rep.Broken(), rep.Cases, rep.Outcomes)
			}
			// The cases the flags ask for: corpus.Cases is the library's own list, so what is
			// checked here is that the command passes --authors through and runs them all.
			want, nregs := corpus.Cases(tc.opts)
			regs := want[1:]
			if nregs != len(regs) || nregs == 0 {
				t.Fatalf("corpus.Cases: %d regression cases of %d", nregs, len(want))
			}
			if rep.Cases != 1+len(regs) || rep.Regressions != len(regs) || len(rep.Outcomes) != rep.Cases {
				t.Fatalf("cases %d, regressions %d, outcomes %d: want 1 generated + %d regression", rep.Cases, rep.Regressions, len(rep.Outcomes), len(regs))
			}
			if got := rep.Outcomes[0].Case; got != want[0].Name {
				t.Errorf("first case %q, want %q", got, want[0].Name)
			}
			for _, f := range tc.flags {
				if !strings.Contains(rep.Outcomes[0].Command, f) {
					t.Errorf("command %q lacks the authors' %s", rep.Outcomes[0].Command, f)
				}
			}
			for i, r := range regs {
				if got := rep.Outcomes[1+i].Case; got != r.Name {
					t.Errorf("outcome %d is %q, want the regression case %q", 1+i, got, r.Name)
				}
			}
		})
	}
}
