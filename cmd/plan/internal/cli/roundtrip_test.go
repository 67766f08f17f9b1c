package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/base/goldencases"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run/validate"
)

// TestRoundTripEveryWrittenKind: every kind of file plan writes (exports aside) is written by
// its command, accepted by `plan validate` as its kind, read by what reads that kind (the
// decoder of the command that takes it, and the command itself where one does) and written
// again byte-identical. The benches run their smallest settings (a second or two each). A
// solve whose arguments are a golden case's (goldencases.Of) takes the golden plan: the
// solve writes it byte for byte (TestSolveGolden). The PPipe plan is solved here, so a plan
// with this run's solve times round-trips too.
func TestRoundTripEveryWrittenKind(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	// A cluster is written by no command: formats.Marshal (every document writer's encoding)
	// of the bundled one stands for it.
	c, err := formats.ReadFile("testdata/cost/cluster-priced.yaml", intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	cb, err := formats.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out("cluster.json"), cb, 0o644); err != nil {
		t.Fatal(err)
	}
	csv := out("recs.csv")
	if err := os.WriteFile(csv, []byte("sample,model,pred,cert,label\n0,m,a,0.9,a\n1,m,b,0.8,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	solve := func(sys, cluster, workload, profile string, more ...string) []string {
		a := []string{"solve", "-q", "--cluster", cluster, "--workload", workload, "-o", out("plan-" + sys + ".json")}
		if profile != "" {
			a = append(a, "--profile", profile)
		}
		return append(a, more...)
	}
	cases := []struct {
		kind, file string
		// write is the command that writes file (nil: written above); stdout is captured to
		// file when the command prints it.
		write  []string
		stdout bool
		// read is a command that takes the file ("FILE" is replaced by its path).
		read []string
	}{
		{"Plan", "plan-ppipe.json", solve("ppipe", "testdata/ppipe/cluster.yaml", "testdata/ppipe/workload.yaml", "testdata/ppipe/profile.json"), false,
			[]string{"simulate", "FILE", "--load", "0.5", "--duration", "2s", "-q"}},
		{"Plan", "plan-pard.json", solve("pard", "testdata/pard/cluster.json", "testdata/pard/workload.json", "testdata/pard/profile.json"), false,
			[]string{"simulate", "FILE", "--load", "0.5", "--duration", "2s", "-q"}},
		{"Plan", "plan-dyorc.json", solve("dyorc", "testdata/dyorc/cluster.json", "testdata/dyorc/workload.json", "", "--accept-miss"), false, nil},
		{"Plan", "plan-cascade.json", solve("cascade", "testdata/cascade/cluster.yaml", "testdata/cascade/workload.yaml", "testdata/cascade/profile.json"), false, nil},
		{"Plan", "plan-qlm.json", solve("qlm", "testdata/qlm/cluster.yaml", "testdata/qlm/workload.yaml", "testdata/qlm/profile.json"), false, nil},
		{"Profile", "profile-dnn.json", []string{"profile", "-q", "--zoo", "resnet50", "--gpu", "L4", "--batch", "1,2", "-o", out("profile-dnn.json")}, false, nil},
		{"Profile", "profile-llm.json", []string{"profile", "-q", "--llm", "mistral-7b", "--gpu", "A100", "-o", out("profile-llm.json")}, false,
			[]string{"workload", "from-trace", "testdata/fromtrace/llm-two-classes.json", "--profile", "FILE", "-o", out("unused.json"), "-q"}},
		{"Workload", "workload.json", []string{"workload", "from-trace", "testdata/fromtrace/llm-two-classes.json", "--slo", "20s", "-o", out("workload.json"), "-q"}, false, nil},
		{"Cluster", "cluster.json", nil, false,
			[]string{"solve", "-q", "--profile", "testdata/ppipe/profile.json", "--cluster", "FILE", "--workload", "testdata/cost/workload.yaml", "--objective", "cost", "-o", out("plan-cost.json")}},
		{"ValidationRecords", "recs.json", []string{"import", "validation", csv, "-o", out("recs.json")}, false,
			[]string{"import", "validation", "FILE", "-o", out("recs-again.json")}},
		{"Schedule", "schedule.json", []string{"solve", "-q", "--objective", "cost", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml",
			"--workload", "testdata/cost/workload.yaml", "--trace", "testdata/schedule/toy-3windows.csv", "--window", "2m", "-o", out("schedule.json")}, false, nil},
		{"ScheduleReport", "sched-rep/schedule-report.json", []string{"simulate", out("schedule.json"), "--trace", "testdata/schedule/toy-3windows.csv", "--report", out("sched-rep"), "-q"}, false, nil},
		{"SimulationReport", "rep/report.json", []string{"simulate", out("plan-ppipe.json"), "--load", "0.5,1", "--duration", "3s", "--report", out("rep"),
			"--requests-out", out("requests.jsonl"), "-q"}, false, nil},
		{"SimulatedRequests", "requests.jsonl", nil, false, nil},
		{"AutopilotReport", "ap-rep/autopilot-report.json", append([]string{"simulate", "testdata/serve/demo-plan.json", "--trace", "testdata/autopilot/step.json", "--load", "0.1059",
			"--autopilot-load-time", "0s", "--report", out("ap-rep"), "-q"}, agreeArgs...), false, nil},
		{"Frontier", "frontier.json", []string{"frontier", "-q", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml",
			"--workload", "testdata/cost/workload.yaml", "--rate", "0.5,1", "-O", "json"}, true, nil},
		{"SolverBench", "bench-solver/bench.json", []string{"bench", "solver", "--quick", "-q", "--report", out("bench-solver")}, false, nil},
		{"DyOrcBench", "bench-dyorc/bench.json", []string{"bench", "dyorc", "--quick", "-q", "--report", out("bench-dyorc")}, false, nil},
		{"QLMBench", "bench-qlm/bench.json", []string{"bench", "qlm", "--quick", "--workload", "single", "--policies", "qlm", "--speedup", "0.5", "-q", "--report", out("bench-qlm")}, false, nil},
		{"CascadeBench", "bench-cascade/bench.json", []string{"bench", "cascade", "--quick", "--setups", "bert", "--samples", "300", "--window", "5", "-q", "--report", out("bench-cascade")}, false, nil},
		{"PARDBench", "bench-pard/bench.json", []string{"bench", "pard", "--apps", "lv", "--traces", "tweet", "--policies", "none,pard", "--seeds", "1", "--seconds", "60", "-q", "--report", out("bench-pard")}, false, nil},
		{"PPipeBench", "bench-ppipe/bench.json", []string{"bench", "ppipe", "--quick", "--hc", "HC1", "--no-ablation", "--trace", "poisson", "-q", "--report", out("bench-ppipe")}, false, nil},
	}
	app := &App{Systems: systems.Default()}
	for _, tc := range cases {
		t.Run(tc.kind+"/"+tc.file, func(t *testing.T) {
			path := out(tc.file)
			if c, ok := goldenSolveOf(tc.write); ok {
				b, err := os.ReadFile(filepath.Join("testdata", "golden", c.File))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if tc.write != nil {
				code, stdout, stderr := rootRun(t, tc.write...)
				skipWithoutHiGHS(t, stderr)
				if code != ExitOK {
					t.Fatalf("%v: exit %d: %s", tc.write, code, stderr)
				}
				if tc.stdout {
					if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			written, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := rootRun(t, "validate", path)
			if code != ExitOK || !strings.Contains(stdout, "ok ("+tc.kind+")") {
				t.Fatalf("validate: exit %d: %s%s", code, stdout, stderr)
			}
			again, err := rereadWritten(app, path, written)
			if err != nil {
				t.Fatalf("read back: %v", err)
			}
			if !bytes.Equal(again, written) {
				t.Errorf("read and written again differs from what %v wrote:\n%s", tc.write, firstDiff(written, again))
			}
			if tc.read != nil {
				args := make([]string, len(tc.read))
				for i, a := range tc.read {
					args[i] = strings.ReplaceAll(a, "FILE", path)
				}
				if code, _, stderr := rootRun(t, args...); code != ExitOK {
					t.Errorf("%v: exit %d: %s", args, code, stderr)
				}
			}
		})
	}
}

// goldenSolveOf is the golden case that command line args (without the program's name)
// solves, if any.
func goldenSolveOf(args []string) (goldencases.Case, bool) {
	if len(args) < 2 || args[0] != "solve" {
		return goldencases.Case{}, false
	}
	return goldencases.Of(args[1:])
}

// rereadWritten reads a written file as its kind and writes it again: the documents through
// formats (Parse, Marshal), the schedule and records through their decoders, every other
// kind through writtenKinds.
func rereadWritten(app *App, name string, data []byte) ([]byte, error) {
	if k, ok := validate.KindOf(app.Systems, toolBenches, data); ok {
		return k.Reread(name, data)
	}
	if kind, errs, ok := validate.OtherKind(name, data, app.Systems.Sections()); ok {
		if len(errs) > 0 {
			return nil, errs
		}
		return validate.RereadOther(kind, name, data)
	}
	doc, err := formats.Parse(name, data, app.Systems.Sections())
	if err != nil {
		return nil, err
	}
	return formats.Marshal(doc)
}

// firstDiff shows where two files part.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-80)
	return "written:  " + string(a[lo:min(len(a), i+80)]) + "\nre-read:  " + string(b[lo:min(len(b), i+80)])
}
