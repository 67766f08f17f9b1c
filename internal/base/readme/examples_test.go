package readme

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// Every example of a command's help runs as written, each in a directory of its own that
// links in the repository (testdata/ and the rest; `plan` on PATH) and the files the
// examples name generically ("your plan.json", "your steps.csv"), each made from testdata/
// as a user makes theirs: by the command another example shows, or copied from a file of
// that kind. fix SRC DST copies (never through a link).
var examplePrelude = []string{
	"fix testdata/ppipe/cluster.yaml cluster.yaml",
	"fix testdata/ppipe/workload.yaml workload.yaml",
	"fix testdata/ppipe/profile.json profile.json",
	"plan solve -o plan.json -q",
	"plan solve --strategy np -o np.json -q",
	"fix testdata/autopilot/step.json arrivals.json",
	"fix testdata/load/azure.csv azure-llm-2023-conv.csv",
	"fix testdata/load/azure.csv azure-llm-2023-code.csv",
	"fix testdata/schedule/day.csv day.csv",
	"fix testdata/cost/workload.yaml w.yaml",
	"fix testdata/cost/cluster-priced.yaml c.yaml",
	"fix testdata/onnx/static_batch.onnx model.onnx",
	"fix profiler/llm/testdata/steps.csv steps.csv",
	"fix cmd/plan/internal/cli/testdata/engine/steps-log.csv llama3-8b-h100-tp2-steps.csv",
	"plan profile --import llama3-8b-h100-tp2-steps.csv -o engine.json -q",
	"fix engine.json engine-profile.json",
	"fix cmd/plan/internal/cli/testdata/engine/trace.json requests.json",
	"fix testdata/cost/llm-profile.json llm.json",
	"fix testdata/cost/cluster-llm.yaml mixed.yaml",
	"fix testdata/cost/workload-llm.yaml classes.yaml",
}

// commandPrelude overrides a generic name for one command's examples, where the command
// means another kind of file by it (plan workload's profile.json is an LLM profile).
var commandPrelude = map[string][]string{
	"plan workload": {
		"fix testdata/qlm/profile.json profile.json",
		"fix testdata/fromtrace/llm-two-classes.json trace.json",
		"fix testdata/load/azure.csv azure_conv.csv",
		"fix testdata/formats/good/trace-counts.json counts.json",
	},
	"plan import": {
		"fix testdata/cascade/workload-small.yaml workload.yaml",
		"fix records.csv bert-tiny.csv", "fix records.csv test.csv",
		"fix records.jsonl logits.jsonl",
	},
}

// examplePrereq is what one example needs made first, in its own directory: the output of
// the example before it.
var examplePrereq = map[string]string{
	"plan export --check repo/":                   "plan export plan.json --to triton -o repo/ -q",
	"plan simulate schedule.json --trace day.csv": "plan solve --objective cost --profile profile.json --workload w.yaml --cluster c.yaml --trace day.csv --window 1h -o schedule.json -q",
}

// exampleSkips are the examples not run, and why: by a pattern of the command line.
var exampleSkips = []struct {
	re, why string
}{
	{`^plan serve\b|^curl |^kill -HUP`, "serves until stopped (serve's own tests cover it on free ports)"},
	{`^plan load\b`, "needs a running server (plan serve or an OpenAI endpoint)"},
	{`--device cuda|--backend trt|--trt\b`, "needs a GPU (CUDA or TensorRT exports)"},
	{`--engine native`, "needs the native HiGHS build (make native)"},
	{`^plan completion (zsh|fish)`, "writes into the user's shell configuration"},
	{`--input-shape 3,224,224`, "needs an ONNX model with a 3×224×224 input: testdata's are tiny"},
	{`--model resnet50\.onnx`, "needs the ResNet-50 ONNX file (not in the repository: 100 MB)"},
	{`--profile my-profile\.json`, "your own measured profile and records (bench cascade's user mode)"},
}

// slowExamples run only with PLAN_EXAMPLES=all (the CI budget is tight): paper benches,
// full sweeps and day-long schedules take from tens of seconds to minutes each.
var slowExamples = []string{
	`^plan bench\b`, `PLAN_WRITE_LP`, `^plan simulate plan.json$`, `--load 0.5:1.0:0.05`,
	`^plan frontier`, `--llm all`, `--window 1h`, `^plan simulate schedule.json`, `^plan profile$`,
}

// helpExamples returns, per command path ("plan bench ppipe"), the example lines of its help
// (the Examples: section; a line ending in \ continues), found by walking the command tree.
func helpExamples(t *testing.T, dir string, env []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var walk func(path []string)
	walk = func(path []string) {
		c := exec.Command(filepath.Join(dir, "bin", "plan"), append(path, "--help")...)
		c.Dir, c.Env = dir, env
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("plan %s --help: %v\n%s", strings.Join(path, " "), err, b)
		}
		var exs, subs []string
		section := ""
		cont := false
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" && l[0] != ' ' {
				section = strings.TrimSuffix(l, ":")
				continue
			}
			s := strings.TrimSpace(l)
			switch {
			case s == "":
				cont = false
			case section == "Examples" && strings.HasPrefix(s, "#"):
			case section == "Examples" && cont:
				exs[len(exs)-1] += " " + strings.TrimSuffix(s, "\\")
				cont = strings.HasSuffix(s, "\\")
			case section == "Examples":
				exs = append(exs, strings.TrimSuffix(s, "\\"))
				cont = strings.HasSuffix(s, "\\")
			case section == "Available Commands":
				if name := strings.Fields(s)[0]; name != "help" {
					subs = append(subs, name)
				}
			}
		}
		out["plan "+strings.Join(path, " ")] = exs
		for _, s := range subs {
			walk(append(append([]string{}, path...), s))
		}
	}
	walk(nil)
	return out
}

// TestHelpExamples runs every command's help examples as written (exit 0), with the
// reasons for those it leaves out listed; slow ones run with PLAN_EXAMPLES=all, and
// PLAN_EXAMPLES_RUN=REGEXP runs only the examples it matches.
func TestHelpExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bin/plan and runs every help example")
	}
	if _, err := os.Stat(filepath.Join(root, "third_party/highs/highs.wasm")); err != nil {
		t.Skipf("third_party/highs/highs.wasm missing (run make assets)")
	}
	dir := scratchCopy(t)
	installPlan(t, filepath.Join(dir, "bin", "plan"))
	env := append(cleanEnv(), "PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
	writeRecords(t, dir)
	for _, p := range examplePrelude {
		if out, err := runIn(dir, env, p, time.Minute); err != nil {
			t.Fatalf("prelude %s: %v\n%s", p, err, tail(out, 2000))
		}
	}
	all := os.Getenv("PLAN_EXAMPLES") == "all"
	exs := helpExamples(t, dir, env)
	cmds := make([]string, 0, len(exs))
	for c := range exs {
		cmds = append(cmds, c)
	}
	sort.Strings(cmds)
	n, start, seen := 0, time.Now(), map[string]bool{}
	for _, cmd := range cmds {
		base := dir
		if pre := commandPrelude[strings.Join(strings.Fields(cmd)[:min(2, len(strings.Fields(cmd)))], " ")]; pre != nil {
			base = linkDir(t, dir)
			for _, p := range pre {
				if out, err := runIn(base, env, p, time.Minute); err != nil {
					t.Fatalf("%s prelude %s: %v\n%s", cmd, p, err, tail(out, 2000))
				}
			}
		}
		for _, l := range exs[cmd] {
			line := strings.TrimSpace(strings.Split(l, " #")[0])
			if seen[line] {
				continue // a parent's help repeats its subcommands' examples
			}
			seen[line] = true
			if why := skipReason(line); why != "" {
				t.Logf("skip %s (%s)", line, why)
				continue
			}
			if c, _, ok := goldenSolve(line); ok {
				t.Logf("skip %s (the solve of golden %s: cli's TestSolveGolden solves it byte for byte)", line, c.File)
				continue
			}
			limit := time.Minute
			if matchesAny(slowExamples, line) {
				if !all {
					t.Logf("slow, with PLAN_EXAMPLES=all: %s", line)
					continue
				}
				limit = 20 * time.Minute // a day's schedule simulates for ~16 min
			}
			if only := os.Getenv("PLAN_EXAMPLES_RUN"); only != "" && !regexp.MustCompile(only).MatchString(line) {
				continue
			}
			n++
			t0 := time.Now()
			exDir := linkDir(t, base)
			if pre := examplePrereq[line]; pre != "" {
				if out, err := runIn(exDir, env, pre, time.Minute); err != nil {
					t.Fatalf("%s: %v\n%s", pre, err, tail(out, 1500))
				}
			}
			if out, err := runIn(exDir, env, line, limit); err != nil {
				t.Errorf("%s: example failed (%v): %s\n%s", cmd, err, line, tail(out, 1500))
				continue
			}
			t.Logf("ok %s (%s)", line, time.Since(t0).Round(time.Millisecond))
		}
	}
	t.Logf("%d examples in %s", n, time.Since(start).Round(time.Millisecond))
	if n < 30 && os.Getenv("PLAN_EXAMPLES_RUN") == "" {
		t.Errorf("only %d examples run: the extraction found %v", n, exs)
	}
}

// linkDir makes a fresh directory linking every entry of dir, so an example's outputs
// (an export's repo/, a report's out/) never meet another's.
func linkDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	for _, e := range entries {
		src, dst := filepath.Join(dir, e.Name()), filepath.Join(d, e.Name())
		st, err := os.Stat(src) // through a link: what it names
		if err != nil {
			t.Fatal(err)
		}
		if st.IsDir() {
			if err := os.Symlink(src, dst); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// Files copied: plan refuses an input file that is a symbolic link out of its
		// directory (it could name anything).
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(dst, b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// writeRecords writes records.csv and records.jsonl, the validation records of
// testdata/cascade/workload-small.yaml as a user's export of them would hold them (the
// files plan import validation's examples read).
func writeRecords(t *testing.T, dir string) {
	t.Helper()
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "testdata/cascade/workload-small.yaml"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	var csv, jsonl strings.Builder
	csv.WriteString("sample,model,pred,cert,label\n")
	for _, r := range cascadesec.CascadesOf(w)[0].Validation {
		fmt.Fprintf(&csv, "%d,%s,%s,%g,%s\n", r.Sample, r.Model, r.Pred, r.Cert, r.Label)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		jsonl.Write(append(b, '\n'))
	}
	for name, data := range map[string]string{"records.csv": csv.String(), "records.jsonl": jsonl.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func skipReason(line string) string {
	for _, s := range exampleSkips {
		if regexp.MustCompile(s.re).MatchString(line) {
			return s.why
		}
	}
	return ""
}

func matchesAny(res []string, line string) bool {
	for _, re := range res {
		if regexp.MustCompile(re).MatchString(line) {
			return true
		}
	}
	return false
}

// runIn runs a shell line in dir (bash, pipefail) within limit.
func runIn(dir string, env []string, line string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", `set -euo pipefail; fix() { rm -f "$2"; cp "$1" "$2"; }; `+line)
	c.Dir, c.Env = dir, env
	out, err := c.CombinedOutput()
	return string(out), err
}
