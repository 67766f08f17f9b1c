package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
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
	// AckWait is how long a leased request may run before JetStream hands it to another
	// worker (a crashed server's work comes back): longer than the longest SLO.
	AckWait time.Duration
	// MaxDeliver bounds the times a request is handed out (0: 20).
	MaxDeliver int
}

// JetStreamQueue is the default Queue: NATS JetStream, embedded or external.
type JetStreamQueue struct {
	ns   *server.Server // nil for an external server
	nc   *nats.Conn
	cons jetstream.Consumer
	js   jetstream.JetStream
	kv   jetstream.KeyValue
}

// OpenJetStream starts the embedded JetStream server on o.Dir (no network listener: the
// client connects in-process) or connects to o.URL, and creates the stream, consumer and
// status bucket if they do not exist.
func OpenJetStream(ctx context.Context, o JetStreamOptions) (*JetStreamQueue, error) {
	if o.AckWait <= 0 {
		o.AckWait = 15 * time.Minute
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 20
	}
	q := &JetStreamQueue{}
	var err error
	if o.URL != "" {
		q.nc, err = nats.Connect(o.URL, nats.Name("plan serve"))
		if err != nil {
			return nil, fmt.Errorf("--queue-url %s: %w", o.URL, err)
		}
	} else {
		if o.Dir == "" {
			return nil, errors.New("--queue-dir: empty (the embedded JetStream server needs a directory)")
		}
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("--queue-dir %s: %w", o.Dir, err)
		}
		q.ns, err = server.NewServer(&server.Options{ServerName: "plan-queue", JetStream: true, StoreDir: o.Dir,
			DontListen: true, NoSigs: true, NoLog: true})
		if err != nil {
			return nil, fmt.Errorf("--queue-dir %s: embedded JetStream server: %w", o.Dir, err)
		}
		go q.ns.Start()
		if !q.ns.ReadyForConnections(30 * time.Second) {
			q.ns.Shutdown()
			return nil, fmt.Errorf("--queue-dir %s: the embedded JetStream server did not start", o.Dir)
		}
		q.nc, err = nats.Connect(q.ns.ClientURL(), nats.InProcessServer(q.ns), nats.Name("plan serve"))
		if err != nil {
			q.ns.Shutdown()
			return nil, fmt.Errorf("--queue-dir %s: %w", o.Dir, err)
		}
	}
	fail := func(what string, err error) (*JetStreamQueue, error) {
		_ = q.Close()
		return nil, fmt.Errorf("queue: %s: %w", what, err)
	}
	if q.js, err = jetstream.New(q.nc); err != nil {
		return fail("jetstream", err)
	}
	st, err := q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: streamName, Subjects: []string{subjectRoot + ">"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: time.Hour})
	if err != nil {
		return fail("stream "+streamName, err)
	}
	q.cons, err = st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: consumerName, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: o.AckWait, MaxDeliver: o.MaxDeliver, MaxAckPending: 4096})
	if err != nil {
		return fail("consumer "+consumerName, err)
	}
	q.kv, err = q.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: statusBucket, Storage: jetstream.FileStorage})
	if err != nil {
		return fail("bucket "+statusBucket, err)
	}
	return q, nil
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
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = q.kv.Put(ctx, st.ID, b)
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
	_, err = q.js.Publish(ctx, subjectRoot+subjectToken(st.Model), b, jetstream.WithMsgID(j.ID))
	return err
}

// Lease implements Queue.
func (q *JetStreamQueue) Lease(ctx context.Context) (*Lease, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := q.cons.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
				continue
			}
			if q.nc.IsClosed() {
				return nil, err
			}
			select { // a transient error (an external cluster's leader change): retry
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		var j Job
		if err := json.Unmarshal(m.Data(), &j); err != nil || j.ID == "" {
			_ = m.Term() // not ours: never hand it out again
			continue
		}
		l := &Lease{Job: j, handle: m}
		if md, err := m.Metadata(); err == nil {
			l.Attempt = int(md.NumDelivered)
		}
		if st, err := q.Get(ctx, j.ID); err == nil {
			st.Status, st.Attempts = StatusRunning, l.Attempt
			_ = q.put(ctx, *st)
		}
		return l, nil
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

// Nack implements Queue.
func (q *JetStreamQueue) Nack(ctx context.Context, l *Lease, delay time.Duration) error {
	if st, err := q.Get(ctx, l.ID); err == nil {
		st.Status = StatusQueued
		_ = q.put(ctx, *st)
	}
	return l.handle.(jetstream.Msg).NakWithDelay(delay)
}

// Get implements Queue.
func (q *JetStreamQueue) Get(ctx context.Context, id string) (*Status, error) {
	e, err := q.kv.Get(ctx, id)
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
	if q.nc != nil {
		q.nc.Close()
	}
	if q.ns != nil {
		q.ns.Shutdown()
		q.ns.WaitForShutdown()
	}
	return nil
}
