package cli

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func solverFixture(name string) string {
	return filepath.Join("..", "..", "..", "..", "testdata", "solver", name)
}

// TestBenchSolver runs `plan bench solver` on a small model: the relaxation by default, the
// MILP with --milp, on every engine of the test binary, each reporting what it solved.
func TestBenchSolver(t *testing.T) {
	cases := []struct {
		name string
		args []string
		obj  float64
		log  bool // --highs-log: HiGHS's log on stderr
	}{
		{"relaxation", nil, 2.8, false},
		{"milp", []string{"--milp", "--time-limit", "10s"}, 2, false},
		// A HiGHS option is set last: it overrides --milp, and the report records it.
		{"highs option", []string{"--milp", "--highs-option", "solve_relaxation=true", "--highs-option", "random_seed=3", "--highs-log"}, 2.8, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"bench", "solver", "--quick", "--lp", solverFixture("small.lp"), "-O", "json"}, c.args...)
			code, out, errs := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if hasLog := strings.Contains(errs, "Running HiGHS"); hasLog != c.log {
				t.Errorf("HiGHS's log on stderr: %v, want %v:\n%s", hasLog, c.log, errs)
			}
			var res struct {
				Relaxation   bool
				HighsOptions []string `json:"highs_options"`
				Rows         []struct {
					Model, Engine, Status string
					Objective             float64
					Iterations            int64
					RunMs                 []float64 `json:"run_ms"`
				}
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(res.Rows) == 0 || res.Relaxation != (c.name == "relaxation") {
				t.Fatalf("got %+v", res)
			}
			if c.log && strings.Join(res.HighsOptions, " ") != "solve_relaxation=true random_seed=3" {
				t.Errorf("report's highs_options %q, want the two --highs-option values", res.HighsOptions)
			}
			for _, r := range res.Rows {
				if r.Model != "small.lp" || r.Status != "optimal" || math.Abs(r.Objective-c.obj) > 1e-9 || len(r.RunMs) != 1 {
					t.Errorf("%s: %+v, want small.lp optimal at %g, one run", r.Engine, r, c.obj)
				}
			}
		})
	}
}

func TestBenchSolverBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--engine", "gpu"}, `--engine "gpu"`},
		{[]string{"--lp", "missing.lp"}, "--lp missing.lp"},
		{[]string{"--lp", solverFixture("bad.lp")}, "bad.lp"},
		{[]string{"--lp", solverFixture("small.lp") + ".txt"}, "small.lp.txt"},
		{[]string{"--reps", "-1"}, "--reps"},
		{[]string{"--presolve", "fast"}, "--presolve"},
		{[]string{"--milp", "--time-limit", "0s"}, "--time-limit"},
		{[]string{"--highs-option", "random_seed"}, `--highs-option "random_seed": want name=value`},
		{[]string{"--lp", solverFixture("small.lp"), "--highs-option", "no_such_option=1"}, "--highs-option: solver: invalid HiGHS option: no_such_option=1"},
		{[]string{"--lp", solverFixture("small.lp"), "--highs-option", "mip_rel_gap=abc"}, "mip_rel_gap=abc"},
	}
	for _, c := range cases {
		args := append([]string{"bench", "solver", "--quick"}, c.args...)
		code, out, errs := runCLI(t, args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 mentioning %q", c.args, code, errs, out, c.want)
		}
	}
}
