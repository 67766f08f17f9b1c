package readme

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/internal/base/testmode"
)

// blockLine is a `plan` command of a README code block that is not a ```sh block (those
// TestREADMECommands runs, with the rest of their lines): the walkthroughs' plain blocks
// write `plan ...` for the plan on PATH, or `bin/plan ...` beside a curl.
type blockLine struct {
	n    int // line number in README.md
	line string
}

// planBlockLines returns the plan commands of README.md's code blocks other than ```sh.
func planBlockLines(t *testing.T, path string) []blockLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []blockLine
	in, sh := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case !in && strings.HasPrefix(l, "```"):
			in, sh = true, l == "```sh"
		case in && l == "```":
			in = false
		case in && !sh && (strings.HasPrefix(l, "plan ") || strings.HasPrefix(l, "bin/plan ")):
			out = append(out, blockLine{n, l})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// blockSkips are the block commands not run, and why, by a pattern of the command.
var blockSkips = []struct{ re, why string }{
	{`^(bin/)?plan serve\b`, "serves on 127.0.0.1:8080 until stopped (serve's own tests cover it on free ports)"},
	{`^(bin/)?plan load\b`, "needs a running server (plan serve or an OpenAI endpoint)"},
	{`--device cuda|--backend trt|--trt\b`, "needs a GPU (CUDA or TensorRT)"},
}

// blockTimeout bounds one command: the walkthroughs' solves stop at their --time-limit and
// the slowest line (a re-solve) takes about a minute on a 2-core machine.
const blockTimeout = 5 * time.Minute

// TestREADMEBlockCommands runs, in order and as written, every `plan` command of the
// README's plain code blocks (the walkthroughs), with `plan` on PATH, in a scratch copy of
// the repository; serve, load and GPU-only commands are left out with their reason.
func TestREADMEBlockCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bin/plan and runs the README's walkthrough commands")
	}
	// About 95 s on 2 cores (every walkthrough solve and simulation): make test-full runs
	// it; in make test the demo walkthrough (TestREADMECommands) and the inline commands'
	// check stand for it.
	testmode.Heavy(t, "TestREADMECommands and TestREADMEInlineCommands")
	if _, err := os.Stat(filepath.Join(root, "third_party/highs/highs.wasm")); err != nil {
		t.Skipf("third_party/highs/highs.wasm missing (run make assets)")
	}
	lines := planBlockLines(t, filepath.Join(root, "README.md"))
	if len(lines) == 0 {
		t.Fatal("README.md: no plan command in a plain code block")
	}
	dir := scratchCopy(t)
	installPlan(t, filepath.Join(dir, "bin", "plan"))
	env := append(cleanEnv(), "PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	ran := 0
next:
	for _, bl := range lines {
		cmd := strings.TrimSpace(strings.SplitN(bl.line, " #", 2)[0])
		for _, s := range blockSkips {
			if regexp.MustCompile(s.re).MatchString(cmd) {
				t.Logf("README.md:%d: skip %s (%s)", bl.n, cmd, s.why)
				continue next
			}
		}
		if strings.HasSuffix(cmd, "&") {
			t.Errorf("README.md:%d: %s: a background command the test does not know how to stop", bl.n, cmd)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
		c := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail; "+cmd)
		c.Dir, c.Env = dir, env
		start := time.Now()
		out, err := c.CombinedOutput()
		cancel()
		ran++
		if err != nil {
			t.Errorf("README.md:%d: command failed (%v, after %s): %s\n%s", bl.n, err, time.Since(start).Round(time.Second), cmd, tail(string(out), 3000))
			continue
		}
		t.Logf("README.md:%d: ok %s (%s)", bl.n, cmd, time.Since(start).Round(time.Millisecond))
	}
	if ran == 0 {
		t.Error("every plain-block command was skipped")
	}
}

// TestREADMEInlineCommands: every `plan ...` the README's prose names (a synopsis such as
// `plan simulate --llm --profile P --trace T`) is a command plan has, with flags that
// command takes: the words up to the first flag or placeholder are the command's path, and
// each --flag must be one of its help's flags.
func TestREADMEInlineCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bin/plan")
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	spans := regexp.MustCompile("`(?:bin/)?plan( [^`]*)?`").FindAllStringSubmatch(string(data), -1)
	if len(spans) < 10 {
		t.Fatalf("README.md: only %d inline plan commands", len(spans))
	}
	bin := filepath.Join(t.TempDir(), "plan")
	installPlan(t, bin)
	word := regexp.MustCompile(`^[a-z][a-z-]*$`)
	flag := regexp.MustCompile(`(^|[\s|(\[])(--?[a-zA-Z][a-zA-Z-]*)`)
	helps := map[string]string{}
	for _, m := range spans {
		args := strings.Fields(m[1])
		var path []string
		for _, a := range args {
			if !word.MatchString(a) || strings.HasSuffix(a, ".json") {
				break
			}
			path = append(path, a)
		}
		key := strings.Join(path, " ")
		help, ok := helps[key]
		if !ok {
			c := exec.Command(bin, append(path, "--help")...)
			c.Env = cleanEnv()
			out, err := c.CombinedOutput()
			if err != nil {
				t.Errorf("%s: `plan %s --help` fails: %v\n%s", m[0], key, err, out)
				continue
			}
			help = string(out)
			helps[key] = help
		}
		// Cobra prints an unknown command's parent help with exit 0: the path must be
		// the command the help is for.
		if key != "" && !strings.Contains(help, "plan "+key) {
			t.Errorf("%s: no command `plan %s`", m[0], key)
			continue
		}
		for _, f := range flag.FindAllStringSubmatch(m[1], -1) {
			name := f[2]
			if !regexp.MustCompile(`(^|\s)`+regexp.QuoteMeta(name)+`\b`).MatchString(help) &&
				!regexp.MustCompile(`-[a-zA-Z], `+regexp.QuoteMeta(name)+`\b`).MatchString(help) {
				t.Errorf("%s: `plan %s` has no flag %s", m[0], key, name)
			}
		}
	}
}
