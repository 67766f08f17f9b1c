package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream names [ours]: a work-queue stream whose subjects are
// plan.q.<model>, one durable pull consumer shared by every `plan serve` on the stream, and a
// key-value bucket with each request's status and result.
const (
	streamName   = "PLAN_QUEUE"
	subjectRoot  = "plan.q."
	consumerName = "plan-serve"
	statusBucket = "PLAN_QUEUE_STATUS"
)

// JetStreamOptions configures OpenJetStream.
type JetStreamOptions struct {
	// Dir is the embedded server's file store (used when URL is empty).
	Dir string
	// URL is an external NATS JetStream server or cluster (nats://host:4222[,nats://...]).
	URL string
	// AckWait is the lease: how long a leased request may go without news from its worker
	// before JetStream hands it to another (0: DefaultLease). The worker extends it while the
	// request runs (Extend, JetStream's in-progress ack), so it need not outlast the longest
	// SLO: after a crash (kill -9) the request comes back within one lease, not 15 minutes
	// later.
	AckWait time.Duration
	// MaxDeliver bounds the times a request is handed out (0: 20).
	MaxDeliver int
	// ResultTTL is the status bucket's TTL: a request's status and result are removed this
	// long after their last change (0: kept forever). It applies to the bucket, so it counts
	// for a waiting request's status too (re-written when the request is leased): it must
	// outlast the longest wait in the queue. The messages themselves have no TTL (a request
	// leaves the stream when its result is recorded). The embedded server's store shrinks
	// with it, so --queue-dir does not grow without bound.
	ResultTTL time.Duration
	// Logger gets a line per request the opening reconciliation fails or queues again
	// (reconcile.go; nil: slog.Default()).
	Logger *slog.Logger
}

// DefaultLease is the queue's lease (JetStreamOptions.AckWait) unless set; a running
// request's worker extends it every DefaultLease/3 (Frontend.serveJob).
const DefaultLease = 30 * time.Second

// JetStreamQueue is the default Queue: NATS JetStream, embedded or external. Its connection
// is re-dialled when NATS closes it (an -ERR from the server closes a client connection for
// good), so one bad request cannot disable the queue until a restart.
type JetStreamQueue struct {
	o  JetStreamOptions
	ns *server.Server // nil for an external server

	mu     sync.Mutex
	h      *jsHandles
	closed bool

	// reconciled is what the opening reconciliation found (Reconciled).
	reconciled Reconciled
}

// jsHandles are one connection's handles on the stream, consumer and status bucket.
type jsHandles struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	cons jetstream.Consumer
	kv   jetstream.KeyValue
}

// OpenJetStream starts the embedded JetStream server on o.Dir (no network listener: the
// client connects in-process) or connects to o.URL, creates the stream, consumer and
// status bucket if they do not exist, and reconciles the statuses with the stream
// (reconcile.go): a queue it returns holds no request that cannot end.
func OpenJetStream(ctx context.Context, o JetStreamOptions) (*JetStreamQueue, error) {
	if o.AckWait <= 0 {
		o.AckWait = DefaultLease
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 20
	}
	q := &JetStreamQueue{o: o}
	if o.URL == "" {
		if o.Dir == "" {
			return nil, errors.New("--queue-dir: empty (the embedded JetStream server needs a directory)")
		}
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("--queue-dir %s: %w", o.Dir, err)
		}
		// SyncAlways: a status written (running, then the result) is on disk before the call
		// returns, so a kill -9 right after cannot undo it — the at-most-once contract
		// (Lease) rests on the running mark surviving the process.
		ns, err := server.NewServer(&server.Options{ServerName: "plan-queue", JetStream: true, StoreDir: o.Dir,
			DontListen: true, NoSigs: true, NoLog: true, SyncAlways: true})
		if err != nil {
			return nil, fmt.Errorf("--queue-dir %s: embedded JetStream server: %w", o.Dir, err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(30 * time.Second) {
			ns.Shutdown()
			return nil, fmt.Errorf("--queue-dir %s: the embedded JetStream server did not start", o.Dir)
		}
		q.ns = ns
	}
	if _, err := q.handles(ctx); err != nil {
		_ = q.Close()
		return nil, err
	}
	r, err := q.reconcile(ctx)
	if err != nil {
		_ = q.Close()
		return nil, fmt.Errorf("%s: reconciling the statuses with the stream: %w", q.where(), err)
	}
	q.reconciled = r
	return q, nil
}

// Reconciled is what OpenJetStream's reconciliation found.
func (q *JetStreamQueue) Reconciled() Reconciled { return q.reconciled }

// where names the queue in errors: the flag and its value.
func (q *JetStreamQueue) where() string {
	if q.ns == nil {
		return "--queue-url " + q.o.URL
	}
	return "--queue-dir " + q.o.Dir
}

// dial connects to the server (the embedded one in-process).
func (q *JetStreamQueue) dial() (*nats.Conn, error) {
	if q.ns == nil {
		nc, err := nats.Connect(q.o.URL, nats.Name("plan serve"), nats.MaxReconnects(-1))
		if err != nil {
			return nil, fmt.Errorf("--queue-url %s: %w", q.o.URL, err)
		}
		return nc, nil
	}
	nc, err := nats.Connect(q.ns.ClientURL(), nats.InProcessServer(q.ns), nats.Name("plan serve"))
	if err != nil {
		return nil, fmt.Errorf("--queue-dir %s: %w", q.o.Dir, err)
	}
	return nc, nil
}

// handles returns the live connection's handles, dialling a new connection (and looking the
// stream, consumer and bucket up again, creating them if missing) when there is none or NATS
// closed it.
func (q *JetStreamQueue) handles(ctx context.Context) (*jsHandles, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, errors.New("queue closed")
	}
	if q.h != nil && !q.h.nc.IsClosed() {
		return q.h, nil
	}
	nc, err := q.dial()
	if err != nil {
		return nil, err
	}
	h, err := q.setupStream(ctx, nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	q.h = h
	return h, nil
}

// setupStream creates (or updates: a store from an older server keeps its messages and
// takes the new lease) the stream, the shared consumer and the status bucket.
func (q *JetStreamQueue) setupStream(ctx context.Context, nc *nats.Conn) (*jsHandles, error) {
	o := q.o
	h := &jsHandles{nc: nc}
	var err error
	if h.js, err = jetstream.New(nc); err != nil {
		return nil, fmt.Errorf("queue: jetstream: %w", err)
	}
	st, err := h.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: streamName, Subjects: []string{subjectRoot + ">"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: time.Hour})
	if err != nil {
		return nil, fmt.Errorf("queue: stream %s: %w", streamName, err)
	}
	cc := jetstream.ConsumerConfig{Durable: consumerName, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: o.AckWait, MaxDeliver: o.MaxDeliver, MaxAckPending: 4096}
	h.cons, err = st.CreateOrUpdateConsumer(ctx, cc)
	if err != nil && q.setAsideConsumer(ctx, st) {
		h.cons, err = st.CreateOrUpdateConsumer(ctx, cc)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: consumer %s: %w", consumerName, err)
	}
	h.kv, err = h.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: statusBucket, Storage: jetstream.FileStorage, TTL: o.ResultTTL})
	if err != nil {
		return nil, fmt.Errorf("queue: bucket %s: %w", statusBucket, err)
	}
	return h, nil
}

// Healthy reports whether the queue can be used now: its connection is up, or a new one
// could be dialled (the front end's readiness, Frontend.Ready).
func (q *JetStreamQueue) Healthy(ctx context.Context) error {
	_, err := q.handles(ctx)
	return err
}

// subjectToken makes a model name a subject token (NATS tokens cannot hold '.', '*', '>' or
// spaces).
func subjectToken(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func (q *JetStreamQueue) put(ctx context.Context, st Status) error {
	if !validQueueID(st.ID) {
		return fmt.Errorf("queue: id %.80q: not a queued request's id", st.ID)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	h, err := q.handles(ctx)
	if err != nil {
		return err
	}
	_, err = h.kv.Put(ctx, st.ID, b)
	return err
}

// Enqueue implements Queue: the status first, so a poll right after the answer finds it;
// the message carries the job's id as its Nats-Msg-Id, so a retried submit is stored once.
func (q *JetStreamQueue) Enqueue(ctx context.Context, j Job, st Status) error {
	if err := q.put(ctx, st); err != nil {
		return err
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	h, err := q.handles(ctx)
	if err != nil {
		return err
	}
	if _, err = h.js.Publish(ctx, subjectRoot+subjectToken(st.Model), b, jetstream.WithMsgID(j.ID)); err != nil {
		// The client is answered 503 and never learns the id; a status left queued would
		// wait for a message that may never come. Failed, it stays failed even if the
		// message was stored after all (Lease acks a failed request's message unrun).
		st.Status = StatusFailed
		st.Error = &Error{Status: 503, Type: "server_error", Code: LostInQueue, Message: "enqueue: " + err.Error()}
		_ = q.put(context.WithoutCancel(ctx), st)
		return err
	}
	return nil
}

// Lease implements Queue, at most once: a job is marked running on disk before it is handed
// out. A job whose status is already final (its worker recorded the result but died, or lost
// its connection, before the ack) is acked, not run again; one found running (its worker
// died mid-run) is recorded failed with the code "interrupted", never run again.
func (q *JetStreamQueue) Lease(ctx context.Context) (*Lease, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, err := q.handles(ctx)
		if err != nil {
			if q.isClosed() {
				return nil, err
			}
			if !sleepCtx(ctx, time.Second) { // the server is away: dial again soon
				return nil, ctx.Err()
			}
			continue
		}
		m, err := h.cons.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
				continue
			}
			if q.isClosed() {
				return nil, err
			}
			// A transient error (an external cluster's leader change, a closed connection
			// handles re-dials): retry.
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return nil, ctx.Err()
			}
			continue
		}
		var j Job
		if err := json.Unmarshal(m.Data(), &j); err != nil || !validQueueID(j.ID) {
			_ = m.Term() // not ours: never hand it out again
			continue
		}
		l := &Lease{Job: j, handle: m}
		if md, err := m.Metadata(); err == nil {
			l.Attempt = int(md.NumDelivered)
		}
		st, err := q.Get(ctx, j.ID)
		if errors.Is(err, ErrNotFound) { // the status expired (ResultTTL): start a new one
			st, err = &Status{ID: j.ID, Object: "queue.request"}, nil
		}
		if err != nil { // the status cannot be read: the job cannot be marked, so not run
			_ = m.NakWithDelay(time.Second)
			continue
		}
		switch st.Status {
		case StatusCompleted, StatusFailed:
			_ = m.DoubleAck(ctx)
			continue
		case StatusRunning:
			// Marked running by an earlier lease that never recorded an end: its worker
			// died (kill -9, a crash) or lost the lease while running it. Whether the
			// request ran cannot be known, so it is not run again (at-most-once): it fails
			// with the reason "interrupted", and the client resubmits if it wants to.
			st.Status, st.Attempts = StatusFailed, l.Attempt
			st.Error = &Error{Status: 500, Type: "server_error", Code: Interrupted,
				Message: "interrupted: the server stopped while this request ran; a queued request runs at most once, resubmit it"}
			if q.put(ctx, *st) == nil {
				_ = m.DoubleAck(ctx)
			}
			continue
		}
		// The running mark is durable (SyncAlways) before the job is handed out: the
		// at-most-once contract's one write.
		st.Status, st.Attempts = StatusRunning, l.Attempt
		if err := q.put(ctx, *st); err != nil {
			_ = m.NakWithDelay(time.Second)
			continue
		}
		return l, nil
	}
}

func (q *JetStreamQueue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// sleepCtx waits d or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Ack implements Queue: the status first, then the message goes (a crash between the two
// runs the request again, never loses its result).
func (q *JetStreamQueue) Ack(ctx context.Context, l *Lease, st Status) error {
	if err := q.put(ctx, st); err != nil {
		return err
	}
	return l.handle.(jetstream.Msg).DoubleAck(ctx)
}

// Extend implements Queue: JetStream's in-progress ack restarts the lease's clock.
func (q *JetStreamQueue) Extend(_ context.Context, l *Lease) error {
	return l.handle.(jetstream.Msg).InProgress()
}

// Nack implements Queue.
func (q *JetStreamQueue) Nack(ctx context.Context, l *Lease, delay time.Duration) error {
	if st, err := q.Get(ctx, l.ID); err == nil {
		st.Status = StatusQueued
		_ = q.put(ctx, *st)
	}
	return l.handle.(jetstream.Msg).NakWithDelay(delay)
}

// Get implements Queue. An id of another shape than the queue's own is unknown without a
// lookup: it never reaches NATS (a 5,000-byte key exceeded its maximum control line).
func (q *JetStreamQueue) Get(ctx context.Context, id string) (*Status, error) {
	if !validQueueID(id) {
		return nil, ErrNotFound
	}
	h, err := q.handles(ctx)
	if err != nil {
		return nil, err
	}
	e, err := h.kv.Get(ctx, id)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	var st Status
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return nil, fmt.Errorf("queue: status of %s: %w", id, err)
	}
	return &st, nil
}

// Close implements Queue: the connection, then the embedded server (its store flushed).
func (q *JetStreamQueue) Close() error {
	q.mu.Lock()
	q.closed = true
	h := q.h
	q.mu.Unlock()
	if h != nil {
		h.nc.Close()
	}
	if q.ns != nil {
		q.ns.Shutdown()
		q.ns.WaitForShutdown()
	}
	return nil
}
