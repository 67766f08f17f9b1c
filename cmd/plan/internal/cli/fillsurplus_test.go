package cli

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/ppipe"
)

// TestSolveFillSurplusFlag: --fill-surplus defaults to true, is recorded in the provenance
// options, and `plan check --resolve` re-solves with the recorded value (ppipesys tests that
// plans from before the option, without the key, re-solve without filling).
func TestSolveFillSurplusFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{{nil, "true"}, {[]string{"--fill-surplus=false"}, "false"}} {
		out := filepath.Join(dir, "plan-"+c.want+".json")
		args := append([]string{"solve", "--deterministic", "-q", "--strategy", "np", "-o", out}, c.args...)
		code, stdout, stderr := runCLI(t, args...)
		skipWithoutHiGHS(t, stderr)
		if code != 0 {
			t.Fatalf("solve %v: exit %d: %s%s", c.args, code, stdout, stderr)
		}
		pl, err := formats.ReadInto[*formats.Plan](out, intree.Sections())
		if err != nil {
			t.Fatal(err)
		}
		var rec ppipe.Flags
		if err := planner.ReadOptions(pl.Provenance.Options, &rec); err != nil {
			t.Fatal(err)
		}
		if got := strconv.FormatBool(rec.FillSurplus); got != c.want {
			t.Errorf("solve %v: options.fill_surplus = %s, want %s", c.args, got, c.want)
		}
		if code, stdout, stderr := runCLI(t, "check", out, "--resolve"); code != 0 {
			t.Errorf("check --resolve %s: exit %d: %s%s", out, code, stdout, stderr)
		}
	}
}
