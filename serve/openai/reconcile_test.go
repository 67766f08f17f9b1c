package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/serve"
)

// The queue's store damaged while the server was stopped (reconcile.go): every file of the
// embedded JetStream store is cut short at a few points, one at a time, on a copy of a store
// holding requests in each state; the queue is opened on the copy and worked until idle.
// Every request must then be final (completed, or failed with a code), none may have run
// twice, and each one the damage cost must be named in the log.

const reconcileLease = 200 * time.Millisecond

// syncBuffer is a log sink the test reads while the queue writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// damagedStore is a store of jobs requests: the first done completed (run and acked), the
// next running leased and never acked (a worker killed mid-run), the rest queued.
func damagedStore(t *testing.T, dir string, jobs, done, running int) []string {
	t.Helper()
	ctx := context.Background()
	q, err := OpenJetStream(ctx, JetStreamOptions{Dir: dir, AckWait: reconcileLease})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = fmt.Sprintf("q-damage-%03d", i)
		body := fmt.Sprintf(`{"model":"mistral-batch","prompt":"request %d of a batch that outlives its server"}`, i)
		if err := q.Enqueue(ctx, Job{ID: ids[i], Body: []byte(body)}, Status{ID: ids[i], Object: "queue.request", Status: StatusQueued, Model: "mistral-batch"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range done + running {
		l, err := q.Lease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i < done {
			if err := q.Ack(ctx, l, Status{ID: l.ID, Object: "queue.request", Status: StatusCompleted, Model: "mistral-batch", Attempts: l.Attempt}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// drain works the queue until it is idle for a few leases, completing what it leases, and
// returns the ids it ran.
func drain(t *testing.T, q *JetStreamQueue) []string {
	t.Helper()
	var ran []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 4*reconcileLease)
		l, err := q.Lease(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return ran
		}
		if err != nil {
			t.Fatal(err)
		}
		ran = append(ran, l.ID)
		st := Status{ID: l.ID, Object: "queue.request", Status: StatusCompleted, Model: "mistral-batch", Attempts: l.Attempt}
		if err := q.Ack(context.Background(), l, st); err != nil {
			t.Fatal(err)
		}
	}
}

func TestQueueReconcileTruncated(t *testing.T) {
	if testing.Short() {
		t.Skip("opens the queue once per damaged file and cut")
	}
	const jobs, done, running = 50, 10, 5
	pristine := t.TempDir()
	ids := damagedStore(t, pristine, jobs, done, running)
	var files []string
	_ = filepath.WalkDir(pristine, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(pristine, p)
			files = append(files, rel)
		}
		return nil
	})
	if !slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, ".blk") }) {
		t.Fatalf("no message block in the store: %v", files)
	}
	for _, file := range files {
		fi, err := os.Stat(filepath.Join(pristine, file))
		if err != nil {
			t.Fatal(err)
		}
		cuts := slices.Compact([]int64{0, fi.Size() / 2, max(fi.Size()-1, 0)})
		for _, cut := range cuts {
			t.Run(fmt.Sprintf("%s@%d", file, cut), func(t *testing.T) {
				dir := t.TempDir()
				copyDir(t, pristine, dir)
				if err := os.Truncate(filepath.Join(dir, file), cut); err != nil {
					t.Fatal(err)
				}
				var logs syncBuffer
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				q, err := OpenJetStream(ctx, JetStreamOptions{Dir: dir, AckWait: reconcileLease,
					Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				if err != nil {
					t.Fatalf("open after the damage: %v", err)
				}
				defer q.Close()
				r := q.Reconciled()
				// The damaged store still takes requests, and hands them out.
				fresh := []string{"q-fresh-1", "q-fresh-2"}
				for _, id := range fresh {
					if err := q.Enqueue(ctx, Job{ID: id, Body: []byte(`{}`)}, Status{ID: id, Object: "queue.request", Status: StatusQueued, Model: "mistral-batch"}); err != nil {
						t.Fatal(err)
					}
				}
				ran := drain(t, q)
				// A second start finds nothing more to do: each request was reconciled once,
				// and none is left in the stream.
				if err := q.Close(); err != nil {
					t.Fatal(err)
				}
				q, err = OpenJetStream(ctx, JetStreamOptions{Dir: dir, AckWait: reconcileLease, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				if r2 := q.Reconciled(); r2 != (Reconciled{}) {
					t.Errorf("the second start reconciled again: %+v (first %+v)", r2, r)
				}
				log := logs.String()
				for _, id := range fresh {
					if st, err := q.Get(ctx, id); err != nil || st.Status != StatusCompleted {
						t.Errorf("%s, enqueued after the damage: %+v %v; want completed", id, st, err)
					}
				}
				for i, id := range ids {
					runs := 0
					for _, r := range ran {
						if r == id {
							runs++
						}
					}
					if i < done {
						runs++ // completed before the damage
					}
					if runs > 1 {
						t.Errorf("%s ran %d times", id, runs)
					}
					st, err := q.Get(ctx, id)
					switch {
					case errors.Is(err, ErrNotFound):
						// Only a request that had ended can be forgotten: its message was
						// gone, and the damage took its status.
						if i >= done+running || !strings.Contains(file, "KV_") {
							t.Errorf("%s (no. %d): no status after damage to %s", id, i, file)
						}
					case err != nil:
						t.Fatal(err)
					case st.Status == StatusCompleted:
					case st.Status == StatusFailed && st.Error != nil && st.Error.Code == LostInQueue:
						if !strings.Contains(log, "id="+id) {
							t.Errorf("%s failed %s, not in the log:\n%s", id, LostInQueue, log)
						}
					case st.Status == StatusFailed && st.Error != nil && st.Error.Code == Interrupted:
						if i < done || i >= done+running {
							t.Errorf("%s (no. %d) interrupted: it never ran", id, i)
						}
					default:
						t.Errorf("%s (no. %d) is %s %+v after the damage and a drain: want completed or failed with a code", id, i, st.Status, st.Error)
					}
				}
				t.Logf("%+v", r)
			})
		}
	}
}

// TestQueueDamagedStoreServe: the report's case through `plan serve`. Requests are queued on
// a server that serves none, the server stops, the stream's message block is cut short, and
// the next server on the directory must end every request — completed, or failed with the
// code lost_in_queue and its id in the log — instead of leaving most of them queued for ever
// while it reads ready.
func TestQueueDamagedStoreServe(t *testing.T) {
	dir := t.TempDir()
	fe1 := New(dq.Kind)
	fe1.QueueDir, fe1.QueueWorkers = dir, 0
	s1, url1 := qlmServerOpts(t, fe1, serve.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var ids []string
	for i := range 50 {
		ids = append(ids, enqueue(t, url1, fmt.Sprintf(`{"model":"mistral-batch","prompt":"job %d","max_tokens":2}`, i)).ID)
	}
	if err := s1.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	blocks, _ := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", streamName, "msgs", "*.blk"))
	if len(blocks) == 0 {
		t.Fatal("no message block in the store")
	}
	for _, b := range blocks {
		fi, err := os.Stat(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(b, fi.Size()*2/5); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuffer
	fe2 := New(dq.Kind)
	fe2.QueueDir, fe2.QueueWorkers = dir, 2
	_, url2 := qlmServerOpts(t, fe2, serve.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	lost := 0
	for _, id := range ids {
		st := waitDone(t, url2, id)
		switch {
		case st.Status == StatusCompleted:
		case st.Error != nil && st.Error.Code == LostInQueue:
			lost++
			if !strings.Contains(logs.String(), "id="+id) {
				t.Errorf("%s failed %s, not named in the log", id, LostInQueue)
			}
		default:
			t.Errorf("%s: %s %+v", id, st.Status, st.Error)
		}
	}
	if lost == 0 || lost == len(ids) {
		t.Errorf("%d of %d requests lost: want the ones past the cut", lost, len(ids))
	}
	resp, err := http.Get(url2 + "/v2/health/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("ready %d after the reconciliation", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "batch queue reconciled with a damaged store") {
		t.Errorf("no summary in the log:\n%s", logs.String())
	}
}
