package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// A completion streamed as server-sent events (stream: true): Frontend.stream follows the
// choices through the engine and decides what to send; streamWriter owns the wire and its
// order.

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
		i   int
		err error
	}
	done := make(chan ended, len(subs))
	for i, sub := range subs {
		go func() { done <- ended{i, f.submit(ctx, sub, arrived)} }()
	}
	prompts := make([]int, len(subs))
	for i, sub := range subs {
		prompts[i] = sub.req.PromptTokens
	}
	sw := newStreamWriter(w, f.s.WriteTimeout(), req, id, arrived.Unix(), prompts)
	outs := make([]int, len(subs)) // each choice's output once it finished
	tick := subs[0].tick           // shared by the choices (choices)
	for {
		select {
		case <-r.Context().Done():
			// The client left (or its deadline passed): stop writing; Submit, on the same
			// context, cancels the choices in the engine, which frees their sequences
			// within an iteration.
			return
		case <-tick:
			// Tokens that reach the handler together (the driver's ticks coalesce while
			// this goroutine waits) still go as one chunk each, flushed together.
			for i, sub := range subs {
				if !sw.ended(i) {
					_ = sw.Tokens(i, sub.delivered())
				}
			}
			if sw.Flush() != nil {
				return // the client stopped reading: returning cancels the choices
			}
		case o := <-done:
			if o.err != nil {
				if r.Context().Err() != nil {
					return // the client left: nothing to answer
				}
				_ = sw.Fail(apiError(o.err))
				return
			}
			sub := subs[o.i]
			outs[o.i] = sub.output()
			_ = sw.End(o.i, outs[o.i], finishReason(sub.req))
			if sw.pending() > 0 {
				if sw.Flush() != nil {
					return
				}
				continue
			}
			if req.IncludeUsage {
				_ = sw.Usage(totalUsage(req, subs, outs))
			}
			_ = sw.Done()
			return
		}
	}
}

// errStreamOrder is the error of a streamWriter call that would break the stream's order
// (its contract): nothing is written.
var errStreamOrder = errors.New("stream written out of order")

// streamWriter writes one streamed answer: `data: {chunk}` events, then `data: [DONE]`
// (ecosystem digest §5). It keeps the stream's state, so that its contract holds whatever
// the handler asks:
//
//   - The status line (200, text/event-stream) goes with the first event, so a request
//     that fails before any is an ordinary error answer: Fail writes it whole, with its
//     own status.
//   - A choice's chunks carry one token each, in order, none sent twice or skipped
//     (Tokens): the engine delivers one token per sequence per step (LLM engine digest
//     §2.5), and benchmark clients take every chunk for a token when they time the
//     inter-token latency (§3). End writes the choice's last chunk, with its finish reason;
//     nothing of that choice follows it.
//   - The usage chunk (Usage) comes at most once, after every choice's End and before
//     [DONE]; its choices are empty, since a client takes the first chunk with choices
//     for the first token (drop-in facts §3).
//   - Nothing follows [DONE] (Done, once every choice ended) or Fail; Fail on a started
//     stream writes an error event, then [DONE].
//   - Every write has its own deadline (--write-timeout): a client that stops reading its
//     stream fails the write instead of holding the handler and its connection until the
//     generation ends. After a failed write nothing more is written, and every method
//     returns that error.
//
// A call that would break the order writes nothing and returns an error wrapping
// errStreamOrder. One goroutine drives a streamWriter (it is not safe for concurrent use).
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// The envelope every chunk carries; continuous asks for the usage in every chunk
	// (stream_options.continuous_usage_stats, vLLM's extension), counting prompt[i]
	// prompt tokens for choice i.
	id, object, model string
	created           int64
	chat, continuous  bool
	prompt            []int
	// sent[i] is choice i's tokens written, finished[i] whether its End was; open counts
	// the choices not ended.
	sent     []int
	finished []bool
	open     int
	// started: the status line is written; dirty: written since the last flush; usage:
	// the usage chunk is written; closed: [DONE] or Fail is. err is the first failed write.
	started, dirty, usage, closed bool
	err                           error
}

// newStreamWriter returns the writer of req's stream on w, with one choice per entry of
// prompt (its prompt tokens), each write bounded by timeout.
func newStreamWriter(w http.ResponseWriter, timeout time.Duration, req *Request, id string, created int64, prompt []int) *streamWriter {
	object := "text_completion"
	if req.Chat {
		object = "chat.completion.chunk"
	}
	return &streamWriter{w: w, rc: http.NewResponseController(w), timeout: timeout,
		id: id, object: object, model: req.Model, created: created, chat: req.Chat, continuous: req.ContinuousUsage,
		prompt: prompt, sent: make([]int, len(prompt)), finished: make([]bool, len(prompt)), open: len(prompt)}
}

// Tokens writes choice i's tokens after those sent, up to n, one chunk each (none when n
// is not past them).
func (s *streamWriter) Tokens(i, n int) error {
	if err := s.writable(i); err != nil {
		return err
	}
	for ; s.sent[i] < n && s.err == nil; s.sent[i]++ {
		k := s.sent[i]
		s.event(s.choiceChunk(i, Filler(k, k+1), nil, k == 0, k+1))
	}
	return s.err
}

// End writes choice i's tokens up to out, its output, then its last chunk with its finish
// reason.
func (s *streamWriter) End(i, out int, reason string) error {
	if err := s.Tokens(i, out); err != nil {
		return err
	}
	s.event(s.choiceChunk(i, "", &reason, false, out))
	s.finished[i] = true
	s.open--
	return s.err
}

// ended reports whether choice i's End was written.
func (s *streamWriter) ended(i int) bool { return s.finished[i] }

// pending is the number of choices not ended.
func (s *streamWriter) pending() int { return s.open }

// Usage writes the usage chunk: the whole answer's usage, with no choices.
func (s *streamWriter) Usage(u *Usage) error {
	switch {
	case s.err != nil:
		return s.err
	case s.closed:
		return fmt.Errorf("%w: usage after the stream ended", errStreamOrder)
	case s.usage:
		return fmt.Errorf("%w: usage written twice", errStreamOrder)
	case s.open > 0:
		return fmt.Errorf("%w: usage with %d choices not ended", errStreamOrder, s.open)
	}
	s.usage = true
	s.event(s.usageChunk(u))
	return s.err
}

// Fail ends the stream with e: before any event, as the whole answer (e's status and
// error object); after, as an error event and [DONE].
func (s *streamWriter) Fail(e *Error) error {
	if s.closed {
		return fmt.Errorf("%w: an error after the stream ended", errStreamOrder)
	}
	s.closed = true
	if s.err != nil {
		return s.err
	}
	if !s.started {
		s.started = true
		writeError(s.w, e)
		return nil
	}
	s.event(errorBody{e})
	s.writeDone()
	return s.err
}

// Done ends the stream with [DONE] once every choice ended.
func (s *streamWriter) Done() error {
	switch {
	case s.err != nil:
		return s.err
	case s.closed:
		return fmt.Errorf("%w: [DONE] twice", errStreamOrder)
	case s.open > 0:
		return fmt.Errorf("%w: [DONE] with %d choices not ended", errStreamOrder, s.open)
	}
	s.closed = true
	s.writeDone()
	return s.err
}

// Flush sends what was written since the last flush.
func (s *streamWriter) Flush() error {
	if s.dirty {
		s.write(s.rc.Flush)
		s.dirty = false
	}
	return s.err
}

func (s *streamWriter) writeDone() {
	s.write(func() error { _, err := io.WriteString(s.w, "data: [DONE]\n\n"); return err })
	_ = s.Flush()
}

// writable checks that choice i may still be written: the stream is open and the choice
// not ended.
func (s *streamWriter) writable(i int) error {
	switch {
	case s.err != nil:
		return s.err
	case s.closed:
		return fmt.Errorf("%w: choice %d after the stream ended", errStreamOrder, i)
	case i < 0 || i >= len(s.sent):
		return fmt.Errorf("%w: no choice %d of %d", errStreamOrder, i, len(s.sent))
	case s.finished[i]:
		return fmt.Errorf("%w: choice %d after its last chunk", errStreamOrder, i)
	}
	return nil
}

// event writes one `data:` event, the status line first if it is the first.
func (s *streamWriter) event(v any) {
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		s.w.WriteHeader(200)
	}
	b, _ := json.Marshal(v)
	s.write(func() error { _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); return err })
}

// write runs op under a fresh write deadline, unless a write failed already.
func (s *streamWriter) write(op func() error) {
	if s.err == nil {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
		s.err = op()
		s.dirty = true
	}
}

// choiceChunk is one stream event of choice i (finish nil: not its last); upto is the completion
// tokens of the choice sent once it is, which continuous usage reports in every chunk.
func (s *streamWriter) choiceChunk(i int, text string, finish *string, first bool, upto int) any {
	var u *Usage
	if s.continuous {
		p := s.prompt[i]
		u = &Usage{PromptTokens: p, CompletionTokens: upto, TotalTokens: p + upto}
	}
	if s.chat {
		var d delta
		if first {
			d.Role = "assistant"
		}
		if text != "" || !first {
			d.Content = &text
		}
		return chunk[chatDelta]{Choices: []chatDelta{{Delta: d, FinishReason: finish, Index: i}},
			Created: s.created, ID: s.id, Model: s.model, Object: s.object, Usage: u}
	}
	return chunk[textChoice]{Choices: []textChoice{{FinishReason: finish, Index: i, Text: text}},
		Created: s.created, ID: s.id, Model: s.model, Object: s.object, Usage: u}
}

// usageChunk is the usage chunk: no choices (whatever their type), the whole answer's usage.
func (s *streamWriter) usageChunk(u *Usage) chunk[textChoice] {
	return chunk[textChoice]{Choices: []textChoice{}, Created: s.created, ID: s.id, Model: s.model, Object: s.object, Usage: u}
}
