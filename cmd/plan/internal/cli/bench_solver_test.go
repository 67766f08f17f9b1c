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
	}{
		{"relaxation", nil, 2.8},
		{"milp", []string{"--milp", "--time-limit", "10s"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"bench", "solver", "--quick", "--lp", solverFixture("small.lp"), "-O", "json"}, c.args...)
			code, out, errs := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var res struct {
				Relaxation bool
				Rows       []struct {
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
	}
	for _, c := range cases {
		args := append([]string{"bench", "solver", "--quick"}, c.args...)
		code, out, errs := runCLI(t, args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 mentioning %q", c.args, code, errs, out, c.want)
		}
	}
}
