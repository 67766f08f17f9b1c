package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/base/testmode"
	"github.com/plan-dev/plan/internal/run/solve"
	"github.com/plan-dev/plan/planner/schedule"
)

// windowArgs is the PPipe cost workload solved per window of the toy trace.
func windowArgs(out string, extra ...string) []string {
	a := []string{"solve", "-q", "--objective", "cost", "--profile", "testdata/ppipe/profile.json",
		"--cluster", "testdata/cost/cluster-priced.yaml", "--workload", "testdata/cost/workload.yaml", "-o", out}
	return append(a, extra...)
}

// TestSolveWindows: a 3-window toy trace gives 3 plans whose costs follow
// the windows' peaks (a window whose peak is at least another's in every column costs at
// least as much; the busiest costs more than the quietest), the peak plan serves the day's
// peak at a cost no lower than any window's, the schedule's total is below the peak plan's
// all day, and two runs write byte-identical schedules; for PPipe, QLM, DyOrc and PARD alike.
func TestSolveWindows(t *testing.T) {
	repoRoot(t)
	qlm := []string{"solve", "-q", "--objective", "cost", "--profile", "testdata/cost/llm-profile.json",
		"--cluster", "testdata/cost/cluster-llm.yaml", "--workload", "testdata/cost/workload-llm.yaml"}
	cases := []struct {
		name   string
		args   func(out string) []string
		trace  string
		window string
		// Peaks: p99 of one-minute rates × 1.1 = the window's highest minute × 1.1.
		peaks       [][]float64
		busy, quiet int
		// heavy: runs under make test-full only; ppipe and dyorc stand for it in CI, and
		// TestSimulateScheduleSystems solves QLM's and PARD's schedules there.
		heavy bool
	}{
		{name: "ppipe", args: func(out string) []string { return windowArgs(out) }, trace: "testdata/schedule/toy-3windows.csv", window: "2m",
			peaks: [][]float64{{66, 132}, {110, 220}, {27.5, 49.5}}, busy: 1, quiet: 2},
		{name: "qlm", args: func(out string) []string { return append(slices.Clone(qlm), "-o", out) }, trace: "testdata/schedule/llm-3windows.csv", window: "1m",
			peaks: [][]float64{{1.1, 0.22}, {8.8, 2.2}, {3.3, 1.1}}, busy: 1, quiet: 0, heavy: true},
		{name: "dyorc", args: func(out string) []string {
			// --accept-miss: DyOrc's least-cost fleets miss the image app's SLO (cost_test.go).
			return []string{"solve", "-q", "--accept-miss", "--objective", "cost", "--cluster", "testdata/cost/cluster-dyorc.yaml", "--workload", "testdata/dyorc/small.json", "-o", out}
		}, trace: "testdata/schedule/dyorc-3windows.csv", window: "1m",
			peaks: [][]float64{{1.1, 11}, {2.2, 22}, {0.55, 5.5}}, busy: 1, quiet: 2},
		{name: "pard", args: func(out string) []string {
			return []string{"solve", "-q", "--objective", "cost", "--profile", "testdata/pard/profile.json", "--cluster", "testdata/cost/cluster-pard.yaml",
				"--workload", "testdata/pard/workload.json", "-o", out}
		}, trace: "testdata/schedule/pard-3windows.csv", window: "1m",
			peaks: [][]float64{{110, 110, 110, 110}, {165, 165, 165, 165}, {55, 55, 55, 55}}, busy: 1, quiet: 2, heavy: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.heavy {
				testmode.Heavy(t, "TestSolveWindows/ppipe and /dyorc")
			}
			dir := t.TempDir()
			var runs [][]byte
			for _, name := range []string{"a.json", "b.json"} {
				out := filepath.Join(dir, name)
				code, _, stderr := rootRun(t, append(tc.args(out), "--trace", tc.trace, "--window", tc.window)...)
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
			for i, e := range w {
				if !slices.Equal(e.PeakRPS, tc.peaks[i]) {
					t.Errorf("window %d peak_rps = %v, want %v", i, e.PeakRPS, tc.peaks[i])
				}
				if len(e.Plan) == 0 || e.CostPerHour <= 0 {
					t.Errorf("window %d: no plan or no cost: %+v", i, e)
				}
				for j, f := range w {
					if dominates(e.PeakRPS, f.PeakRPS) && e.CostPerHour < f.CostPerHour {
						t.Errorf("window %d (peak %v) costs %v/h, below window %d's %v/h (peak %v)", i, e.PeakRPS, e.CostPerHour, j, f.CostPerHour, f.PeakRPS)
					}
				}
				if s.Peak.CostPerHour < e.CostPerHour {
					t.Errorf("peak plan %v/h below window %d's %v/h", s.Peak.CostPerHour, i, e.CostPerHour)
				}
			}
			if !(w[tc.busy].CostPerHour > w[tc.quiet].CostPerHour) {
				t.Errorf("the busiest window costs %v/h, the quietest %v/h", w[tc.busy].CostPerHour, w[tc.quiet].CostPerHour)
			}
			if !(s.TotalCost < s.PeakCost) || s.Saving <= 0 {
				t.Errorf("total %v, peak all day %v, saving %v: want a saving", s.TotalCost, s.PeakCost, s.Saving)
			}
		})
	}
}

// dominates says whether a ≥ b in every column.
func dominates(a, b []float64) bool {
	for i := range a {
		if a[i] < b[i] {
			return false
		}
	}
	return true
}

// TestBadInputSolveWindows: a window longer than the trace, a non-positive window, a trace
// without a column for a model of the workload, a trace without a window and a window
// without the cost objective exit 2 naming the flag (or file) and the value, writing nothing;
// a window whose target cannot be met exits 2 naming the window and saying what would make
// its plan feasible, as plan solve does.
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
		{name: "a window's target cannot be met", args: windowArgs("s.json", "--trace", toy, "--window", "2m", "--slo", "1ms"), out: "s.json",
			code: ExitUsage, want: []string{"window plan (m0 66 req/s, m1 132 req/s)", "smallest feasible SLO", "what would make it feasible", "SLO: every SLO ×", "GPUs to add: none would"}},
		{name: "no window", args: windowArgs("s.json", "--trace", toy), out: "s.json",
			code: ExitUsage, want: []string{"--trace " + toy, "needs --window"}},
		{name: "no cost objective", args: []string{"solve", "-q", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml",
			"--workload", "testdata/cost/workload.yaml", "-o", "s.json", "--trace", toy, "--window", "2m"}, out: "s.json",
			code: ExitUsage, want: []string{"needs --objective cost"}},
		{name: "schedule without windows", args: []string{"simulate", "testdata/schedule/empty-schedule.json", "--trace", toy},
			code: ExitUsage, want: []string{"empty-schedule.json", "windows: empty"}},
		{name: "load sweep flag with a schedule", args: []string{"simulate", "testdata/schedule/empty-schedule.json", "--trace", toy, "--load", "1"},
			code: ExitUsage, want: []string{"--load", "does not apply to the schedule", "empty-schedule.json"}},
		{name: "schedule flag with a plan", args: []string{"simulate", "testdata/golden/qlm-cost.json", "--switch-delay", "1s"},
			code: ExitUsage, want: []string{"--switch-delay", "applies to a schedule", "qlm-cost.json"}},
		{name: "negative switch delay", args: []string{"simulate", "testdata/schedule/empty-schedule.json", "--trace", toy, "--switch-delay", "-1s"},
			code: ExitUsage, want: []string{"--switch-delay -1s", "must be ≥ 0"}},
		{name: "silent column", args: windowArgs("s.json", "--trace", "testdata/schedule/silent-column.csv", "--window", "1m"), out: "s.json",
			code: ExitUsage, want: []string{"silent-column.csv", "column m0", "no requests"}},
		{name: "bad rate", args: windowArgs("s.json", "--trace", "testdata/schedule/bad-rate.csv", "--window", "1m"), out: "s.json",
			code: ExitUsage, want: []string{"bad-rate.csv", "line 4", "m1", `"-3"`}},
	})
}

// TestSimulateSchedule: replaying the toy schedule reports every window,
// the whole schedule and the peak plan; loading each plan ahead of its window keeps the
// busiest window's attainment, a reactive switch (the smaller plan serving the first minute
// of the busiest window) loses it; the schedule and the peak plan replay the same requests
// (sim.Piecewise: the same arrivals however the trace is cut); two runs report the same.
func TestSimulateSchedule(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	sched := filepath.Join(dir, "s.json")
	toy := "testdata/schedule/toy-3windows.csv"
	code, _, stderr := rootRun(t, windowArgs(sched, "--trace", toy, "--window", "2m")...)
	skipWithoutHiGHS(t, stderr)
	if code != ExitOK {
		t.Fatalf("solve: exit %d: %s", code, stderr)
	}
	run := func(extra ...string) (string, scheduleReport) {
		t.Helper()
		code, out, stderr := rootRun(t, append([]string{"simulate", sched, "--trace", toy, "--output", "json"}, extra...)...)
		if code != ExitOK {
			t.Fatalf("simulate %v: exit %d: %s", extra, code, stderr)
		}
		var r scheduleReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return out, r
	}
	cases := []struct {
		name    string
		args    []string
		minBusy float64 // the busiest window's attainment at least
		maxBusy float64 // and at most
	}{
		{name: "ahead", minBusy: 0.98, maxBusy: 1},
		// Window plans are sized to meet 99% at their peaks (solve's rate margin), so the
		// late switch costs the busiest window less than it did (0.962), still a miss.
		{name: "reactive", args: []string{"--switch-ahead=false"}, minBusy: 0, maxBusy: 0.98},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, r := run(tc.args...)
			if again, _ := run(tc.args...); again != out {
				t.Fatal("two runs differ")
			}
			if len(r.Windows) != 3 || r.Peak.Requests == 0 || r.Overall.Requests == 0 {
				t.Fatalf("report %+v: want 3 windows, requests overall and for the peak plan", r)
			}
			if !r.Windows[1].Switched || !r.Windows[2].Switched || r.Windows[0].Switched {
				t.Errorf("switched %v %v %v, want windows 1 and 2", r.Windows[0].Switched, r.Windows[1].Switched, r.Windows[2].Switched)
			}
			if a := r.Windows[1].Attainment; a < tc.minBusy || a > tc.maxBusy {
				t.Errorf("busiest window attainment %v, want in [%v, %v]", a, tc.minBusy, tc.maxBusy)
			}
			// The schedule and the peak plan replay the same arrivals, whichever the mode.
			var windows int64
			for _, w := range r.Windows {
				windows += w.Requests
			}
			if r.Peak.Requests != r.Overall.Requests || windows != r.Overall.Requests {
				t.Errorf("requests: schedule %d (windows %d), peak plan %d: want the same arrivals", r.Overall.Requests, windows, r.Peak.Requests)
			}
			if r.Peak.Attainment < 0.98 {
				t.Errorf("peak plan attainment %v, want ≥ 0.98", r.Peak.Attainment)
			}
			if r.SwitchCost <= 0 || r.Cost <= r.SwitchCost || r.PeakCost <= 0 {
				t.Errorf("cost %v, switch cost %v", r.Cost, r.SwitchCost)
			}
		})
	}
	// --windows replays part of the day: its windows' requests alone, the peak plan over the
	// same span, costs to match; out of range is bad input.
	_, all := run()
	_, part := run("--windows", "2-3")
	if len(part.Windows) != 2 || part.Windows[0].Requests != all.Windows[1].Requests || part.Windows[0].StartS != all.Windows[1].StartS {
		t.Errorf("--windows 2-3: %+v, want the full run's windows 2 and 3 (%+v)", part.Windows, all.Windows[1:])
	}
	if part.Overall.Requests >= all.Overall.Requests || part.PeakCost >= all.PeakCost || part.Peak.Requests != part.Overall.Requests {
		t.Errorf("--windows 2-3: requests %d of %d, peak cost %v of %v", part.Overall.Requests, all.Overall.Requests, part.PeakCost, all.PeakCost)
	}
	for _, bad := range []string{"0-2", "3-2", "4", "x"} {
		if code, _, stderr := rootRun(t, "simulate", sched, "--trace", toy, "--windows", bad); code != ExitUsage || !strings.Contains(stderr, "--windows: \""+bad+"\": must be A-B (or A) with 1 ≤ A ≤ B ≤ 3") {
			t.Errorf("--windows %s: exit %d: %s", bad, code, stderr)
		}
	}
	rdir := filepath.Join(dir, "report")
	if code, _, stderr := rootRun(t, "simulate", sched, "--trace", toy, "-q", "--report", rdir); code != ExitOK {
		t.Fatalf("--report: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"schedule-report.json", "cost.png", "cost.svg", "attainment.png", "attainment.svg"} {
		if st, err := os.Stat(filepath.Join(rdir, f)); err != nil || st.Size() == 0 {
			t.Errorf("--report: %s: %v", f, err)
		}
	}
	code, _, stderr = rootRun(t, "simulate", sched, "--trace", toy, "--policy", "nosuch")
	if code != ExitUsage || !strings.Contains(stderr, "--policy") || !strings.Contains(stderr, "windows[0].plan") {
		t.Errorf("unknown policy: exit %d, %s", code, stderr)
	}
	code, _, stderr = rootRun(t, "simulate", sched)
	if code != ExitUsage || !strings.Contains(stderr, "--trace day.csv") {
		t.Errorf("schedule without --trace: exit %d, %s", code, stderr)
	}
}

// TestSimulateScheduleSystems: every system's schedule replays (its plans deploy, its
// policies serve the trace's rates) and reports all its windows and the peak plan.
func TestSimulateScheduleSystems(t *testing.T) {
	repoRoot(t)
	cases := []struct {
		name, trace string
		solve       []string
	}{
		{"qlm", "testdata/schedule/llm-3windows.csv", []string{"--profile", "testdata/cost/llm-profile.json", "--cluster", "testdata/cost/cluster-llm.yaml", "--workload", "testdata/cost/workload-llm.yaml"}},
		{"dyorc", "testdata/schedule/dyorc-3windows.csv", []string{"--cluster", "testdata/cost/cluster-dyorc.yaml", "--workload", "testdata/dyorc/small.json", "--accept-miss"}},
		{"pard", "testdata/schedule/pard-3windows.csv", []string{"--profile", "testdata/pard/profile.json", "--cluster", "testdata/cost/cluster-pard.yaml", "--workload", "testdata/pard/workload.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sched := filepath.Join(t.TempDir(), "s.json")
			code, _, stderr := rootRun(t, append([]string{"solve", "-q", "--objective", "cost", "-o", sched, "--trace", tc.trace, "--window", "1m"}, tc.solve...)...)
			skipWithoutHiGHS(t, stderr)
			if code != ExitOK {
				t.Fatalf("solve: exit %d: %s", code, stderr)
			}
			code, out, stderr := rootRun(t, "simulate", sched, "--trace", tc.trace, "--output", "json")
			if code != ExitOK {
				t.Fatalf("simulate: exit %d: %s", code, stderr)
			}
			var r scheduleReport
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Windows) != 3 || r.Overall.Requests == 0 || r.Peak.Requests == 0 || r.Overall.Attainment <= 0 {
				t.Errorf("report %+v", r)
			}
			for i, w := range r.Windows {
				if w.Requests == 0 {
					t.Errorf("window %d: no requests", i)
				}
			}
		})
	}
}

// TestWindowPlanSelfConsistent: a window's plan extracted from a schedule names, as its
// workload input, the window's workload (the file with the window's peak rates) with that
// document's digest, not the workload file's, and `plan check --resolve` on it passes.
func TestWindowPlanSelfConsistent(t *testing.T) {
	repoRoot(t)
	cases := []struct {
		name, workload, trace, window string
		args                          func(out string) []string
		heavy                         bool // make test-full only; ppipe stands for it in CI
	}{
		{name: "ppipe", workload: "testdata/cost/workload.yaml", trace: "testdata/schedule/toy-3windows.csv", window: "2m",
			args: func(out string) []string { return windowArgs(out) }},
		{name: "qlm", workload: "testdata/cost/workload-llm.yaml", trace: "testdata/schedule/llm-3windows.csv", window: "1m",
			args: func(out string) []string {
				return []string{"solve", "-q", "--objective", "cost", "--profile", "testdata/cost/llm-profile.json",
					"--cluster", "testdata/cost/cluster-llm.yaml", "--workload", "testdata/cost/workload-llm.yaml", "-o", out}
			}, heavy: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.heavy {
				testmode.Heavy(t, "TestWindowPlanSelfConsistent/ppipe")
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "schedule.json")
			code, _, stderr := rootRun(t, append(tc.args(out), "--trace", tc.trace, "--window", tc.window)...)
			skipWithoutHiGHS(t, stderr)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			s, err := schedule.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			file, err := formats.ReadInto[*formats.Workload](tc.workload, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			fileDigest, err := formats.Digest(file)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range s.Windows {
				planned := make([]float64, len(s.Targets))
				for k := range planned {
					planned[k] = e.PlannedRPS(k)
				}
				wl, err := schedule.WithRates(file, s.Targets, planned)
				if err != nil {
					t.Fatal(err)
				}
				want, err := formats.Digest(wl)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, fmt.Sprintf("window-%d.json", i))
				if err := os.WriteFile(path, e.Plan, 0o644); err != nil {
					t.Fatal(err)
				}
				plan, err := formats.ReadInto[*formats.Plan](path, intree.Sections())
				if err != nil {
					t.Fatal(err)
				}
				found := 0
				for _, r := range plan.Provenance.Inputs {
					if r.Kind != formats.KindWorkload {
						continue
					}
					found++
					if r.Digest != want || r.Digest == fileDigest || r.Path != solve.WindowWorkloadPath(tc.workload, tc.trace) {
						t.Errorf("window %d: workload input %+v, want %s with digest %s (the file's is %s)", i, r, solve.WindowWorkloadPath(tc.workload, tc.trace), want, fileDigest)
					}
				}
				if found != 1 {
					t.Errorf("window %d: %d workload inputs, want 1", i, found)
				}
				if code, stdout, stderr := rootRun(t, "check", "--resolve", path); code != ExitOK {
					t.Errorf("window %d: check --resolve: exit %d\n%s%s", i, code, stdout, stderr)
				}
			}
		})
	}
}

// TestScheduleTraceDigest: a schedule records the trace it was solved for and refuses to
// replay on another (naming both digests); a compressed copy of its trace is the same trace;
// a schedule from before the digest replays with a warning; a trace whose request count is
// past the simulator's per-replay cap is refused before anything is generated.
func TestScheduleTraceDigest(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	sched := filepath.Join(dir, "s.json")
	toy := "testdata/schedule/toy-3windows.csv"
	code, _, stderr := rootRun(t, windowArgs(sched, "--trace", toy, "--window", "2m")...)
	skipWithoutHiGHS(t, stderr)
	if code != ExitOK {
		t.Fatalf("solve: exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(sched)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	digest, _ := doc["trace_digest"].(string)
	if !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("trace_digest %q: want sha256:HEX", digest)
	}
	trace, err := os.ReadFile(toy)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write(trace)
	_ = zw.Close()
	gzTrace := write("toy.csv.gz", z.Bytes())
	other := write("other.csv", append(append([]byte{}, trace...), "# edited\n"...))
	otherDigest, err := schedule.TraceDigestOf(other)
	if err != nil {
		t.Fatal(err)
	}
	// A trace whose rates are a million times the toy's, and a schedule that names it.
	var huge strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(trace)), "\n") {
		f := strings.Split(line, ",")
		if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "time_s") {
			for j := 1; j < len(f); j++ {
				f[j] += "000000"
			}
		}
		huge.WriteString(strings.Join(f, ",") + "\n")
	}
	hugeTrace := write("huge.csv", []byte(huge.String()))
	hugeDigest, err := schedule.TraceDigestOf(hugeTrace)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(name, d string) string {
		m := map[string]any{}
		_ = json.Unmarshal(raw, &m)
		if d == "" {
			delete(m, "trace_digest")
		} else {
			m["trace_digest"] = d
		}
		b, _ := json.Marshal(m)
		return write(name, b)
	}
	old := edit("old.json", "")
	hugeSched := edit("huge.json", hugeDigest)
	cases := []struct {
		name  string
		sched string
		trace string
		code  int
		want  []string
	}{
		{"compressed copy", sched, gzTrace, ExitOK, nil},
		{"another trace", sched, other, ExitUsage, []string{other, otherDigest, digest}},
		{"no digest recorded", old, other, ExitOK, []string{"warning:", "records no trace digest"}},
		{"past the request cap", hugeSched, hugeTrace, ExitUsage, []string{hugeTrace, "more than 5000000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := rootRun(t, "simulate", c.sched, "--trace", c.trace, "-q")
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
