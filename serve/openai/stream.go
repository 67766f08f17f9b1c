package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// A completion streamed as server-sent events (stream: true).

// stream answers with server-sent events: a chunk of filler text for every token as the
// engine delivers it (its output step, not the step that computed it: the same times as the
// simulator's stamps, whatever max_tokens), each with its choice's index, a last chunk per
// choice with its finish reason, the usage chunk when asked (stream_options.include_usage)
// once every choice has finished, then [DONE]. The status line waits for the first token of
// any choice, so a request dropped before any is an ordinary error answer; a choice that
// fails later ends the others and the stream with an error event.
func (f *Frontend) stream(w http.ResponseWriter, r *http.Request, req *Request, id string, subs []*submission, arrived time.Time) {
	// Returning cancels the choices still running: the client is gone, or the answer is
	// an error already.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type ended struct {
		i int
		outcome
	}
	done := make(chan ended, len(subs))
	for i, sub := range subs {
		go func() {
			a, err := f.submit(ctx, sub, arrived)
			done <- ended{i, outcome{a, err}}
		}()
	}
	rc := http.NewResponseController(w)
	wt := f.s.WriteTimeout()
	started := false
	// sent[i] is the tokens of choice i sent; outs[i] its output once it finished.
	sent, outs := make([]int, len(subs)), make([]int, len(subs))
	finished := make([]bool, len(subs))
	left := len(subs)
	object := "text_completion"
	if req.Chat {
		object = "chat.completion.chunk"
	}
	created := arrived.Unix()
	// Each write gets --write-timeout: a client that stops reading its stream fails the
	// write instead of holding this handler and its connection until the generation ends.
	// After a failed write nothing more is sent, and the choices are cancelled.
	var werr error
	write := func(op func() error) {
		if werr == nil {
			_ = rc.SetWriteDeadline(time.Now().Add(wt))
			werr = op()
		}
	}
	event := func(v any) {
		b, _ := json.Marshal(v)
		write(func() error { _, err := fmt.Fprintf(w, "data: %s\n\n", b); return err })
	}
	flush := func() { write(rc.Flush) }
	// chunk is one stream event of choice i; upto is the completion tokens of the choice
	// sent once it is, which stream_options.continuous_usage_stats reports in every chunk
	// (vLLM's extension).
	chunk := func(i int, text string, finish any, first bool, upto int) map[string]any {
		c := map[string]any{"index": i, "finish_reason": finish}
		if req.Chat {
			d := map[string]any{}
			if first {
				d["role"] = "assistant"
			}
			if text != "" || !first {
				d["content"] = text
			}
			c["delta"] = d
		} else {
			c["text"] = text
			c["logprobs"] = nil
		}
		ev := map[string]any{"id": id, "object": object, "created": created, "model": req.Model, "choices": []any{c}}
		if req.ContinuousUsage {
			ev["usage"] = usage(subs[i].req, upto)
		}
		return ev
	}
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(200)
	}
	// send writes choice i's tokens sent+1..n, one chunk each: the engine delivers one
	// token per sequence per step (LLM engine digest §2.5), and benchmark clients (vLLM's
	// benchmark_serving, plan load) take every chunk for a token when they time the
	// inter-token latency (§3). Tokens that reach the handler together (the driver's ticks
	// coalesce while this goroutine waits) still go as one chunk each, written together.
	send := func(i, n int) {
		if n <= sent[i] {
			return
		}
		start()
		for ; sent[i] < n; sent[i]++ {
			event(chunk(i, Filler(sent[i], sent[i]+1), nil, sent[i] == 0, sent[i]+1))
		}
	}
	// emit sends the tokens the engine delivered to choice i since its last chunk (never
	// past max_tokens: a preempted request's recomputed iterations yield none); it reports
	// whether it sent any.
	emit := func(i int) bool {
		sub := subs[i]
		sub.mu.Lock()
		n := sub.tokens
		sub.mu.Unlock()
		if limit := sub.req.MaxTokens; limit > 0 {
			n = min(n, limit)
		}
		if n <= sent[i] {
			return false
		}
		send(i, n)
		return true
	}
	tick := subs[0].tick // shared by the choices (choices)
	for {
		select {
		case <-r.Context().Done():
			// The client left (or its deadline passed): stop writing; Submit, on the same
			// context, cancels the choices in the engine, which frees their sequences
			// within an iteration.
			return
		case <-tick:
			wrote := false
			for i := range subs {
				if !finished[i] && emit(i) {
					wrote = true
				}
			}
			if wrote {
				flush()
			}
			if werr != nil {
				return
			}
		case o := <-done:
			if o.err == nil && o.a.Status == 200 {
				sub := subs[o.i]
				sub.mu.Lock()
				out := completionTokens(sub.req, sub.tokens)
				sub.mu.Unlock()
				emit(o.i)
				send(o.i, out)
				start()
				event(chunk(o.i, "", finishReason(sub.req), false, out))
				finished[o.i], outs[o.i] = true, out
				if left--; left > 0 {
					flush()
					if werr != nil {
						return
					}
					continue
				}
				if req.IncludeUsage {
					event(map[string]any{"id": id, "object": object, "created": created, "model": req.Model,
						"choices": []any{}, "usage": totalUsage(req, subs, outs)})
				}
			} else {
				e := &Error{Status: 503, Type: "server_error", Close: true}
				if o.err != nil {
					if r.Context().Err() != nil {
						return
					}
					e.Message = o.err.Error()
				} else {
					e = answerError(o.a)
				}
				if !started {
					writeError(w, e)
					return
				}
				event(map[string]*Error{"error": e})
			}
			write(func() error { _, err := io.WriteString(w, "data: [DONE]\n\n"); return err })
			flush()
			return
		}
	}
}
