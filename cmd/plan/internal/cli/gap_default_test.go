package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestSolveDefaultGap: without --gap each planner stops at its own gap, which the plan
// records in provenance.options: PPipe at 1e-4 (the authors' reference plans were solved to
// Gurobi's default MIPGap), DyOrc at planner.DefaultGap; --gap replaces either.
func TestSolveDefaultGap(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	ppipe := []string{"--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/ppipe/cluster.yaml", "--workload", "testdata/ppipe/workload.yaml"}
	dyorc := []string{"--cluster", "testdata/dyorc/cluster-small.json", "--workload", "testdata/dyorc/small.json"}
	cases := []struct {
		name string
		args []string
		gap  float64
	}{
		{"ppipe default", ppipe, 1e-4},
		{"ppipe --gap", append([]string{"--gap", "0.01"}, ppipe...), 0.01},
		{"dyorc default", dyorc, 0.001},
		{"dyorc --gap", append([]string{"--gap", "0.02"}, dyorc...), 0.02},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name+".json")
			args := append([]string{"solve", "-q", "--deterministic", "-o", out}, c.args...)
			code, stdout, errs := runCLI(t, args...)
			skipWithoutHiGHS(t, errs)
			if code != 0 {
				t.Fatalf("case %d: exit %d:\n%s\n%s", i, code, stdout, errs)
			}
			p, err := formats.ReadInto[*formats.Plan](out, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			var o struct {
				Gap *float64 `json:"gap"`
			}
			if err := json.Unmarshal(p.Provenance.Options, &o); err != nil || o.Gap == nil {
				t.Fatalf("provenance.options %s: no gap (%v)", p.Provenance.Options, err)
			}
			if *o.Gap != c.gap {
				t.Errorf("recorded gap %g, want %g", *o.Gap, c.gap)
			}
		})
	}
}
