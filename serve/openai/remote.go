package openai

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// A completion served by a remote engine (--llm-endpoints): QLM places it, the engine
// generates it (engines.go).

// emulate runs the request through the engine until it ends or ctx does: its emulated copy
// is the engine's model of the instance's occupancy while the remote engine generates, so it
// outlives the client's answer and ends early only with the remote request (remote).
func (f *Frontend) emulate(ctx context.Context, sub *submission, arrived time.Time) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f.submit(ctx, sub, arrived) }()
	return done
}

// remote serves a request on a remote engine: the QLM engine admits and orders it, and
// when it dispatches the request to an instance (its first iteration) the request goes to
// that instance's engine. A request dropped before is answered with the drop.
//
// An engine that fails before answering fails its instance in the engine (engineFailed),
// which re-queues the request's emulated copy on a live instance (QLM §7); the request then
// goes to that instance's engine when the copy's next iteration runs there. An instance is
// tried once; the client's context bounds the wait. A copy that QLM drops instead (no live
// instance can serve the model) is answered with the drop; one that had already finished on
// the failed instance is submitted again, so that QLM places it anew.
func (f *Frontend) remote(w http.ResponseWriter, r *http.Request, sub *submission, arrived time.Time, body []byte) {
	path := "/v1/completions"
	if sub.req.Chat {
		path = "/v1/chat/completions"
	}
	tried := map[string]bool{}
	var failures []string
	// next is the instance to forward to: the one holding the emulated copy, unless it is
	// down or its engine already failed this request.
	next := func() string {
		sub.mu.Lock()
		inst := sub.worker
		sub.mu.Unlock()
		if inst == "" || tried[inst] || f.fwd.isDown(inst) {
			return ""
		}
		return inst
	}
	// The copy runs past the answer (the engine's occupancy), but a client that leaves before
	// its answer ends takes the remote request with it (vLLM aborts a request whose client
	// disconnected, LLM engine digest §4; forward's request shares r's context): the copy is
	// cancelled then, so QLM frees its sequence too.
	copyCtx, cancelCopy := context.WithCancel(context.WithoutCancel(r.Context()))
	defer func() {
		if r.Context().Err() != nil {
			cancelCopy()
		}
	}()
	done := f.emulate(copyCtx, sub, arrived)
	var (
		ended  bool  // the emulated copy ended,
		endErr error // failing with endErr (nil: it finished)
	)
	resubmits := 0
	for {
		inst := next()
		if inst == "" && !ended {
			select {
			case <-sub.tick:
			case endErr = <-done:
				ended = true
			case <-r.Context().Done():
				return
			}
			continue
		}
		if inst == "" {
			// The emulated copy ended where no engine can take the request.
			switch {
			case endErr != nil:
				writeError(w, apiError(endErr))
			case resubmits < len(f.Endpoints):
				resubmits++
				done, ended = f.emulate(copyCtx, sub, arrived), false
				continue
			default:
				msg := "no engine could serve the request"
				if len(failures) > 0 {
					msg += ": " + strings.Join(failures, "; ")
				}
				writeError(w, &Error{Status: 502, Type: "server_error", Code: "engine_failed", Message: msg})
			}
			return
		}
		err := f.fwd.forward(w, r, inst, path, body)
		if err == nil {
			return
		}
		tried[inst] = true
		failures = append(failures, err.Error())
		f.fwd.engineFailed(inst, err)
	}
}
