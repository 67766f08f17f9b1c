package cli

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputFileKinds: input files are regular files (a FIFO, or a link out of the file's
// directory, is refused with the reason, exit 2), and a compressed input reads as its
// content wherever a file is read; a cut compressed file is exit 2 naming it.
func TestInputFileKinds(t *testing.T) {
	plan, err := os.ReadFile(demoPlanPath)
	if err != nil {
		t.Fatal(err)
	}
	dir, outside := t.TempDir(), t.TempDir()
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write(plan)
	_ = w.Close()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gzPlan := write("plan.json.gz", z.Bytes())
	cut := write("cut.json.gz", z.Bytes()[:z.Len()/2])
	secret := filepath.Join(outside, "plan.json")
	if err := os.WriteFile(secret, plan, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	// An export directory holding a FIFO, another a link out of it.
	fifoDir, linkDir := t.TempDir(), t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "model.yaml"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink(secret, filepath.Join(linkDir, "inferenceservice.yaml")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"gz plan", []string{"validate", gzPlan}, ExitOK, nil},
		{"cut gz plan", []string{"validate", cut}, ExitUsage, []string{cut, "truncated compressed file"}},
		{"link out", []string{"validate", link}, ExitUsage, []string{link, "symbolic link out of its directory", secret, "--follow-links reads it"}},
		{"link out, followed", []string{"validate", "--follow-links", link}, ExitOK, nil},
		{"link out after a followed run", []string{"validate", link}, ExitUsage, []string{"symbolic link out of its directory"}},
		{"export --check FIFO", []string{"export", "--check", fifoDir}, ExitUsage, []string{"model.yaml", "named pipe (FIFO)", "regular files only"}},
		{"export --check link", []string{"export", "--check", linkDir}, ExitUsage, []string{"inferenceservice.yaml", "symbolic link to", "regular files only"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			type result struct {
				code   int
				stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, _, stderr := rootRun(t, c.args...)
				done <- result{code, stderr}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(60 * time.Second): // a hang guard, not a timing assertion
				t.Fatalf("plan %s: still blocked after a minute", strings.Join(c.args, " "))
			}
			if r.code != c.code {
				t.Fatalf("exit %d, want %d: %s", r.code, c.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// TestAutopilotRequestCap: simulate --autopilot holds its generated arrivals to the sweep's
// per-point cap and refuses, naming the load and the window, instead of filling memory.
func TestAutopilotRequestCap(t *testing.T) {
	code, _, stderr := rootRun(t, "simulate", demoPlanPath, "--autopilot", "--trace", "poisson", "--load", "100000", "--duration", "1h")
	if code != ExitUsage || !strings.Contains(stderr, "--load 100000") || !strings.Contains(stderr, "more than 5000000 requests") {
		t.Fatalf("exit %d, want 2 naming the cap: %s", code, stderr)
	}
}
