package openai

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Queue hygiene: where the embedded queue lives, how long results are
// kept, and when the queue counts as reachable.

// DefaultResultTTL is how long the queue keeps a request's status and result after its last
// change (--queue-result-ttl): long enough for a client to poll a batch answer the next day,
// bounded so the store does not grow for ever. QLM's batch SLOs run to hours (QLM §1), far
// below it.
const DefaultResultTTL = 24 * time.Hour

// queueOpenTimeout bounds one try at opening the queue, its reconciliation included.
const queueOpenTimeout = 2 * time.Minute

// queueRetry is how long a failure to open the queue is answered without a new try, and how
// often the open loop tries again.
const queueRetry = 2 * time.Second

// DefaultQueueDir is the embedded queue's directory for a server on addr (--addr): under the
// user's state directory ($XDG_STATE_HOME, else ~/.local/state, as the XDG base directory
// specification puts state that outlives a restart but is not configuration; the system's
// temporary directory for a user with no home, as a service may be), in
// plan/queue/<addr with every character other than letters, digits, '.' and '-' made '_'>,
// so two servers on one host never share a store by default.
func DefaultQueueDir(addr string) string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
			base = filepath.Join(home, ".local", "state")
		} else {
			base = os.TempDir()
		}
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, addr)
	if name == "" {
		name = "default"
	}
	return filepath.Join(base, "plan", "queue", name)
}

// CheckQueueURL accepts what nats.Connect takes: a comma-separated list of nats://, tls://,
// ws:// or wss:// URLs, each with a host. The error names the flag and the value.
func CheckQueueURL(v string) error {
	if v == "" {
		return nil
	}
	for _, one := range strings.Split(v, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		switch {
		case err != nil:
			return fmt.Errorf("--queue-url %q: not a NATS URL: %v", v, err)
		case u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss":
			return fmt.Errorf("--queue-url %q: not a NATS URL: %q has scheme %q, want nats:// (or tls://, ws://, wss://), e.g. nats://127.0.0.1:4222", v, one, u.Scheme)
		case u.Hostname() == "":
			return fmt.Errorf("--queue-url %q: not a NATS URL: %q names no host, e.g. nats://127.0.0.1:4222", v, one)
		}
	}
	return nil
}

// Configure checks the queue flags and fills in the defaults that depend on the server's
// address (`plan serve` calls it with --addr after parsing its flags): an error is bad input.
func (f *Frontend) Configure(addr string) error {
	if err := CheckQueueURL(f.QueueURL); err != nil {
		return err
	}
	if f.QueueResultTTL < 0 {
		return fmt.Errorf("--queue-result-ttl %s: must be >= 0 (0 keeps results forever)", f.QueueResultTTL)
	}
	if f.QueueResultTTL > 0 && f.QueueResultTTL < time.Second {
		// JetStream's smallest age limit (its MaxAge is refused below 100 ms) and a poll
		// could never find a result: refuse what cannot be meant.
		return fmt.Errorf("--queue-result-ttl %s: must be 0 or at least 1s", f.QueueResultTTL)
	}
	if f.QueueDir == "" && f.QueueURL == "" {
		f.QueueDir = DefaultQueueDir(addr)
	}
	return nil
}

// queueDir is the embedded store's directory: QueueDir, or the default of no address (a
// front end that Configure never saw, as in tests).
func (f *Frontend) queueDir() string {
	if f.QueueDir != "" || f.QueueURL != "" {
		return f.QueueDir
	}
	return DefaultQueueDir("")
}

// queue opens the queue and starts its workers on first use. A failure is answered for
// queueRetry, then opening is tried again: a queue that was unreachable at start (an
// external --queue-url not up yet) is used once it is, without a restart. The opening runs
// under the batch queue's openMu alone (batchQueue), so Ready answers at once meanwhile.
func (f *Frontend) queue() (Queue, error) {
	b := &f.batch
	if q, done, err := b.state(); done {
		return q, err
	}
	b.openMu.Lock()
	defer b.openMu.Unlock()
	if q, done, err := b.state(); done { // another caller opened it meanwhile
		return q, err
	}
	var q Queue
	var err error
	if f.NewQueue != nil {
		q, err = f.NewQueue()
	} else {
		// Opening includes the reconciliation of the statuses with the stream: one read of
		// each, bounded by queueOpenTimeout.
		ctx, cancel := context.WithTimeout(context.Background(), queueOpenTimeout)
		q, err = OpenJetStream(ctx, JetStreamOptions{Dir: f.queueDir(), URL: f.QueueURL, AckWait: f.QueueLease,
			ResultTTL: f.QueueResultTTL, Logger: f.log()})
		cancel()
	}
	return b.opened(q, err, max(f.QueueWorkers, 0), f.work)
}

// openInBackground starts, once, the loop that opens the queue: at start, and whenever the
// readiness check finds it not open while this front end's plan is active. It logs the
// outcome of its first try (the start-up check: where the queue is, or why it cannot be
// reached and that readiness stays false) and the moment a failing queue becomes
// reachable; until then GET /v2/health/ready answers 503 (Ready).
func (f *Frontend) openInBackground() {
	f.batch.startOpenLoop(func(ctx context.Context) {
		failed := false
		for {
			_, err := f.queue()
			if err == nil {
				f.log().Info("batch queue open", append(f.queueWhere(), f.reconciledAttrs()...)...)
				return
			}
			if !failed {
				f.log().Error("batch queue unreachable: /v2/health/ready answers 503 until it is; retrying", append(f.queueWhere(), "err", err)...)
				failed = true
			}
			if !sleepCtx(ctx, queueRetry) {
				return
			}
		}
	})
}

// queueWhere are the log attributes saying which queue: the URL, or the directory.
func (f *Frontend) queueWhere() []any {
	if f.QueueURL != "" {
		return []any{"queue_url", f.QueueURL}
	}
	if f.NewQueue != nil {
		return []any{"queue", "in-memory"}
	}
	return []any{"queue_dir", f.queueDir()}
}

// reconciledAttrs are the log attributes of the open queue's reconciliation (reconcile.go).
func (f *Frontend) reconciledAttrs() []any {
	open, _ := f.batch.current()
	q, _ := open.(*JetStreamQueue)
	if q == nil {
		return nil
	}
	r := q.Reconciled()
	return []any{"pending", r.Pending, "lost", r.Lost, "restored", r.Restored}
}

// log is the server's logger (slog's default before Routes).
func (f *Frontend) log() *slog.Logger {
	if f.s != nil {
		if l := f.s.Logger(); l != nil {
			return l
		}
	}
	return slog.Default()
}
