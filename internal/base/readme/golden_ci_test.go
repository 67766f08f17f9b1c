package readme

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runSteps extracts the `run:` steps of the first ```yaml block of a Markdown file (a GitHub
// Actions workflow): one-line `- run: CMD` and block `- run: |` steps, dedented.
func runSteps(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	in, done := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() && !done {
		l := sc.Text()
		switch {
		case !in && strings.TrimSpace(l) == "```yaml":
			in = true
		case in && strings.TrimSpace(l) == "```":
			done = true
		case in:
			lines = append(lines, l)
		}
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	var steps []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		v, ok := strings.CutPrefix(strings.TrimSpace(l), "- run:")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if v != "|" {
			steps = append(steps, v)
			continue
		}
		var block []string
		base := -1
		for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indent(lines[i+1]) > indent(l)) {
			i++
			if base < 0 {
				base = indent(lines[i])
			}
			block = append(block, strings.TrimRight(lines[i][min(base, indent(lines[i])):], " "))
		}
		steps = append(steps, strings.Join(block, "\n"))
	}
	return steps
}

// TestGoldenCIRecipe runs the CI recipe of testdata/golden/README.md: its
// install step must build plan with make (a `go install`ed binary has no solver: every
// plan solve exits 1), and every step after it runs as written in a directory with no plan
// checkout, against a binary built as `make` builds it (highs_embed: the solver inside).
func TestGoldenCIRecipe(t *testing.T) {
	readme := filepath.Join(root, "testdata", "golden", "README.md")
	steps := runSteps(t, readme)
	var rest []string
	installs := 0
	for _, s := range steps {
		if strings.Contains(s, "go install") {
			t.Errorf("%s: step %q installs plan with go install: that binary has no solver (build it with make)", readme, s)
		}
		if strings.Contains(s, "make ") {
			installs++
			for _, w := range []string{"install", "PREFIX=", "GITHUB_PATH"} {
				if !strings.Contains(s, w) {
					t.Errorf("%s: install step %q lacks %q", readme, s, w)
				}
			}
			continue
		}
		if installs > 0 {
			rest = append(rest, s)
		}
	}
	if installs != 1 || len(rest) < 2 {
		t.Fatalf("%s: want one make install step then the plan steps; got %d install steps, steps %q", readme, installs, steps)
	}
	if testing.Short() {
		t.Skip("builds plan with the embedded solver")
	}
	wasm, err := filepath.Abs(filepath.Join(root, "third_party", "highs", "highs.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wasm); err != nil {
		if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
			t.Fatalf("%s: %v (run make assets)", wasm, err)
		}
		t.Skipf("%s missing (run make assets)", wasm)
	}
	// The build of `make`: the embed tag, the pinned wasm as the embedded file (an overlay,
	// so the test writes nothing into the source tree).
	embed, err := filepath.Abs(filepath.Join(root, "solver", "internal", "highs", "embed", "highs.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ovl, _ := json.Marshal(map[string]map[string]string{"Replace": {embed: wasm}})
	if err := os.WriteFile(filepath.Join(tmp, "overlay.json"), ovl, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "bin")
	// make's tags: highs_embed, and this test binary's own (highs_native where make native
	// ran), which also lets the build reuse the packages compiled for this test.
	tags := "highs_embed"
	if tt := testTags(); tt != "" {
		tags += "," + tt
	}
	// -ldflags=-w: no DWARF (no debugger runs it), which halves the link.
	build := exec.Command("go", "build", "-tags", tags, "-ldflags=-w", "-overlay", filepath.Join(tmp, "overlay.json"), "-o", filepath.Join(bin, "plan"), "./cmd/plan")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A user's repository: their inputs and a golden plan they trust.
	work := filepath.Join(tmp, "repo")
	if err := os.MkdirAll(filepath.Join(work, "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"profile.json", "cluster.yaml", "workload.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "testdata", "ppipe", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(cleanEnv(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sh := func(cmd string) {
		t.Helper()
		c := exec.Command("bash", "-c", "set -euo pipefail\n"+cmd)
		c.Dir, c.Env = work, env
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("step failed (%v):\n%s\n%s", err, cmd, tail(string(out), 3000))
		}
	}
	sh("plan solve --deterministic --profile profile.json --cluster cluster.yaml --workload workload.yaml -o plans/golden.json")
	for _, s := range rest {
		sh(s)
	}
}
