package openai

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// The durable batch queue (QLM paper §1 and §3: batch requests with SLOs of minutes to hours
// wait in a queue outside the instances; QLM pulls them in as its plan makes room). A client
// submits with POST /v1/queue, gets an id at once, and polls GET /v1/queue/{id}. Requests
// survive a restart of `plan serve`: the queue is a JetStream work-queue stream on disk.
//
// Delivery contract: at most once. A request is marked running on disk before it is handed
// to the engine; if the server dies before its result is recorded, the restarted server
// finds it running and records it failed with the code "interrupted" instead of running it
// again. No request is lost (every one ends completed or failed) and none runs twice. A
// request put back before it ran (the server shutting down, no room: 503) is queued again.

// Queue states a queued request goes through.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// Interrupted is the error code of a queued request whose server stopped (kill -9, a crash)
// while it ran: the queue runs a request at most once, so it is failed, not run again.
const Interrupted = "interrupted"

// ErrNotFound is Queue.Get's error for an id the queue never saw.
var ErrNotFound = errors.New("no such queued request")

// Job is a queued request: its id and the completion or chat-completion body it was submitted
// with (Chat says which).
type Job struct {
	ID   string          `json:"id"`
	Chat bool            `json:"chat"`
	Body json.RawMessage `json:"body"`
}

// Status is what GET /v1/queue/{id} answers.
type Status struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Status   string `json:"status"`
	Model    string `json:"model"`
	Created  int64  `json:"created"`
	Attempts int    `json:"attempts"`
	// Result is the completion response (Status completed); Error why it failed.
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Lease is a job handed to one worker: it must be Acked (done, with its final status) or
// Nacked (put back) by that worker.
type Lease struct {
	Job
	Attempt int
	handle  any
}

// Queue is the durable batch queue.
type Queue interface {
	// Enqueue stores the job and its initial status; an id enqueued twice is stored once.
	Enqueue(ctx context.Context, j Job, st Status) error
	// Lease waits for a job (until ctx ends) and marks it running.
	Lease(ctx context.Context) (*Lease, error)
	// Ack records the job's final status and removes it from the queue.
	Ack(ctx context.Context, l *Lease, st Status) error
	// Nack puts the job back; it is handed out again after delay.
	Nack(ctx context.Context, l *Lease, delay time.Duration) error
	// Extend tells the queue the job's worker is alive and still running it: the lease
	// starts over (a worker that stops extending loses the job to another after one lease).
	Extend(ctx context.Context, l *Lease) error
	// Get returns a job's status (ErrNotFound for an unknown id).
	Get(ctx context.Context, id string) (*Status, error)
	Close() error
}

// MemQueue is an in-memory Queue (tests; nothing survives the process).
type MemQueue struct {
	mu      sync.Mutex
	pending []*Lease
	status  map[string]Status
	ready   chan struct{}
	timers  []*time.Timer
	closed  bool
}

// NewMemQueue returns an empty in-memory queue.
func NewMemQueue() *MemQueue {
	return &MemQueue{status: map[string]Status{}, ready: make(chan struct{}, 1)}
}

func (q *MemQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Enqueue implements Queue.
func (q *MemQueue) Enqueue(_ context.Context, j Job, st Status) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errors.New("queue closed")
	}
	if _, ok := q.status[j.ID]; ok {
		return nil
	}
	q.status[j.ID] = st
	q.pending = append(q.pending, &Lease{Job: j})
	q.signal()
	return nil
}

// Lease implements Queue.
func (q *MemQueue) Lease(ctx context.Context) (*Lease, error) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, errors.New("queue closed")
		}
		if len(q.pending) > 0 {
			l := q.pending[0]
			q.pending = q.pending[1:]
			l.Attempt++
			st := q.status[l.ID]
			st.Status, st.Attempts = StatusRunning, l.Attempt
			q.status[l.ID] = st
			if len(q.pending) > 0 {
				q.signal()
			}
			q.mu.Unlock()
			return &Lease{Job: l.Job, Attempt: l.Attempt, handle: l}, nil
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Ack implements Queue.
func (q *MemQueue) Ack(_ context.Context, l *Lease, st Status) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.status[l.ID] = st
	return nil
}

// Extend implements Queue (a MemQueue's leases never expire: nothing survives its process).
func (q *MemQueue) Extend(context.Context, *Lease) error { return nil }

// Nack implements Queue.
func (q *MemQueue) Nack(_ context.Context, l *Lease, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.status[l.ID]
	st.Status = StatusQueued
	q.status[l.ID] = st
	back := func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.pending = append(q.pending, l.handle.(*Lease))
		q.signal()
	}
	if delay <= 0 {
		q.pending = append(q.pending, l.handle.(*Lease))
		q.signal()
		return nil
	}
	q.timers = append(q.timers, time.AfterFunc(delay, back))
	return nil
}

// Get implements Queue.
func (q *MemQueue) Get(_ context.Context, id string) (*Status, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st, ok := q.status[id]
	if !ok {
		return nil, ErrNotFound
	}
	return &st, nil
}

// Close implements Queue.
func (q *MemQueue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, t := range q.timers {
		t.Stop()
	}
	return nil
}
