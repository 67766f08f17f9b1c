package cli

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileFileFlags (issue 36 item 10): `--config FIFO`, `PLAN_CONFIG=FIFO` and
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

// TestDuplicateKeyPlans (issue 36 item 11): a plan whose JSON names a key twice (the last
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
