package solve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/testmode"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/solve"
	"github.com/plan-dev/plan/internal/run/solve/explain"
	"github.com/plan-dev/plan/planner"
)

const repo = "../../../"

// solveRun runs plan solve with a (-O json where asked) and returns its exit code and
// streams.
func solveRun(t *testing.T, a solve.Args, jsonOut bool) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	io := &run.IO{Streams: run.Streams{Out: &out, Err: &errb}, Output: "table", Quiet: true}
	if jsonOut {
		io.Output = "json"
	}
	if a.Systems == nil {
		a.Systems = systems.Default()
	}
	if a.TimeLimit == 0 {
		a.TimeLimit = planner.DefaultTimeLimit
	}
	if a.Out == "" {
		a.Out = filepath.Join(t.TempDir(), "plan.json")
	}
	a.Deterministic = true
	err := solve.Run(context.Background(), a, io)
	if err == nil {
		return 0, out.String(), errb.String()
	}
	var ee *run.ExitError
	if !errors.As(err, &ee) {
		return 1, out.String(), errb.String() + err.Error()
	}
	if strings.Contains(err.Error(), "missing solver") || strings.Contains(err.Error(), "no solver") {
		t.Skip("no HiGHS: ", err)
	}
	return ee.Code, out.String(), errb.String() + err.Error()
}

// explained runs the failing solve with -O json and returns its explanation, after checking
// the contract: exit 2, nothing written to --out, the report on stdout; and that the text
// form (stderr without -O json) carries the same lines.
func explained(t *testing.T, a solve.Args) *explain.Explanation {
	t.Helper()
	a.Out = filepath.Join(t.TempDir(), "plan.json")
	code, stdout, stderr := solveRun(t, a, true)
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, stderr)
	}
	if _, err := os.Stat(a.Out); !os.IsNotExist(err) {
		t.Errorf("%s written by a solve that exits 2", a.Out)
	}
	var rep solve.FailureReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Explanation == nil || rep.OK {
		t.Fatalf("stdout is no failure report (%v):\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	t.Logf("%s\n%s", rep.Error, strings.Join(rep.Explanation.Lines(), "\n"))
	return rep.Explanation
}

// inputs loads a's files as solve does.
func inputs(t *testing.T, a solve.Args) planner.Inputs {
	t.Helper()
	in, err := solve.LoadInputs(a.Inputs, systems.Default().Sections(), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// write writes doc to a temporary file and returns its path.
func write(t *testing.T, name string, doc formats.Document) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := formats.WriteFile(p, doc, systems.Default().Sections()); err != nil {
		t.Fatal(err)
	}
	return p
}

// withSLOs is a with every SLO ×k, as files (and --slo) a user would give.
func withSLOs(t *testing.T, a solve.Args, k float64) solve.Args {
	t.Helper()
	in, st, err := explain.ScaleSLOs(inputs(t, a), planner.Settings{SLO: a.SLO}, systems.Default().Sections(), k)
	if err != nil {
		t.Fatal(err)
	}
	a.SLO = st.SLO
	if a.Workload != "" {
		a.Workload = write(t, "workload.json", in.Workload)
	}
	return a
}

// checkSLO: solving at the stated SLOs succeeds and at 95% of them fails (exit 2, or 1 where
// the system's own check refuses the plan it solved: either way no plan is written).
func checkSLO(t *testing.T, a solve.Args, ex *explain.Explanation) {
	t.Helper()
	r := ex.SLO
	if r == nil || !r.Found || !r.Narrowed || !r.CheckedOK {
		t.Fatalf("no checked SLO relaxation: %+v", r)
	}
	if code, _, stderr := solveRun(t, withSLOs(t, a, r.Scale), false); code != 0 {
		t.Errorf("at the stated SLOs (×%g): exit %d\n%s", r.Scale, code, stderr)
	}
	if code, _, _ := solveRun(t, withSLOs(t, a, explain.CheckShare*r.Scale), false); code == 0 {
		t.Errorf("at 95%% of the stated SLOs (×%g): the solve succeeds", explain.CheckShare*r.Scale)
	}
}

// checkGPUs: the first (cheapest) addition stated makes the SLOs as given feasible, and one
// GPU fewer does not.
func checkGPUs(t *testing.T, a solve.Args, ex *explain.Explanation) {
	t.Helper()
	if len(ex.GPUs) == 0 {
		t.Fatalf("no GPUs to add: %s", ex.GPUsNone)
	}
	g := ex.GPUs[0]
	if !g.Narrowed {
		t.Fatalf("GPU addition not narrowed: %+v", g)
	}
	with := func(n int) solve.Args {
		b := a
		b.Cluster = write(t, "cluster.json", explain.AddGPUs(inputs(t, a), g.GPUOption, n).Cluster)
		return b
	}
	if code, _, stderr := solveRun(t, with(g.Add), false); code != 0 {
		t.Errorf("with +%d %s: exit %d\n%s", g.Add, g.Type, code, stderr)
	}
	if g.Add > 1 {
		if code, _, _ := solveRun(t, with(g.Add-1), false); code == 0 {
			t.Errorf("with +%d %s: the solve succeeds", g.Add-1, g.Type)
		}
	}
}

// checkRate: at the stated rates the solve succeeds, at the stated rates over 0.95 it fails.
func checkRate(t *testing.T, a solve.Args, ex *explain.Explanation) {
	t.Helper()
	r := ex.Rate
	if r == nil || !r.Found || !r.Narrowed || !r.CheckedOK {
		t.Fatalf("no checked rate relaxation: %+v", r)
	}
	at := func(k float64) solve.Args {
		b := a
		b.Workload = write(t, "workload.json", explain.ScaleRates(inputs(t, a), k).Workload)
		return b
	}
	if code, _, stderr := solveRun(t, at(r.Scale), false); code != 0 {
		t.Errorf("at the stated rates (×%g): exit %d\n%s", r.Scale, code, stderr)
	}
	if r.Checked < 1 {
		if code, _, _ := solveRun(t, at(r.Checked), false); code == 0 {
			t.Errorf("at the rates ×%g: the solve succeeds", r.Checked)
		}
	}
}

// TestInfeasibleExplainedFast: PPipe (an SLO below the fastest pipeline: no GPUs would),
// PARD (an SLO below its modules' latencies) and CascadeServe (a p95 latency no cascade
// meets): each SLO relaxation stated is tight.
func TestInfeasibleExplainedFast(t *testing.T) {
	cases := []struct {
		name     string
		args     solve.Args
		gpusNone bool
	}{
		{"ppipe", solve.Args{SLO: time.Millisecond, SLOSet: true}, true},
		{"pard", solve.Args{Inputs: solve.Inputs{Profiles: []string{repo + "testdata/pard/profile.json"}, Cluster: repo + "testdata/pard/cluster.json",
			Workload: repo + "testdata/badinput/pipeline-slo-too-low.yaml"}}, true},
		{"cascade", solve.Args{Inputs: solve.Inputs{Profiles: []string{repo + "testdata/cascade/profile.json"}, Cluster: repo + "testdata/cascade/cluster.yaml",
			Workload: "testdata/explain/cascade-tight.yaml"}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := explained(t, c.args)
			checkSLO(t, c.args, ex)
			if c.gpusNone && (len(ex.GPUs) != 0 || !strings.HasPrefix(ex.GPUsNone, "none would")) {
				t.Errorf("GPUs %+v (%q), want none would", ex.GPUs, ex.GPUsNone)
			}
			if ex.CutShort != "" {
				t.Errorf("cut short: %s", ex.CutShort)
			}
		})
	}
}

// TestTextOnStderr: without -O json the explanation follows the error on stderr and
// stdout stays empty.
func TestTextOnStderr(t *testing.T) {
	code, stdout, stderr := solveRun(t, solve.Args{SLO: time.Millisecond, SLOSet: true}, false)
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, w := range []string{"the smallest feasible SLO is", "what would make it feasible", "SLO: every SLO ×", "fails", "GPUs to add: none would"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// TestInfeasibleExplainedSlow: QLM and DyOrc past their clusters' capacity (GPUs to add
// and a lower rate, each tight) and the LLM deployment search with a TPOT no candidate
// meets (an SLO relaxation, tight).
func TestInfeasibleExplainedSlow(t *testing.T) {
	testmode.Heavy(t, "TestInfeasibleExplainedFast (PPipe, PARD, CascadeServe)")
	qlm := solve.Args{Inputs: solve.Inputs{Profiles: []string{repo + "testdata/qlm/profile.json"}, Cluster: repo + "testdata/qlm/cluster.yaml",
		Workload: "testdata/explain/qlm-overload.yaml"}, TimeLimit: 3 * time.Minute}
	dyorc := solve.Args{Inputs: solve.Inputs{Cluster: repo + "testdata/dyorc/cluster-small.json", Workload: "testdata/explain/dyorc-busy.json"}}
	search := solve.Args{Inputs: solve.Inputs{Cluster: repo + "testdata/llmdeploy/cluster-l40s.yaml", Workload: "testdata/explain/search-tight.yaml"},
		Objective: planner.ObjectiveCost, PlannerFlags: []solve.Flag{{Name: "search", Value: "true"}}, TimeLimit: 3 * time.Minute}
	t.Run("qlm", func(t *testing.T) {
		ex := explained(t, qlm)
		checkGPUs(t, qlm, ex)
	})
	t.Run("dyorc", func(t *testing.T) {
		ex := explained(t, dyorc)
		checkGPUs(t, dyorc, ex)
		checkRate(t, dyorc, ex)
	})
	t.Run("search", func(t *testing.T) {
		ex := explained(t, search)
		checkSLO(t, search, ex)
	})
}
