package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/planner/schedule"
)

// windowArgs is the PPipe cost workload solved per window of the toy trace.
func windowArgs(out string, extra ...string) []string {
	a := []string{"solve", "-q", "--objective", "cost", "--profile", "testdata/ppipe/profile.json",
		"--cluster", "testdata/cost/cluster-priced.yaml", "--workload", "testdata/cost/workload.yaml", "-o", out}
	return append(a, extra...)
}

// TestSolveWindows (issue 34 item 4): a 3-window toy trace gives 3 plans whose costs follow
// the windows' peaks (the middle window highest, the last lowest), the peak plan serves the
// day's peak at a cost no lower than any window's, the schedule's total is below the peak
// plan's all day, and two runs write byte-identical schedules.
func TestSolveWindows(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	var runs [][]byte
	for i := range 2 {
		out := filepath.Join(dir, []string{"a.json", "b.json"}[i])
		code, _, stderr := rootRun(t, windowArgs(out, "--trace", "testdata/schedule/toy-3windows.csv", "--window", "2m")...)
		skipWithoutHiGHS(t, stderr)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, b)
	}
	if !bytes.Equal(runs[0], runs[1]) {
		t.Fatal("two runs wrote different schedules")
	}
	s, err := schedule.Decode("a.json", runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Windows) != 3 {
		t.Fatalf("%d windows, want 3", len(s.Windows))
	}
	w := s.Windows
	// Peaks: p99 of one-minute rates × 1.1 = the window's highest minute × 1.1.
	wantPeak := [][]float64{{66, 132}, {110, 220}, {27.5, 49.5}}
	for i, e := range w {
		for j, v := range e.PeakRPS {
			if v != wantPeak[i][j] {
				t.Errorf("window %d peak_rps[%d] = %v, want %v", i, j, v, wantPeak[i][j])
			}
		}
		if len(e.Plan) == 0 || e.CostPerHour <= 0 {
			t.Errorf("window %d: no plan or no cost: %+v", i, e)
		}
	}
	if !(w[2].CostPerHour < w[0].CostPerHour && w[0].CostPerHour < w[1].CostPerHour) {
		t.Errorf("costs per hour %v, %v, %v do not follow the peaks (window 2 < 0 < 1)", w[0].CostPerHour, w[1].CostPerHour, w[2].CostPerHour)
	}
	if s.Peak.CostPerHour < w[1].CostPerHour {
		t.Errorf("peak plan %v/h below the busiest window's %v/h", s.Peak.CostPerHour, w[1].CostPerHour)
	}
	if !(s.TotalCost < s.PeakCost) || s.Saving <= 0 {
		t.Errorf("total %v, peak all day %v, saving %v: want a saving", s.TotalCost, s.PeakCost, s.Saving)
	}
}

// TestBadInputSolveWindows: a window longer than the trace, a non-positive window, a trace
// without a column for a model of the workload, a trace without a window and a window
// without the cost objective exit 2 naming the flag (or file) and the value, writing nothing.
func TestBadInputSolveWindows(t *testing.T) {
	toy := "testdata/schedule/toy-3windows.csv"
	runBadInput(t, []badInputCase{
		{name: "window longer than the trace", args: windowArgs("s.json", "--trace", toy, "--window", "2h"), out: "s.json",
			code: ExitUsage, want: []string{"--window 2h0m0s", "longer than the trace", "toy-3windows.csv", "6m0s"}},
		{name: "zero window", args: windowArgs("s.json", "--trace", toy, "--window", "0s"), out: "s.json",
			code: ExitUsage, want: []string{"--window 0s", "must be > 0"}},
		{name: "negative window", args: windowArgs("s.json", "--trace", toy, "--window", "-1h"), out: "s.json",
			code: ExitUsage, want: []string{"--window -1h0m0s", "must be > 0"}},
		{name: "missing column", args: windowArgs("s.json", "--trace", "testdata/schedule/missing-column.csv", "--window", "1m"), out: "s.json",
			code: ExitUsage, want: []string{"missing-column.csv", `no column for "m1"`}},
		{name: "no window", args: windowArgs("s.json", "--trace", toy), out: "s.json",
			code: ExitUsage, want: []string{"--trace " + toy, "needs --window"}},
		{name: "no cost objective", args: []string{"solve", "-q", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml",
			"--workload", "testdata/cost/workload.yaml", "-o", "s.json", "--trace", toy, "--window", "2m"}, out: "s.json",
			code: ExitUsage, want: []string{"needs --objective cost"}},
		{name: "bad rate", args: windowArgs("s.json", "--trace", "testdata/schedule/bad-rate.csv", "--window", "1m"), out: "s.json",
			code: ExitUsage, want: []string{"bad-rate.csv", "line 4", "m1", `"-3"`}},
	})
}
