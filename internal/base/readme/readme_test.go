package readme

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const root = "../../.."

// step is one README command and what the test does with it.
type step struct {
	line string
	run  string // the command run instead ("" = the line itself)
	note string // why run replaces the line
	skip string // why it is not run
}

// plan classifies a README command. Everything is run as written, in a scratch copy of the
// repository where bin/plan was just built, except:
//   - `make` (the install command): the test builds bin/plan itself (go build; the solver is
//     found in third_party/ as for any build without the embed tag);
//   - `make demo`: its recipe after `build`, scripts/demo.sh bin/plan (TestMakeDemoRecipe
//     keeps the Makefile saying so);
//   - `make test`: it is the suite that runs this test;
//   - `bin/plan serve` and `bin/plan load`: they hold 127.0.0.1:8080 and run until stopped
//     (serve's and load's own tests cover them on free ports);
//   - a solve of a golden plan's inputs (goldenSolve): its golden plan is copied where the
//     line writes, for the commands after it.
func plan(line string) step {
	cmd := strings.TrimSpace(line)
	if i := strings.Index(cmd, " #"); i >= 0 {
		cmd = strings.TrimSpace(cmd[:i])
	}
	switch {
	case cmd == "make":
		return step{line: line, skip: "the install command: the test builds bin/plan itself"}
	case cmd == "make demo":
		return step{line: line, run: "./scripts/demo.sh bin/plan"}
	case cmd == "make test":
		return step{line: line, skip: "the suite that runs this test"}
	case strings.HasPrefix(cmd, "bin/plan serve"), strings.HasPrefix(cmd, "bin/plan load"):
		return step{line: line, skip: "holds port 8080 until stopped"}
	}
	if c, out, ok := goldenSolve(cmd); ok {
		return step{line: line, run: "cp " + goldenFile(c) + " " + out,
			note: "the solve of golden " + c.File + " (cli's TestSolveGolden solves it byte for byte): its plan copied"}
	}
	return step{line: line}
}

// commands extracts the lines of every ```sh block of a Markdown file.
func commands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case !in && strings.TrimSpace(l) == "```sh":
			in = true
		case in && strings.TrimSpace(l) == "```":
			in = false
		case in && strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#"):
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestREADMECommands: the README's plan-regression example could not run
// as written (`plan` is not on PATH after make; profile.json and plans/golden.json do not
// exist). Every command of README.md runs, in order, in a scratch copy of the repository.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bin/plan and runs the README's commands")
	}
	for _, asset := range []string{"third_party/highs/highs.wasm", "third_party/onnxruntime/libonnxruntime.so"} {
		if _, err := os.Stat(filepath.Join(root, asset)); err != nil {
			if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
				t.Fatalf("%s: %v (run make assets)", asset, err)
			}
			t.Skipf("%s missing (run make assets)", asset)
		}
	}
	lines := commands(t, filepath.Join(root, "README.md"))
	if len(lines) < 10 {
		t.Fatalf("README.md: only %d commands found in ```sh blocks", len(lines))
	}
	dir := scratchCopy(t)
	installPlan(t, filepath.Join(dir, "bin", "plan"))
	env := cleanEnv()
	for _, l := range lines {
		s := plan(l)
		if s.skip != "" {
			t.Logf("skip %s (%s)", strings.TrimSpace(l), s.skip)
			continue
		}
		cmd := s.run
		if cmd == "" {
			cmd = l
		}
		if strings.HasSuffix(strings.TrimSpace(strings.Split(cmd, " #")[0]), "&") {
			t.Errorf("%s: a background command the test does not know how to stop", l)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		c := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail; "+cmd)
		c.Dir, c.Env = dir, env
		start := time.Now()
		out, err := c.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README command failed (%v): %s\n%s", err, strings.TrimSpace(l), tail(string(out), 3000))
			continue
		}
		if s.note != "" {
			t.Logf("ok %s (%s; %s)", strings.TrimSpace(l), s.note, time.Since(start).Round(time.Millisecond))
			continue
		}
		t.Logf("ok %s (%s)", strings.TrimSpace(l), time.Since(start).Round(time.Millisecond))
	}
}

// TestMakeDemoRecipe: make demo is the build followed by scripts/demo.sh bin/plan, which is
// what TestREADMECommands runs for it.
func TestMakeDemoRecipe(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\ndemo: build\n\t./scripts/demo.sh bin/plan\n") {
		t.Error("Makefile: the demo target must be `demo: build` with the one recipe line `./scripts/demo.sh bin/plan`")
	}
}

// scratchCopy makes a directory that looks like a fresh clone after make: every top-level
// entry of the repository linked in, except version control and the outputs the README's
// commands write (bin/ is built fresh).
func scratchCopy(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	leave := map[string]bool{".git": true, "bin": true, "out": true, "plan": true, ".cache": true, "node_modules": true}
	for _, e := range entries {
		n := e.Name()
		if leave[n] || (!e.IsDir() && strings.HasSuffix(n, ".json")) {
			continue
		}
		if err := os.Symlink(filepath.Join(abs, n), filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// cleanEnv is the environment without PLAN_* settings, as on a machine that never ran plan.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLAN_") {
			env = append(env, kv)
		}
	}
	return env
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
