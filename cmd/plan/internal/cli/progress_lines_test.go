package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/base/testmode"
)

// startedLine is a status line drawn before anything is done: "label: 3ms" (a status, or a
// task before its first step's total is known) or "label [....................] 0/N unit".
var startedLine = regexp.MustCompile(`^[^\r:\[]*(: [0-9][0-9.hm]*(µs|ms|s)\b|: [^\r:\[]*: [0-9][0-9.hm]*(µs|ms|s)\b| \[\.{20}\] 0/)`)

// TestLongCommandsProgress: every long-running command speaks on a terminal before its
// work ends (its first status line is the first thing it writes to stderr, drawn when the
// work starts, so within the 2 s a user waits for a sign of life), writes exactly one
// summary line when its stderr is a pipe, and nothing with --quiet. The terminal and the
// pipe are progress.Buffer's fakes: no pty and no timing.
func TestLongCommandsProgress(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	sched := filepath.Join(dir, "schedule.json")
	plan := filepath.Join(dir, "plan.json")
	for _, args := range [][]string{
		{"solve", "-q", "--objective", "cost", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml",
			"--workload", "testdata/cost/workload.yaml", "--trace", "testdata/schedule/toy-3windows.csv", "--window", "2m", "-o", sched},
		{"solve", "-q", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/ppipe/cluster.yaml", "--workload", "testdata/ppipe/workload.yaml", "-o", plan},
	} {
		if code, stderr := runTB(args...); code != ExitOK {
			skipWithoutHiGHS(t, stderr)
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	engine := filepath.Join("cmd", "plan", "internal", "cli", "testdata", "engine")
	cases := []struct {
		name string
		args []string
		// label starts the status line on a terminal and the summary line on a pipe.
		label string
		// summaries is how many summary lines of label a pipe gets: one per task; none for
		// solve, whose summary is its own last line on stdout; two for the autopilot's run
		// (its windows decided, then its segments replayed).
		summaries int
		// heavy: run three times over, the benches and long runs take most of the test's
		// 100 s on 2 cores; make test-full runs them, and bench solver, solve, the sweep,
		// the replay and profile stand for them in CI (the same progress.Task code).
		heavy bool
	}{
		{"bench solver", []string{"bench", "solver", "--quick"}, "bench solver", 1, false},
		{"bench dyorc", []string{"bench", "dyorc", "--quick"}, "bench dyorc", 1, true},
		{"bench qlm", []string{"bench", "qlm", "--quick", "--workload", "single", "--policies", "qlm", "--speedup", "0.5"}, "bench qlm", 1, true},
		{"bench cascade", []string{"bench", "cascade", "--quick", "--setups", "bert", "--samples", "300", "--window", "5"}, "bench cascade", 1, true},
		{"bench pard", []string{"bench", "pard", "--apps", "lv", "--traces", "tweet", "--policies", "none,pard", "--seeds", "1", "--seconds", "60"}, "bench pard", 1, true},
		{"bench ppipe", []string{"bench", "ppipe", "--quick", "--hc", "HC1", "--no-ablation", "--trace", "poisson"}, "bench ppipe", 1, true},
		{"solve", []string{"solve", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/ppipe/cluster.yaml", "--workload", "testdata/ppipe/workload.yaml",
			"-o", filepath.Join(dir, "solved.json")}, "solve ppipe", 0, false},
		{"solve --window", []string{"solve", "--objective", "cost", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml",
			"--workload", "testdata/cost/workload.yaml", "--trace", "testdata/schedule/toy-3windows.csv", "--window", "2m", "-o", filepath.Join(dir, "windows.json")}, "solve --window", 1, false},
		{"solve --search", []string{"solve", "--objective", "cost", "--search", "--profile", "testdata/cost/llm-profile.json", "--cluster", "testdata/cost/cluster-llm.yaml",
			"--workload", "testdata/cost/workload-llm.yaml", "-o", filepath.Join(dir, "searched.json")}, "solve qlm", 0, true},
		{"frontier", []string{"frontier", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml",
			"--workload", "testdata/cost/workload.yaml", "--rate", "0.5,1"}, "frontier", 1, true},
		{"simulate sweep", []string{"simulate", plan, "--load", "0.5,1", "--duration", "2s"}, "simulate", 1, false},
		{"simulate schedule", []string{"simulate", sched, "--trace", "testdata/schedule/toy-3windows.csv"}, "simulate", 1, true},
		{"simulate autopilot", append([]string{"simulate", "testdata/serve/demo-plan.json", "--trace", "testdata/autopilot/step.json", "--load", "0.1059",
			"--autopilot-load-time", "0s"}, agreeArgs...), "simulate --autopilot: autopilot", 2, true},
		{"profile (ONNX Runtime)", []string{"profile", "testdata/onnx/torch_style.onnx", "--device", "cpu", "-o", filepath.Join(dir, "measured.json")},
			"profile: measuring torch_style on cpu", 1, false},
		{"simulate --llm", []string{"simulate", "--llm", "--profile", filepath.Join(engine, "profile.json"), "--trace", filepath.Join(engine, "trace.json")}, "simulate --llm", 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.heavy {
				testmode.Heavy(t, "TestLongCommandsProgress's bench solver, solve, sweep, replay and profile cases")
			}
			tty := &progressline.Buffer{TTY: true}
			code := Run(tc.args, Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: tty})
			skipWithoutHiGHS(t, tty.String())
			if strings.Contains(tty.String(), "ONNX Runtime library not available") && os.Getenv("PLAN_REQUIRE_ALL") != "1" {
				t.Skip("ONNX Runtime missing (run make assets)")
			}
			if code != ExitOK {
				t.Fatalf("terminal: exit %d: %s", code, tty.String())
			}
			// The first time the status line is drawn it has nothing done yet: it was drawn
			// when the work started, not after it.
			got := tty.String()
			i := strings.Index(got, "\r\033[K"+tc.label)
			if i < 0 {
				t.Fatalf("terminal: no status line %q:\n%.400q", tc.label, got)
			}
			if first := got[i+3:]; !startedLine.MatchString(first) {
				t.Errorf("terminal: the first status line is not drawn before the work: %.200q", first)
			}
			pipe := &progressline.Buffer{}
			if code := Run(tc.args, Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: pipe}); code != ExitOK {
				t.Fatalf("pipe: exit %d: %s", code, pipe.String())
			}
			if strings.Contains(pipe.String(), "\r") {
				t.Errorf("pipe: a terminal's rewritten line: %q", pipe.String())
			}
			summary := regexp.MustCompile(`^` + regexp.QuoteMeta(tc.label) + `(: \d+/\d+ [^,]*,|:) [0-9][0-9.hm]*(µs|ms|s)\b`)
			n := 0
			for _, l := range strings.Split(pipe.String(), "\n") {
				if summary.MatchString(l) {
					n++
				}
			}
			if n != tc.summaries {
				t.Errorf("pipe: %d summary lines of %q, want %d:\n%s", n, tc.label, tc.summaries, pipe.String())
			}
			quiet := &progressline.Buffer{TTY: true}
			if code := Run(append(tc.args, "-q"), Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: quiet}); code != ExitOK {
				t.Fatalf("quiet: exit %d: %s", code, quiet.String())
			}
			if strings.Contains(quiet.String(), tc.label+":") || strings.Contains(quiet.String(), "\r") {
				t.Errorf("quiet: progress written: %q", quiet.String())
			}
		})
	}
	if _, err := os.Stat(plan); err != nil {
		t.Fatal(err)
	}
}
