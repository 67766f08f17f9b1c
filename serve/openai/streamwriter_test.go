package openai

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// events splits a stream's body into its `data:` payloads.
func events(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		d, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("not a data event: %q", ev)
		}
		out = append(out, d)
	}
	return out
}

// streamChunk is what the tests read of a chunk.
type streamChunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Index        int     `json:"index"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Delta        *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
	Error *Error `json:"error"`
}

func newTestWriter(chat, continuous bool, prompts ...int) (*streamWriter, *httptest.ResponseRecorder) {
	rec := httptest.NewRecorder()
	req := &Request{Chat: chat, Model: "m", ContinuousUsage: continuous}
	return newStreamWriter(rec, time.Second, req, "cmpl-1", 7, prompts), rec
}

// TestStreamWriterOrder: a stream of two choices is each choice's tokens one chunk each, in
// order, its last chunk with the finish reason, the usage chunk with no choices, [DONE].
func TestStreamWriterOrder(t *testing.T) {
	sw, rec := newTestWriter(true, false, 5, 5)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(sw.Tokens(0, 2))
	must(sw.Tokens(1, 1))
	must(sw.Tokens(0, 2)) // nothing new
	must(sw.Tokens(0, 1)) // nor behind
	must(sw.Flush())
	must(sw.End(1, 3, "length"))
	must(sw.End(0, 2, "stop"))
	must(sw.Usage(&Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}))
	must(sw.Done())
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	evs := events(t, rec.Body.String())
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", evs[len(evs)-1])
	}
	tokens := map[int]string{}
	count := map[int]int{}
	finish := map[int]string{}
	var usage *Usage
	for k, ev := range evs[:len(evs)-1] {
		var c streamChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %d: %v: %s", k, err, ev)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("event %d: object %q", k, c.Object)
		}
		if usage != nil {
			t.Fatalf("event %d after the usage chunk: %s", k, ev)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Errorf("the usage chunk has choices: %s", ev)
			}
			usage = c.Usage
			continue
		}
		if len(c.Choices) != 1 {
			t.Fatalf("event %d: %d choices", k, len(c.Choices))
		}
		ch := c.Choices[0]
		if _, ok := finish[ch.Index]; ok {
			t.Errorf("event %d: choice %d after its finish chunk", k, ch.Index)
		}
		first := tokens[ch.Index] == ""
		if (ch.Delta.Role != nil) != (first && ch.FinishReason == nil) {
			t.Errorf("event %d: role %v on a chunk that is first: %v", k, ch.Delta.Role, first)
		}
		if ch.FinishReason != nil {
			finish[ch.Index] = *ch.FinishReason
			if *ch.Delta.Content != "" {
				t.Errorf("event %d: the finish chunk has text %q", k, *ch.Delta.Content)
			}
			continue
		}
		n := count[ch.Index]
		count[ch.Index]++
		if want := Filler(n, n+1); *ch.Delta.Content != want {
			t.Errorf("event %d: choice %d token %d is %q, want %q", k, ch.Index, n, *ch.Delta.Content, want)
		}
		tokens[ch.Index] += *ch.Delta.Content
	}
	if tokens[0] != Filler(0, 2) || tokens[1] != Filler(0, 3) {
		t.Errorf("texts %q, %q: want %q, %q", tokens[0], tokens[1], Filler(0, 2), Filler(0, 3))
	}
	if finish[0] != "stop" || finish[1] != "length" {
		t.Errorf("finish reasons %v", finish)
	}
	if usage == nil || usage.TotalTokens != 15 {
		t.Errorf("usage %+v", usage)
	}
}

// TestStreamWriterContract: a call that would break the order writes nothing and says so
// (errStreamOrder): nothing after [DONE], usage once and only after every choice ended,
// nothing of a choice after its last chunk, [DONE] only once every choice ended.
func TestStreamWriterContract(t *testing.T) {
	u := &Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}
	for _, tc := range []struct {
		name  string
		setup func(sw *streamWriter) error
		bad   func(sw *streamWriter) error
	}{
		{"tokens after [DONE]", func(sw *streamWriter) error { return errors.Join(sw.End(0, 1, "stop"), sw.Done()) },
			func(sw *streamWriter) error { return sw.Tokens(0, 5) }},
		{"usage after [DONE]", func(sw *streamWriter) error { return errors.Join(sw.End(0, 1, "stop"), sw.Done()) },
			func(sw *streamWriter) error { return sw.Usage(u) }},
		{"[DONE] twice", func(sw *streamWriter) error { return errors.Join(sw.End(0, 1, "stop"), sw.Done()) },
			func(sw *streamWriter) error { return sw.Done() }},
		{"an error after [DONE]", func(sw *streamWriter) error { return errors.Join(sw.End(0, 1, "stop"), sw.Done()) },
			func(sw *streamWriter) error { return sw.Fail(&Error{Status: 503, Message: "late"}) }},
		{"usage twice", func(sw *streamWriter) error { return errors.Join(sw.End(0, 1, "stop"), sw.Usage(u)) },
			func(sw *streamWriter) error { return sw.Usage(u) }},
		{"usage before the end", func(sw *streamWriter) error { return sw.Tokens(0, 1) },
			func(sw *streamWriter) error { return sw.Usage(u) }},
		{"[DONE] before the end", func(sw *streamWriter) error { return sw.Tokens(0, 1) },
			func(sw *streamWriter) error { return sw.Done() }},
		{"tokens after the choice's end", func(sw *streamWriter) error { return sw.End(0, 1, "stop") },
			func(sw *streamWriter) error { return sw.Tokens(0, 3) }},
		{"a second end", func(sw *streamWriter) error { return sw.End(0, 1, "stop") },
			func(sw *streamWriter) error { return sw.End(0, 1, "stop") }},
		{"no such choice", func(sw *streamWriter) error { return nil },
			func(sw *streamWriter) error { return sw.Tokens(2, 1) }},
		{"tokens after an error", func(sw *streamWriter) error {
			return errors.Join(sw.Tokens(0, 1), sw.Fail(&Error{Status: 503, Message: "x"}))
		}, func(sw *streamWriter) error { return sw.Tokens(0, 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw, rec := newTestWriter(false, false, 1)
			if err := tc.setup(sw); err != nil {
				t.Fatal(err)
			}
			before := rec.Body.String()
			if err := tc.bad(sw); !errors.Is(err, errStreamOrder) {
				t.Errorf("err %v, want errStreamOrder", err)
			}
			if after := rec.Body.String(); after != before {
				t.Errorf("wrote %q", strings.TrimPrefix(after, before))
			}
		})
	}
}

// TestStreamWriterFail: an error before any event is the whole answer, with its status and
// no stream; after, it is an error event and [DONE].
func TestStreamWriterFail(t *testing.T) {
	sw, rec := newTestWriter(false, false, 1)
	if err := sw.Fail(&Error{Status: 429, Type: "rate_limit_error", Message: "busy", RetryAfter: 2}); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "2" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Errorf("status %d, headers %v", rec.Code, rec.Header())
	}
	if want := `{"error":{"message":"busy","type":"rate_limit_error","param":null,"code":null}}` + "\n"; rec.Body.String() != want {
		t.Errorf("body %q, want %q", rec.Body.String(), want)
	}

	sw, rec = newTestWriter(false, false, 1)
	if err := errors.Join(sw.Tokens(0, 2), sw.Fail(&Error{Status: 503, Type: "server_error", Message: "dropped"})); err != nil {
		t.Fatal(err)
	}
	evs := events(t, rec.Body.String())
	if rec.Code != 200 || len(evs) != 4 || evs[3] != "[DONE]" || evs[2] != `{"error":{"message":"dropped","type":"server_error","param":null,"code":null}}` {
		t.Errorf("status %d, events %q", rec.Code, evs)
	}
}

// TestStreamWriterContinuousUsage: with continuous_usage_stats every chunk counts the
// choice's completion tokens sent with it.
func TestStreamWriterContinuousUsage(t *testing.T) {
	sw, rec := newTestWriter(false, true, 4, 9)
	if err := errors.Join(sw.Tokens(1, 2), sw.End(1, 3, "length")); err != nil {
		t.Fatal(err)
	}
	want := []int{1, 2, 3, 3}
	for k, ev := range events(t, rec.Body.String()) {
		var c streamChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		if c.Usage == nil || c.Usage.PromptTokens != 9 || c.Usage.CompletionTokens != want[k] || c.Usage.TotalTokens != 9+want[k] {
			t.Errorf("event %d: usage %+v, want %d completion tokens of prompt 9", k, c.Usage, want[k])
		}
	}
}

// failingWriter fails every write after the first n.
type failingWriter struct {
	*httptest.ResponseRecorder
	n int
}

var errGone = errors.New("the client stopped reading")

func (w *failingWriter) Write(b []byte) (int, error) {
	if w.n == 0 {
		return 0, errGone
	}
	w.n--
	return w.ResponseRecorder.Write(b)
}

// TestStreamWriterWriteFails: after a failed write nothing more is written, and every call
// says why.
func TestStreamWriterWriteFails(t *testing.T) {
	fw := &failingWriter{ResponseRecorder: httptest.NewRecorder(), n: 2}
	sw := newStreamWriter(fw, time.Second, &Request{Model: "m"}, "cmpl-1", 7, []int{1})
	if err := sw.Tokens(0, 5); !errors.Is(err, errGone) {
		t.Fatalf("err %v, want the write's", err)
	}
	before := fw.Body.String()
	if n := len(events(t, before)); n != 2 {
		t.Errorf("%d events written, want the 2 before the failure", n)
	}
	for name, err := range map[string]error{"flush": sw.Flush(), "end": sw.End(0, 5, "stop"), "usage": sw.Usage(&Usage{}), "done": sw.Done()} {
		if !errors.Is(err, errGone) {
			t.Errorf("%s: err %v, want the write's", name, err)
		}
	}
	if fw.Body.String() != before {
		t.Errorf("wrote after the failure: %q", strings.TrimPrefix(fw.Body.String(), before))
	}
}

// The recorder is the writer's http.ResponseWriter in these tests: it flushes.
var _ http.Flusher = httptest.NewRecorder()
