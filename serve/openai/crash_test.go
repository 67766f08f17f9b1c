package openai

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The crash test of the queue's at-most-once contract (queue.go): a child process (this test
// binary, re-executed) works the queue and is killed with SIGKILL at every step of a job's
// life — right after its lease (marked running, not yet run), after it ran (its effect
// written) but before its result was recorded, and after its ack. A later child finds what
// the dead one left. At the end no job may be lost (every status final) and none may have
// run twice (the effect log holds each id at most once); every kill mid-run shows as exactly
// one job failed "interrupted".

const (
	crashDirEnv  = "PLAN_QUEUE_CRASH_DIR"
	crashStepEnv = "PLAN_QUEUE_CRASH_STEP"
	crashLease   = 400 * time.Millisecond
)

// crashSteps are the points of a job's life the child kills itself at.
var crashSteps = []string{"leased", "ran", "acked"}

// TestQueueCrashChild is the child's body; without the environment it is skipped.
func TestQueueCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the crash test's child process")
	}
	if err := crashChild(dir, os.Getenv(crashStepEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// crashChild works the queue in dir until it has been idle for a few leases, killing itself
// (SIGKILL, as kill -9) at step of the first job it leases ("" = never).
func crashChild(dir, step string) error {
	ctx := context.Background()
	q, err := OpenJetStream(ctx, JetStreamOptions{Dir: filepath.Join(dir, "queue"), AckWait: crashLease})
	if err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(dir, "runs.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	kill := func(at string) {
		if at == step {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	for {
		lctx, cancel := context.WithTimeout(ctx, 4*crashLease)
		l, err := q.Lease(lctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return q.Close() // idle: every job handed out has ended
		}
		if err != nil {
			return err
		}
		kill("leased")
		// The job's effect: one line, on disk before the result is recorded.
		if _, err := log.WriteString(l.ID + "\n"); err != nil {
			return err
		}
		if err := log.Sync(); err != nil {
			return err
		}
		kill("ran")
		st := Status{ID: l.ID, Object: "queue.request", Status: StatusCompleted, Model: "m", Attempts: l.Attempt}
		if err := q.Ack(ctx, l, st); err != nil {
			return err
		}
		kill("acked")
	}
}

// crashResult is what a crash run counted.
type crashResult struct {
	kills, lost, twice, interrupted, completed int
}

// crashRun enqueues jobs jobs, then starts kills children each killed at the next step of
// crashSteps, then one that runs to the end, and counts.
func crashRun(t testing.TB, jobs, kills int) crashResult {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	q, err := OpenJetStream(ctx, JetStreamOptions{Dir: filepath.Join(dir, "queue"), AckWait: crashLease})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = fmt.Sprintf("q-crash-%05d", i)
		st := Status{ID: ids[i], Object: "queue.request", Status: StatusQueued, Model: "m"}
		if err := q.Enqueue(ctx, Job{ID: ids[i], Body: []byte(`{}`)}, st); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	child := func(step string) error {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestQueueCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashStepEnv+"="+step)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			return nil // killed, as planned
		}
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	res := crashResult{kills: kills}
	for k := range kills {
		if err := child(crashSteps[k%len(crashSteps)]); err != nil {
			t.Fatalf("child %d: %v", k, err)
		}
	}
	if err := child(""); err != nil {
		t.Fatalf("the last child: %v", err)
	}
	runs := map[string]int{}
	f, err := os.Open(filepath.Join(dir, "runs.log"))
	if err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			runs[strings.TrimSpace(sc.Text())]++
		}
		f.Close()
	}
	q, err = OpenJetStream(ctx, JetStreamOptions{Dir: filepath.Join(dir, "queue"), AckWait: crashLease})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for _, id := range ids {
		if runs[id] > 1 {
			res.twice++
		}
		st, err := q.Get(ctx, id)
		switch {
		case err != nil:
			res.lost++
		case st.Status == StatusCompleted:
			res.completed++
		case st.Status == StatusFailed && st.Error != nil && st.Error.Code == Interrupted:
			res.interrupted++
		default:
			res.lost++
		}
	}
	return res
}

// TestQueueCrash: a sample of kills (every step at least three times), bounded in time.
func TestQueueCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dozen processes")
	}
	const jobs, kills = 20, 9
	r := crashRun(t, jobs, kills)
	t.Logf("%d kills: %d jobs completed, %d interrupted, %d lost, %d run twice", r.kills, r.completed, r.interrupted, r.lost, r.twice)
	if r.lost != 0 || r.twice != 0 {
		t.Errorf("%d jobs lost, %d run twice: want none", r.lost, r.twice)
	}
	// Every kill after a lease and before the ack leaves one job interrupted; a kill after
	// the ack leaves none.
	if want := kills * 2 / 3; r.interrupted != want {
		t.Errorf("%d jobs interrupted, want %d (one per kill mid-run)", r.interrupted, want)
	}
	if r.completed+r.interrupted != jobs {
		t.Errorf("%d completed + %d interrupted ≠ %d jobs", r.completed, r.interrupted, jobs)
	}
}

// BenchmarkQueueCrash runs PLAN_QUEUE_CRASH_KILLS kills (default 1000) of the crash test per
// iteration and reports jobs lost and run twice (both must be 0).
func BenchmarkQueueCrash(b *testing.B) {
	kills := 1000
	if v, err := strconv.Atoi(os.Getenv("PLAN_QUEUE_CRASH_KILLS")); err == nil && v > 0 {
		kills = v
	}
	for range b.N {
		r := crashRun(b, kills+10, kills)
		b.ReportMetric(float64(r.lost), "lost")
		b.ReportMetric(float64(r.twice), "run_twice")
		b.ReportMetric(float64(r.interrupted), "interrupted")
		if r.lost != 0 || r.twice != 0 {
			b.Errorf("%d kills: %d jobs lost, %d run twice", kills, r.lost, r.twice)
		}
	}
}
