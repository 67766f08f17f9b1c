package openai

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestBatchQueueLifecycle holds batchQueue to its contract: a failure to open is answered
// without a new try for queueRetry; an open queue gets its workers, which close stops and
// waits for; nothing opens after close, and a queue opened meanwhile is closed at once.
func TestBatchQueueLifecycle(t *testing.T) {
	var b batchQueue
	if _, done, _ := b.state(); done {
		t.Fatal("a new batch queue answers without opening")
	}
	boom := errors.New("unreachable")
	if _, err := b.opened(nil, boom, 1, nil); err != boom {
		t.Fatalf("a failed opening returned %v", err)
	}
	if _, done, err := b.state(); !done || err != boom {
		t.Errorf("right after a failure: done %v, err %v; want the failure, without a new try", done, err)
	}
	b.mu.Lock()
	b.errAt = time.Now().Add(-queueRetry)
	b.mu.Unlock()
	if _, done, _ := b.state(); done {
		t.Error("a failure older than queueRetry still answered: never tried again")
	}

	var running, stopped atomic.Int32
	q := NewMemQueue()
	work := func(ctx context.Context, _ Queue) {
		running.Add(1)
		<-ctx.Done()
		stopped.Add(1)
	}
	if got, err := b.opened(q, nil, 3, work); got != q || err != nil {
		t.Fatalf("opened: %v, %v", got, err)
	}
	if open, err := b.current(); open != q || err != nil {
		t.Errorf("current: %v, %v; want the open queue and no failure", open, err)
	}
	loops := 0
	b.startOpenLoop(func(context.Context) { loops++ })
	if got := b.close(); got != q {
		t.Errorf("close returned %v, want the open queue", got)
	}
	if loops != 0 {
		t.Error("the open loop ran with the queue open")
	}
	if stopped.Load() != 3 || running.Load() != 3 {
		t.Errorf("close returned with %d of %d workers stopped", stopped.Load(), running.Load())
	}
	if !b.isClosed() {
		t.Error("not closed after close")
	}
	if _, done, err := b.state(); !done || err != errShuttingDown {
		t.Errorf("after close: done %v, err %v; want errShuttingDown", done, err)
	}
	late := NewMemQueue()
	if _, err := b.opened(late, nil, 1, work); err != errShuttingDown {
		t.Errorf("opened after close: %v, want errShuttingDown", err)
	}
	if err := late.Enqueue(context.Background(), Job{ID: "q-a-1"}, Status{}); err == nil {
		t.Error("a queue opened after close is left open")
	}
	b.startOpenLoop(func(context.Context) { loops++ })
	if loops != 0 {
		t.Error("the open loop started after close")
	}
}

// TestBatchQueueOpenLoop: one open loop at a time, and close ends it and waits for it.
func TestBatchQueueOpenLoop(t *testing.T) {
	var b batchQueue
	started := make(chan struct{})
	var ended atomic.Bool
	loop := func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		ended.Store(true)
	}
	b.startOpenLoop(loop)
	<-started
	b.startOpenLoop(loop) // a second close(started) would panic
	b.close()
	if !ended.Load() {
		t.Error("close returned before the open loop ended")
	}
}
