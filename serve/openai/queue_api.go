package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// The batch queue's API.

func (f *Frontend) handleEnqueue(w http.ResponseWriter, r *http.Request) {
	// A queued request is a completion (prompt) or a chat completion (messages).
	if e := f.active(); e != nil {
		writeError(w, e)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.MaxBody))
	if err != nil {
		writeError(w, badRequest("", "reading the body: %v", err))
		return
	}
	var probe struct {
		Messages json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &probe)
	chat := probe.Messages != nil
	req, e := Decode(body, chat)
	if e != nil {
		writeError(w, e)
		return
	}
	if req.Stream {
		writeError(w, badRequest("stream", "stream: a queued request is polled (GET /v1/queue/{id}), not streamed"))
		return
	}
	if !f.known(req.Model) {
		writeError(w, f.unknown(req.Model))
		return
	}
	if e := f.checkAllLimits(req); e != nil {
		writeError(w, e)
		return
	}
	q, err := f.queue()
	if err != nil {
		writeError(w, f.queueDown(err))
		return
	}
	id := f.ids.next("q-")
	st := Status{ID: id, Object: "queue.request", Status: StatusQueued, Model: req.Model, Created: time.Now().Unix()}
	if err := q.Enqueue(r.Context(), Job{ID: id, Chat: chat, Body: body}, st); err != nil {
		writeError(w, &Error{Status: 503, Type: "server_error", Message: "enqueue: " + err.Error(), RetryAfter: 1})
		return
	}
	writeJSON(w, 202, st)
}

func (f *Frontend) handleQueueGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if len(id) > maxQueueIDLen {
		writeError(w, &Error{Status: 414, Type: "invalid_request_error", Param: "id",
			Message: fmt.Sprintf("id: %d bytes: longer than the %d of a queued request's id", len(id), maxQueueIDLen)})
		return
	}
	if !validQueueID(id) {
		writeError(w, &Error{Status: 404, Type: "not_found_error", Param: "id", Message: fmt.Sprintf("id: %q: no such queued request", id)})
		return
	}
	q, err := f.queue()
	if err != nil {
		writeError(w, f.queueDown(err))
		return
	}
	st, err := q.Get(r.Context(), id)
	if errors.Is(err, ErrNotFound) {
		writeError(w, &Error{Status: 404, Type: "not_found_error", Param: "id", Message: fmt.Sprintf("id: %q: no such queued request", id)})
		return
	}
	if err != nil {
		// The store is unreachable (its connection is re-dialled on the next call): a
		// retryable 503, not a 500.
		writeError(w, f.queueDown(err))
		return
	}
	writeJSON(w, 200, st)
}

// keepLease extends l every third of the lease (so two extensions can be lost before it
// ends) until the returned stop is called.
func (f *Frontend) keepLease(ctx context.Context, q Queue, l *Lease) (stop func()) {
	every := f.QueueLease
	if every <= 0 {
		every = DefaultLease
	}
	every /= 3
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if err := q.Extend(ctx, l); err != nil {
					slog.Warn("queue: extending a lease", "id", l.ID, "err", err)
				}
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// healthChecker is a queue that can say whether it is usable now (JetStreamQueue).
type healthChecker interface {
	Healthy(ctx context.Context) error
}

// Ready reports whether the front end can serve: nil, or why its batch queue cannot (it
// could not be opened, or its connection is down and cannot be re-dialled). `plan serve`'s
// readiness (GET /v2/health/ready) asks it (serve.ReadyChecker).
func (f *Frontend) Ready(ctx context.Context) error {
	q, qerr := f.batch.current()
	if q == nil {
		if d := f.s.Deployment(); d == nil || d.Kind != f.Kind {
			return nil // another system's plan: no queue to wait for
		}
		// Not open (yet): the open loop tries (again) in the background.
		f.openInBackground()
		if qerr == nil {
			return errors.New("the batch queue is not open yet")
		}
		return fmt.Errorf("the batch queue is unavailable: %w", qerr)
	}
	if hc, ok := q.(healthChecker); ok {
		if err := hc.Healthy(ctx); err != nil {
			return fmt.Errorf("the batch queue is unavailable: %w", err)
		}
	}
	return nil
}

// queueDown is the 503 of a queue that cannot be opened; while the server shuts down it
// closes the connection.
func (f *Frontend) queueDown(err error) *Error {
	closing := f.batch.isClosed()
	return &Error{Status: 503, Type: "server_error", Message: "the batch queue is unavailable: " + err.Error(), RetryAfter: 5, Close: closing}
}

// maxAttempts bounds the times a queued request is submitted before it fails.
const maxAttempts = 10

// work submits queued requests one at a time until ctx ends. A request dropped for lack of
// room goes back to the queue (after its Retry-After); one the engine cannot serve fails.
func (f *Frontend) work(ctx context.Context, q Queue) {
	for {
		l, err := q.Lease(ctx)
		if err != nil {
			return
		}
		if !f.serveJob(ctx, q, l) {
			return
		}
	}
}

// serveJob serves one leased request; false means the server is shutting down.
func (f *Frontend) serveJob(ctx context.Context, q Queue, l *Lease) bool {
	st, err := q.Get(ctx, l.ID)
	if err != nil {
		st = &Status{ID: l.ID, Object: "queue.request"}
	}
	st.Attempts = l.Attempt
	fail := func(e *Error) {
		st.Status, st.Error = StatusFailed, e
		_ = q.Ack(context.WithoutCancel(ctx), l, *st)
	}
	req, e := Decode(l.Body, l.Chat)
	if e != nil {
		fail(e)
		return true
	}
	if d := f.s.Deployment(); d == nil || d.Kind != f.Kind || !f.known(req.Model) {
		// The plan changed under the queue: wait for one that serves the model.
		_ = q.Nack(context.WithoutCancel(ctx), l, 5*time.Second)
		return true
	}
	subs := choices(req, l.ID)
	// The lease is short (DefaultLease): extend it while the request runs, so only a
	// worker that died loses it.
	stop := f.keepLease(ctx, q, l)
	err = f.runAll(ctx, subs, time.Time{})
	stop()
	var fl *failure
	if err != nil && (!errors.As(err, &fl) || fl.shutdown()) {
		// Shutting down (the worker's context ended, or the engine's door closed): the
		// request goes back for the next server.
		_ = q.Nack(context.WithoutCancel(ctx), l, 0)
		return false
	}
	if fl != nil {
		ae := fl.openAI()
		if fl.status == 503 && l.Attempt < maxAttempts {
			_ = q.Nack(context.WithoutCancel(ctx), l, time.Duration(ae.RetryAfter)*time.Second)
			return true
		}
		fail(ae)
		return true
	}
	b, err := json.Marshal(response(req, l.ID, st.Created, subs))
	if err != nil {
		slog.Error("queue: encoding a result", "id", l.ID, "err", err)
		return true
	}
	st.Status, st.Result, st.Error = StatusCompleted, b, nil
	_ = q.Ack(context.WithoutCancel(ctx), l, *st)
	return true
}
