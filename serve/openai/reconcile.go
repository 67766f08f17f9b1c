package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// Reconciling the status bucket with the stream, when the queue opens. The two are separate
// JetStream streams on disk, and a damaged store (a file cut short or lost while the server
// was stopped: JetStream drops what it cannot read when it recovers a stream) can lose a
// request's message while its status survives, and nothing would lease the request again:
// it would read "queued" for ever. Or the other way round: a message whose status was lost,
// which a poll answers 404 for. Or a message JetStream had removed on its ack comes back (the
// removal was in the part cut off) below the consumer's ack floor. So every message is
// checked against its status, and every status not yet final against the messages, keeping
// the queue's contract (queue.go): a request runs at most once, and every one ends.
//
//   - a status queued or running, and no message: the request cannot run (its body is
//     gone): failed with the code LostInQueue.
//   - a message and no status (or one that does not decode), never handed out: the status
//     is written again, queued: the request runs once, as any queued one.
//   - a message and no status, handed out before (at or below the consumer's delivered
//     sequence), or a status not final on a message at or below the ack floor (it was
//     acked, so the status lost its end): the request may have run, so it is failed with
//     the code LostInQueue rather than run again, and its message removed.
//   - a message whose request is final: removed (Lease would ack it unrun).
//
// Each request failed or queued again is logged by id. Until this is done the queue is not
// open, so GET /v2/health/ready answers 503 (Ready); a second start finds nothing to do.

// LostInQueue is the error code of a queued request whose message the queue's store no
// longer holds (its files were damaged): it cannot run, so it is failed.
const LostInQueue = "lost_in_queue"

// orphanGrace is how old a status without a message must be before it is failed, on an
// external server (--queue-url) that other `plan serve` processes write to while this one
// reconciles: Enqueue writes the status just before the message, so a status younger than
// this may be one whose message is on its way. The embedded server is this process's
// alone, so there it does not apply.
const orphanGrace = time.Minute

// Reconciled counts what a reconciliation found.
type Reconciled struct {
	// Pending is the requests in the stream not yet final (queued, or leased and not acked).
	Pending int
	// Lost is the requests failed with LostInQueue: their message, or their state after
	// they were handed out, was lost.
	Lost int
	// Restored is the messages never handed out whose status was lost, written again
	// (queued).
	Restored int
	// Cleared is the messages of final requests, removed.
	Cleared int
	// Young is the statuses without a message left alone as too recent (orphanGrace).
	Young int
}

// pendingStatus is a status read from the bucket that is not final, or that did not decode
// (st nil).
type pendingStatus struct {
	st       *Status
	revision uint64
	at       time.Time
}

// reconcile checks the statuses and the stream's messages against each other (see above),
// each change logged by id. An error means the store could not be read or written: the
// queue must not be used as if reconciled.
func (q *JetStreamQueue) reconcile(ctx context.Context) (Reconciled, error) {
	var r Reconciled
	log := q.logger()
	h, err := q.handles(ctx)
	if err != nil {
		return r, err
	}
	// The consumer first: a message at or below its ack floor was acked before the
	// statuses are read, so its status (written before the ack) is final unless the store
	// lost it; one at or below its delivered sequence was handed out, so marked running.
	ci, err := h.cons.Info(ctx)
	if err != nil {
		return r, fmt.Errorf("queue: consumer %s: %w", consumerName, err)
	}
	ackFloor, delivered := ci.AckFloor.Stream, ci.Delivered.Stream
	// The statuses next, then the messages: a request enqueued in between (on an external
	// server) has its status written before its message, so its message is seen.
	known, pending, err := readStatuses(ctx, h)
	if err != nil {
		return r, err
	}

	// The messages, in order, skipping the gaps the acked ones left (next_by_subj).
	stream, err := h.js.Stream(ctx, streamName)
	if err != nil {
		return r, fmt.Errorf("queue: stream %s: %w", streamName, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return r, fmt.Errorf("queue: stream %s: %w", streamName, err)
	}
	inStream := map[string]bool{}
	for seq := max(info.State.FirstSeq, 1); ; {
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subjectRoot+">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return r, fmt.Errorf("queue: reading stream %s at sequence %d: %w", streamName, seq, err)
		}
		seq = m.Sequence + 1
		var j Job
		if json.Unmarshal(m.Data, &j) != nil || !validQueueID(j.ID) {
			continue // not ours: Lease terminates it
		}
		ps, isPending := pending[j.ID]
		if known[j.ID] && !isPending { // final: never to run
			if err := q.removeMsg(ctx, stream, m.Sequence); err != nil {
				return r, fmt.Errorf("queue: removing the message of %s, already final: %w", j.ID, err)
			}
			r.Cleared++
			continue
		}
		inStream[j.ID] = true
		var body struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(j.Body, &body)
		st := Status{ID: j.ID, Object: "queue.request", Status: StatusQueued, Model: body.Model, Created: m.Time.Unix()}
		if ps.st != nil {
			st = *ps.st
		}
		statusLost := !known[j.ID] || ps.st == nil
		switch {
		case statusLost && m.Sequence <= delivered || !statusLost && m.Sequence <= ackFloor:
			// Handed out before, and what became of it is lost: it may have run.
			was := "no status"
			if !statusLost {
				was = st.Status
			}
			st.Status, st.Result = StatusFailed, nil
			st.Error = &Error{Status: 500, Type: "server_error", Code: LostInQueue,
				Message: "lost in the queue: the queue's store lost this request's state after it was handed out (its files were damaged, or --queue-result-ttl is shorter than its wait), so it may have run; a queued request runs at most once: resubmit it"}
			switch err := q.swap(ctx, h, st, ps.revision, known[j.ID]); {
			case errors.Is(err, errStatusChanged): // written meanwhile (another server has it)
				continue
			case err != nil:
				return r, fmt.Errorf("queue: failing %s: %w", j.ID, err)
			}
			if err := q.removeMsg(ctx, stream, m.Sequence); err != nil {
				return r, fmt.Errorf("queue: removing the message of %s: %w", j.ID, err)
			}
			r.Lost++
			log.Error("batch queue: a queued request's state was lost from the store after it was handed out; failed, not run again",
				"id", j.ID, "model", st.Model, "was", was, "sequence", m.Sequence, "code", LostInQueue)
		case statusLost:
			// Never handed out: write the status again, so a poll finds the request and
			// it runs once.
			switch err := q.swap(ctx, h, st, ps.revision, known[j.ID]); {
			case errors.Is(err, errStatusChanged): // written meanwhile (another server leased it)
			case err != nil:
				return r, fmt.Errorf("queue: restoring the status of %s: %w", j.ID, err)
			default:
				r.Restored++
				r.Pending++
				log.Warn("batch queue: a queued request's status was lost from the store; written again, queued to run once",
					"id", j.ID, "model", body.Model, "sequence", m.Sequence)
			}
		default:
			r.Pending++
		}
	}

	for id, ps := range pending {
		if inStream[id] {
			continue
		}
		if q.ns == nil && time.Since(ps.at) < orphanGrace {
			r.Young++
			continue
		}
		st := Status{ID: id, Object: "queue.request"}
		was := "unreadable"
		if ps.st != nil {
			st, was = *ps.st, ps.st.Status
		}
		st.Status, st.Result = StatusFailed, nil
		st.Error = &Error{Status: 500, Type: "server_error", Code: LostInQueue,
			Message: "lost in the queue: the queue's store no longer holds this request (its files were damaged); resubmit it"}
		if err := q.swap(ctx, h, st, ps.revision, true); err != nil {
			if errors.Is(err, errStatusChanged) {
				continue // its status changed meanwhile: another server has it
			}
			return r, fmt.Errorf("queue: failing %s, lost from the stream: %w", id, err)
		}
		r.Lost++
		log.Error("batch queue: a queued request was lost from the store; failed",
			"id", id, "model", st.Model, "was", was, "code", LostInQueue)
	}
	if r.Lost+r.Restored > 0 {
		log.Warn("batch queue reconciled with a damaged store", "pending", r.Pending, "lost", r.Lost,
			"restored", r.Restored, "cleared", r.Cleared)
	}
	return r, nil
}

// readStatuses reads every status in the bucket: known holds each key, pending those not
// final or that did not decode. A read cut short is an error: a partial read decides nothing.
func readStatuses(ctx context.Context, h *jsHandles) (known map[string]bool, pending map[string]pendingStatus, err error) {
	known, pending = map[string]bool{}, map[string]pendingStatus{}
	w, err := h.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, nil, fmt.Errorf("queue: reading the statuses: %w", err)
	}
	read := false
	for e := range w.Updates() {
		if e == nil { // the initial values are done
			read = true
			break
		}
		known[e.Key()] = true
		var st Status
		switch err := json.Unmarshal(e.Value(), &st); {
		case err != nil:
			pending[e.Key()] = pendingStatus{revision: e.Revision(), at: e.Created()}
		case st.Status == StatusQueued || st.Status == StatusRunning:
			pending[e.Key()] = pendingStatus{st: &st, revision: e.Revision(), at: e.Created()}
		default:
			delete(pending, e.Key())
		}
	}
	_ = w.Stop()
	if !read { // the watch ended early (ctx, the connection): a partial read decides nothing
		return nil, nil, fmt.Errorf("queue: reading the statuses: cut short: %v", ctx.Err())
	}
	return known, pending, nil
}

// removeMsg removes the message at seq (already gone is fine: another server acked it).
func (q *JetStreamQueue) removeMsg(ctx context.Context, stream jetstream.Stream, seq uint64) error {
	err := stream.DeleteMsg(ctx, seq)
	if err != nil {
		if _, gerr := stream.GetMsg(ctx, seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
			return nil
		}
	}
	return err
}

// swap writes st only if its key is still at revision (known) or still absent (!known), so
// a status another server changed meanwhile is kept (errStatusChanged).
func (q *JetStreamQueue) swap(ctx context.Context, h *jsHandles, st Status, revision uint64, known bool) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if known {
		_, err = h.kv.Update(ctx, st.ID, b, revision)
	} else {
		_, err = h.kv.Create(ctx, st.ID, b)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return errStatusChanged
	}
	return err
}

// errStatusChanged is swap's error for a status written meanwhile.
var errStatusChanged = errors.New("the status changed meanwhile")

// setAsideConsumer moves the embedded store's consumer directory out of the store when the
// server could not load it (its state file damaged: JetStream then refuses to create the
// consumer at all, and the queue could never open), so that it can be created anew; true
// if it did. A new consumer hands out every message in the stream from the start: the
// statuses keep each request from running twice (Lease), and the reconciliation fails or
// queues again what the old consumer's state can no longer say. An external server's
// consumer is its operator's, never touched.
func (q *JetStreamQueue) setAsideConsumer(ctx context.Context, st jetstream.Stream) bool {
	if q.ns == nil {
		return false
	}
	if _, err := st.Consumer(ctx, consumerName); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false // loaded, or the server cannot say: not a damaged directory
	}
	// The file store's layout: <store>/<account>/streams/<stream>/obs/<consumer>
	// (nats-server filestore.go, streamsDir and consumerDir).
	dir := filepath.Join(q.ns.StoreDir(), server.DEFAULT_GLOBAL_ACCOUNT, "streams", streamName, "obs", consumerName)
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	aside := filepath.Join(q.o.Dir, "damaged", fmt.Sprintf("%s-%d", consumerName, time.Now().UnixNano()))
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return false
	}
	if err := os.Rename(dir, aside); err != nil {
		return false
	}
	q.logger().Error("batch queue: the queue's consumer state could not be loaded (damaged); moved aside and created anew: every queued request is handed out again, none runs twice",
		"moved_to", aside)
	return true
}

func (q *JetStreamQueue) logger() *slog.Logger {
	if q.o.Logger != nil {
		return q.o.Logger
	}
	return slog.Default()
}
