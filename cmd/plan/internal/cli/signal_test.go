package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as the plan command for the signal tests: with
// PLAN_TEST_AS_CLI=1 it runs Run on its arguments and exits with its code.
func TestMain(m *testing.M) {
	if os.Getenv("PLAN_TEST_AS_CLI") == "1" {
		// Early signals (before Run listens) must not kill the helper: the parent repeats them
		// once the helper said it is ready.
		signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGTERM)
		if f := os.Getenv("PLAN_TEST_READY"); f != "" {
			os.WriteFile(f, nil, 0o644)
		}
		os.Exit(Run(os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	}
	os.Exit(m.Run())
}

// planProcess runs the test binary as `plan ARGS...` in the repository root.
func planProcess(t *testing.T, stdin *os.File, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = filepath.Join("..", "..", "..", "..")
	ready := filepath.Join(t.TempDir(), "ready")
	cmd.Env = append(os.Environ(), "PLAN_TEST_AS_CLI=1", "PLAN_TEST_READY="+ready)
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = stdin, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cmd, &stderr
}

// waitExit waits for the process, signalling it every 200 ms when sig is set, and returns
// its exit code (-1 if it had to be killed after the deadline).
func waitExit(t *testing.T, cmd *exec.Cmd, sig os.Signal, deadline time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(deadline)
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode()
			}
			if err != nil {
				t.Fatal(err)
			}
			return 0
		case <-tick.C:
			if sig != nil {
				cmd.Process.Signal(sig)
			}
		case <-limit:
			cmd.Process.Kill()
			<-done
			return -1
		}
	}
}

// TestSignalsAndBlockingReads: plan validate|check|simulate blocked forever
// on a FIFO and ignored SIGTERM; plan profile read /dev/zero until memory ran out. Special
// files are refused at once (exit 2), and a read of standard input that never ends gives up
// on SIGTERM or SIGINT (exit 143 or 130: 128 + the signal, as a shell reports it).
func TestSignalsAndBlockingReads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the CLI in subprocesses")
	}
	fifo := filepath.Join(t.TempDir(), "plan.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"validate", fifo},
		{"check", fifo},
		{"simulate", fifo, "--load", "0.5", "--duration", "1s"},
		{"solve", "--cluster", fifo, "-o", filepath.Join(t.TempDir(), "p.json")},
		{"profile", "/dev/zero", "--backend", "roofline", "-o", filepath.Join(t.TempDir(), "p.json")},
	} {
		t.Run(args[0]+" special file", func(t *testing.T) {
			cmd, stderr := planProcess(t, nil, args...)
			if code := waitExit(t, cmd, nil, 20*time.Second); code != ExitUsage || !strings.Contains(stderr.String(), "not a regular file") {
				t.Errorf("exit %d, want 2 naming the file as not regular:\n%s", code, stderr)
			}
		})
	}
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run("stdin never ends, "+sig.String(), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close() // open for the whole run: the read never sees EOF
			cmd, stderr := planProcess(t, r, "validate", "-")
			r.Close()
			want := 128 + int(sig.(syscall.Signal))
			if code := waitExit(t, cmd, sig, 20*time.Second); code != want || !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("exit %d, want %d (interrupted: 128 + the signal):\n%s", code, want, stderr)
			}
		})
	}
}
