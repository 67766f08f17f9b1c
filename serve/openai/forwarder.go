package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/plan-dev/plan/serve"
)

// forwarder is the way to the remote engines (--llm-endpoints): it forwards a request to
// its instance's engine, and keeps each instance's state in the engine in line with its
// engine's (failed while the engine is down, so that QLM re-queues what it placed there and
// re-plans: QLM §7). Its zero value forwards nothing (on is false): the instances are the
// server's own emulated workers.
type forwarder struct {
	// s is the server whose engine the instances' states are set in; engines polls the
	// remote engines; client forwards to them. Set once, by start, before any request.
	s       *serve.Server
	engines *Engines
	client  *http.Client
	// markMu orders the changes of an instance's state in the engine (syncDown): each is
	// one SetWorkerDown, taken on its remote engine's state as it is then. It is taken
	// before downMu.
	markMu sync.Mutex
	// downMu guards down: the instances failed in the engine because their remote engine
	// is down.
	downMu sync.Mutex
	down   map[string]bool
	// marked, when set before start, is told of each change (tests).
	marked func(instance string, down bool)
}

// on reports whether requests go to remote engines.
func (fw *forwarder) on() bool { return fw.engines != nil }

// start polls the engines of eps every poll for s, and marks their instances down or up
// after every round (the first before start returns).
func (fw *forwarder) start(s *serve.Server, eps EndpointList, poll time.Duration) {
	fw.s, fw.client = s, &http.Client{}
	// engines is set before its first round, which markDown reads it in.
	fw.engines = newEngines(eps, nil, func(es []EngineState) {
		observeEngines(s, es)
		fw.markDown()
	})
	fw.engines.start(poll)
}

// close stops the polling.
func (fw *forwarder) close() {
	if fw.engines != nil {
		fw.engines.Close()
	}
}

// forward sends a request's body to its instance's engine, with the engine's model name,
// and copies the engine's answer (status, content type, body; a stream as it comes) back.
// When the engine fails before answering (a transport error, or a 5xx status, whose body is
// read and discarded) it writes nothing and returns the failure: the request can still go to
// another instance. Everything else is answered here, a 4xx as the engine gave it (its
// verdict on the request, which another engine would share).
func (fw *forwarder) forward(w http.ResponseWriter, r *http.Request, instance string, path string, body []byte) error {
	es, ok := fw.engines.Get(instance)
	if !ok {
		writeError(w, &Error{Status: 503, Type: "server_error", Code: "no_engine",
			Message: fmt.Sprintf("instance %s has no engine in --llm-endpoints", instance), RetryAfter: 1})
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		writeError(w, badRequest("", "the body is not a JSON object: %v", err))
		return nil
	}
	if es.Model != "" {
		m["model"] = es.Model
	}
	delete(m, "prompt_tokens") // our extensions: not the engine's
	delete(m, "class")
	b, _ := json.Marshal(m)
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, es.URL+path, bytes.NewReader(b))
	if err != nil {
		writeError(w, &Error{Status: 502, Type: "server_error", Message: err.Error()})
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := fw.client.Do(req)
	if err != nil {
		if r.Context().Err() != nil {
			// The client left: no one to answer, and no news about the engine.
			return nil
		}
		return fmt.Errorf("instance %s engine: %w", instance, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return fmt.Errorf("instance %s engine: POST %s%s: status %d: %s", instance, es.URL, path, resp.StatusCode, bytes.TrimSpace(msg))
	}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set("X-Plan-Instance", instance)
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	// tail is the last bytes sent: whether the stream stopped between two events.
	tail := "\n\n"
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			// --write-timeout per write: a client that stops reading is cut off (and the
			// engine's stream with it, through the request's context).
			_ = rc.SetWriteDeadline(time.Now().Add(fw.s.WriteTimeout()))
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			if rc.Flush() != nil {
				return nil
			}
			tail += string(buf[max(0, n-2):n])
			tail = tail[len(tail)-2:]
		}
		switch {
		case err == nil:
			continue
		case err == io.EOF, r.Context().Err() != nil:
			return nil
		default:
			// The answer has started: the client has part of it and cannot be handed
			// to another engine unnoticed.
			slog.Warn("remote engine failed mid-answer", "instance", instance, "url", es.URL, "err", err)
			if !stream {
				// Ending the handler would end the chunked body cleanly and the client
				// would take the truncated JSON for the answer: abort the connection.
				panic(http.ErrAbortHandler)
			}
			e := &Error{Status: 502, Type: "server_error", Code: "engine_failed",
				Message: fmt.Sprintf("instance %s engine %s: the stream broke off: %v", instance, es.URL, err)}
			eb, _ := json.Marshal(errorBody{e})
			sep := ""
			if tail != "\n\n" {
				sep = "\n\n" // end the broken event, so the error is an event of its own
			}
			_ = rc.SetWriteDeadline(time.Now().Add(fw.s.WriteTimeout()))
			if _, werr := fmt.Fprintf(w, "%sdata: %s\n\ndata: [DONE]\n\n", sep, eb); werr == nil {
				_ = rc.Flush()
			}
			return nil
		}
	}
}

// engineFailed fails instance in the engine at once when its remote engine failed a
// forward: QLM then re-queues what it had placed there and re-plans (QLM §7), so the
// request whose forward failed gets another instance.
func (fw *forwarder) engineFailed(instance string, err error) {
	slog.Warn("remote engine failed; its instance is down until a poll succeeds", "instance", instance, "err", err)
	fw.engines.fail(instance, err.Error())
	fw.syncDown(instance)
}

// markDown fails an instance in the engine when its remote engine went down and brings it
// back when a poll succeeds again (Server.SetWorkerDown): QLM then re-queues what it had
// placed there and re-plans (QLM §7). It runs after every poll round.
func (fw *forwarder) markDown() {
	for _, e := range fw.engines.All() {
		fw.syncDown(e.Instance)
	}
}

// syncDown brings instance's state in the engine in line with its remote engine's. The
// polling goroutine and every handler whose forward failed call it: markMu makes each
// change one SetWorkerDown, taken on the engine's state as it is now (a poll round's
// snapshot may predate a forward's failure).
func (fw *forwarder) syncDown(instance string) {
	fw.markMu.Lock()
	defer fw.markMu.Unlock()
	e, ok := fw.engines.Get(instance)
	if !ok || e.Down == fw.isDown(instance) {
		return
	}
	if err := fw.s.SetWorkerDown(instance, e.Down); err != nil {
		slog.Warn("remote engine state", "instance", instance, "down", e.Down, "err", err)
		return
	}
	fw.downMu.Lock()
	if fw.down == nil {
		fw.down = map[string]bool{}
	}
	fw.down[instance] = e.Down
	fw.downMu.Unlock()
	if fw.marked != nil {
		fw.marked(instance, e.Down)
	}
}

// isDown reports whether instance is failed in the engine.
func (fw *forwarder) isDown(instance string) bool {
	fw.downMu.Lock()
	defer fw.downMu.Unlock()
	return fw.down[instance]
}
