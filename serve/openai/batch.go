package openai

import (
	"context"
	"errors"
	"sync"
	"time"
)

// batchQueue is the state of the front end's batch queue: not open, open (with its workers
// running), or closed for good. Frontend.queue opens it on first use, and the open loop
// (Frontend.openInBackground) at start and while readiness finds it not open; a failure to
// open is answered for queueRetry before a new try; Close closes it once. Its methods keep
// mu's discipline, so that the Frontend's, which know how to open a queue and what its
// workers do, never touch mu.
type batchQueue struct {
	// openMu lets one opening run at a time (Frontend.queue). It is taken before mu, and
	// an opening holds it without mu, so that Ready, which reads under mu, answers at once.
	openMu sync.Mutex

	// mu guards the fields from q to closed.
	mu sync.Mutex
	// q is the open queue (nil: not open). err is the last failure to open it, at errAt.
	q     Queue
	err   error
	errAt time.Time
	// opening says the open loop runs; openStop ends it.
	opening  bool
	openStop context.CancelFunc
	// stopWorkers ends the workers of the open queue.
	stopWorkers context.CancelFunc
	// closed: Close ran; nothing opens or starts again.
	closed bool

	// openLoop and workers count the open loop and the workers, for close to wait for.
	// Each Add happens under mu while not closed, so close, which sets closed first, waits
	// for every one.
	openLoop, workers sync.WaitGroup
}

var errShuttingDown = errors.New("the server is shutting down")

// state answers Frontend.queue without opening (done): shutting down, open, or a failure
// younger than queueRetry.
func (b *batchQueue) state() (q Queue, done bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return nil, true, errShuttingDown
	case b.q != nil:
		return b.q, true, nil
	case b.err != nil && time.Since(b.errAt) < queueRetry:
		return nil, true, b.err
	}
	return nil, false, nil
}

// current is the open queue (nil: none) and the last failure to open it.
func (b *batchQueue) current() (Queue, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.q, b.err
}

// isClosed reports whether close ran.
func (b *batchQueue) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// opened records an opening's outcome, q or err: an open queue gets n workers, each
// running work until close; one opened after close is closed at once.
func (b *batchQueue) opened(q Queue, err error, n int, work func(context.Context, Queue)) (Queue, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.err, b.errAt = err, time.Now()
		return nil, err
	}
	if b.closed {
		_ = q.Close()
		return nil, errShuttingDown
	}
	b.q, b.err = q, nil
	ctx, cancel := context.WithCancel(context.Background())
	b.stopWorkers = cancel
	for range n {
		b.workers.Add(1)
		go func() {
			defer b.workers.Done()
			work(ctx, q)
		}()
	}
	return q, nil
}

// startOpenLoop runs loop on its own goroutine, with a context that close ends, unless it
// runs already, the queue is open, or close ran.
func (b *batchQueue) startOpenLoop(loop func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opening || b.q != nil || b.closed {
		return
	}
	b.opening = true
	ctx, cancel := context.WithCancel(context.Background())
	b.openStop = cancel
	b.openLoop.Add(1)
	go func() {
		defer b.openLoop.Done()
		loop(ctx)
		b.mu.Lock()
		b.opening = false
		b.mu.Unlock()
	}()
}

// close ends the open loop and the workers and waits for them (the workers put back what
// they hold); it returns the open queue, for the caller to close.
func (b *batchQueue) close() Queue {
	b.mu.Lock()
	b.closed = true
	q, stop, openStop := b.q, b.stopWorkers, b.openStop
	b.mu.Unlock()
	if openStop != nil {
		openStop()
	}
	b.openLoop.Wait()
	if stop != nil {
		stop()
	}
	b.workers.Wait()
	return q
}
