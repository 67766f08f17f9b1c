package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
)

// TestHostileFileFlags: `--config FIFO`, `PLAN_CONFIG=FIFO` and
// `bench solver --lp FIFO` blocked forever (ignoring SIGTERM), and `--config /dev/zero` and
// `--lp /dev/zero` grew to gigabytes: every file-taking flag goes through the guarded reader,
// which refuses what is not a regular file before opening it (exit 2, naming the flag and
// path).
func TestHostileFileFlags(t *testing.T) {
	repoRoot(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	plan := "testdata/export/qlm/plan.json"
	cases := []struct {
		name string
		args []string
		env  string // PLAN_CONFIG
		want []string
	}{
		{"--config FIFO", []string{"validate", plan, "--config", fifo}, "", []string{"--config " + fifo, "named pipe"}},
		{"PLAN_CONFIG=FIFO", []string{"validate", plan}, fifo, []string{"--config " + fifo, "named pipe"}},
		{"--config /dev/zero", []string{"validate", plan, "--config", "/dev/zero"}, "", []string{"--config /dev/zero", "a device"}},
		{"--config directory", []string{"validate", plan, "--config", "testdata"}, "", []string{"--config testdata", "is a directory"}},
		{"--lp FIFO", []string{"bench", "solver", "--quick", "--lp", fifo}, "", []string{"--lp " + fifo, "named pipe"}},
		{"--lp /dev/zero", []string{"bench", "solver", "--quick", "--lp", "/dev/zero"}, "", []string{"--lp /dev/zero", "a device"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PLAN_CONFIG", c.env)
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, stdout, stderr := rootRun(t, c.args...)
				done <- result{code, stdout, stderr}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(60 * time.Second): // a hang guard, not a timing assertion
				t.Fatalf("plan %s: still blocked after a minute", strings.Join(c.args, " "))
			}
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, ExitUsage, r.stdout, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// TestDuplicateKeyPlans: a plan whose JSON names a key twice (the last
// won: `"count": 64, "count": 1`) is bad input for every command that reads a plan.
func TestDuplicateKeyPlans(t *testing.T) {
	const plan = "testdata/badinput/plan-duplicate-key.json"
	want := []string{plan + `: cluster.gpus[0].count: duplicate key "count" (line 99)`}
	runBadInput(t, []badInputCase{
		{name: "validate", args: []string{"validate", plan}, code: ExitUsage, want: want},
		{name: "check", args: []string{"check", plan}, code: ExitUsage, want: want},
		{name: "simulate", args: []string{"simulate", plan, "--load", "1", "--duration", "1s"}, code: ExitUsage, want: want},
		{name: "export", args: []string{"export", plan, "--to", "triton", "-o", "$TMP/out"}, code: ExitUsage, want: want, out: "out"},
	})
}

// TestLongProblemListsAreCut: 48k duplicate names printed 48,219 error
// lines. validate prints formats.MaxListedProblems of a file's problems and says how many
// more; -O json still lists all of them.
func TestLongProblemListsAreCut(t *testing.T) {
	const dups = 3000
	var b strings.Builder
	b.WriteString("apiVersion: plan/v1\nkind: Cluster\nmetadata:\n  name: dups\nnic_gbps: 10\ngpus:\n")
	for i := 0; i <= dups; i++ {
		b.WriteString("  - {type: L4, count: 1, per_server: 1}\n")
	}
	path := filepath.Join(t.TempDir(), "dups.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := rootRun(t, "validate", path)
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d", code, ExitUsage)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if n := strings.Count(stderr, "duplicate GPU type"); n != formats.MaxListedProblems {
		t.Errorf("%d problems printed, want %d", n, formats.MaxListedProblems)
	}
	more := fmt.Sprintf("%s: ... and %d more problems", path, dups-formats.MaxListedProblems)
	if len(lines) != formats.MaxListedProblems+2 || lines[formats.MaxListedProblems] != more {
		t.Errorf("%d lines, want %d problems, %q and the summary:\n%.300s", len(lines), formats.MaxListedProblems, more, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("(%d in all)", dups)) {
		t.Errorf("the summary lacks the count of all problems:\n%s", lines[len(lines)-1])
	}
	code, stdout, _ := rootRun(t, "validate", path, "-O", "json")
	if code != ExitUsage || strings.Count(stdout, `"duplicate GPU type"`) != dups {
		t.Errorf("-O json: exit %d, %d problems, want all %d", code, strings.Count(stdout, `"duplicate GPU type"`), dups)
	}
}

// TestValidateStdinZeros: zeros on standard input are refused from their
// first bytes as binary data (they reached 1.78 GB before the parser refused them).
func TestValidateStdinZeros(t *testing.T) {
	var out, errb bytes.Buffer
	z := &zeroReader{}
	code := Run([]string{"validate", "-"}, Streams{In: z, Out: &out, Err: &errb})
	if code != ExitUsage || !strings.Contains(errb.String(), "<stdin>: cannot read: binary data (byte 0x00 at offset 0): not a YAML or JSON document") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	if z.n > formats.SniffBytes {
		t.Errorf("read %d bytes of zeros, want at most %d", z.n, formats.SniffBytes)
	}
}

// zeroReader is an endless stream of NUL bytes counting what was read.
type zeroReader struct{ n int64 }

func (z *zeroReader) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}
