package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// openAIBody is the request body: a prompt of r.InputTokens tokens (Prompt), max_tokens =
// r.OutputTokens, stream with a usage chunk; unless Strict, ignore_eos (vLLM, SGLang) and
// prompt_tokens (plan serve).
func openAIBody(o OpenAIOptions, r OpenAIRequest) []byte {
	prompt := promptOf(o.Seed, r)
	m := map[string]any{"model": r.Model, "stream": true, "stream_options": map[string]any{"include_usage": true}, "temperature": 0}
	if o.Chat {
		m["messages"] = []map[string]string{{"role": "user", "content": prompt}}
		m["max_completion_tokens"] = r.OutputTokens
	} else {
		m["prompt"] = prompt
		m["max_tokens"] = r.OutputTokens
	}
	if !o.Strict {
		m["ignore_eos"] = true
		m["prompt_tokens"] = r.InputTokens
	}
	b, _ := json.Marshal(m)
	return b
}

// streamOne sends one streaming request and fills s: status, chunk times, tokens, failure.
// Times are from the send (the request's write), as benchmark_serving measures them.
func streamOne(ctx context.Context, c *http.Client, url string, o OpenAIOptions, s *OpenAISample) {
	rctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(openAIBody(o, s.OpenAIRequest)))
	if err != nil {
		s.Reason, s.Error = "connection", err.Error()
		return
	}
	for k, v := range o.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	begin := time.Now()
	fail := func(reason string, err error) {
		s.E2E = time.Since(begin)
		s.Reason = reason
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			s.Reason = ReasonTimeout
		}
		if err != nil {
			s.Error = clip(err.Error())
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		fail("connection", err)
		return
	}
	defer resp.Body.Close()
	s.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fail("http", errors.New(errorMessage(b)))
		return
	}
	// Closing the body on a timeout (rctx) closes the connection: the server sees its client
	// leave and aborts the request (digest §4; plan serve cancels it in the engine).
	res, err := parseSSE(resp.Body, func() time.Duration { return time.Since(begin) }, o.Chat, o.KeepText, maxStreamChunks(s.OutputTokens))
	s.Chunks, s.OutTokens, s.Text = res.Chunks, res.OutTokens, res.Text
	switch {
	case err != nil:
		fail("stream cut", err)
	case res.Error != "":
		fail("stream error", errors.New(res.Error))
	case !res.Done:
		fail("stream cut", errors.New("the stream ended without data: [DONE]"))
	case len(res.Chunks) == 0:
		fail("no tokens", errors.New("the stream carried no text"))
	default:
		s.OK = true
		s.E2E = time.Since(begin)
		s.TTFT = res.Chunks[0]
		if s.OutTokens == 0 {
			s.OutTokens = len(res.Chunks)
		}
	}
}

// SSEResult is what a completion stream carried.
type SSEResult struct {
	// Chunks are the arrival times (now() at their read) of the chunks with text.
	Chunks []time.Duration
	// OutTokens is the usage chunk's completion_tokens (0: no usage chunk).
	OutTokens int
	// Done: the stream ended with data: [DONE]. Error: an error event's message.
	Done  bool
	Error string
	// Text is the generated text, when kept (parseSSE's keep; ParseSSE keeps none).
	Text string
}

// ParseSSE reads an OpenAI completion stream (server-sent events: "data: {json}" lines, blank
// lines between events, ": comment" lines, "data: [DONE]" last), stamping every chunk whose
// choice carries text (completions: choices[0].text; chat: choices[0].delta.content) with
// now(). A role-only first chat chunk and the finish and usage chunks carry none. Events
// split over several data lines are joined, as the SSE format says.
func ParseSSE(r io.Reader, now func() time.Duration, chat bool) (SSEResult, error) {
	return parseSSE(r, now, chat, false, 0)
}

// Bounds on what a server may send one streaming request, so that a hostile or broken one
// (a data: line that never ends, events far past max_tokens) costs the client bounded
// memory and ends the request with a reason instead of growing until the timeout.
const (
	// maxSSELine is the longest SSE line read (a chunk of one token is under 1 KiB).
	maxSSELine = 1 << 20
	// maxSSEEvent is the most data one event may gather over its lines.
	maxSSEEvent = 4 << 20
)

// ErrStreamTooLong is a stream that sent more than a request can carry.
var ErrStreamTooLong = errors.New("the server sent more than the request can carry")

// maxStreamChunks is the most text chunks a request of maxTokens output tokens may carry
// before the client gives up on it: each chunk carries at least one token, so twice the
// tokens and 64 spare (role, empty and tool chunks) is generous.
func maxStreamChunks(maxTokens int) int {
	if maxTokens <= 0 {
		return 0
	}
	return 2*maxTokens + 64
}

// parseSSE is ParseSSE, keeping the text when keep is set, and stopping with
// ErrStreamTooLong after maxChunks text chunks (0: no bound but the line and event bounds).
func parseSSE(r io.Reader, now func() time.Duration, chat, keep bool, maxChunks int) (res SSEResult, _ error) {
	var text strings.Builder
	defer func() {
		if keep {
			res.Text = text.String()
		}
	}()
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	dispatch := func() {
		defer func() { data = data[:0] }()
		if len(data) == 0 {
			return
		}
		if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
			res.Done = true
			return
		}
		var ev struct {
			Choices []struct {
				Text  *string `json:"text"`
				Delta *struct {
					Content *string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			if res.Error == "" {
				res.Error = "a chunk that is not JSON: " + clip(string(data))
			}
			return
		}
		if len(ev.Error) > 0 && string(ev.Error) != "null" {
			res.Error = errorMessage(data)
			return
		}
		if ev.Usage != nil && ev.Usage.CompletionTokens > 0 {
			res.OutTokens = ev.Usage.CompletionTokens
		}
		for _, c := range ev.Choices {
			t := c.Text
			if chat && c.Delta != nil {
				t = c.Delta.Content
			}
			if t != nil && *t != "" {
				res.Chunks = append(res.Chunks, now())
				if keep {
					text.WriteString(*t)
				}
				break
			}
		}
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A longer line: gather it whole, up to maxSSELine.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				full = append(full, line...)
				if len(full) > maxSSELine {
					return res, fmt.Errorf("%w: an SSE line longer than %d bytes", ErrStreamTooLong, maxSSELine)
				}
			}
			line = full
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			dispatch()
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
			if len(data) > maxSSEEvent {
				return res, fmt.Errorf("%w: an SSE event of more than %d bytes", ErrStreamTooLong, maxSSEEvent)
			}
		}
		if err != nil {
			dispatch()
			if err == io.EOF {
				return res, nil
			}
			return res, err
		}
		if res.Done {
			return res, nil
		}
		if maxChunks > 0 && len(res.Chunks) > maxChunks {
			return res, fmt.Errorf("%w: %d text chunks for a request of at most %d", ErrStreamTooLong, len(res.Chunks), maxChunks)
		}
	}
}

// errorMessage is the message of an OpenAI error body ({"error": {"message"}} or
// {"error": "..."}, or {"message"} as some servers send), else the body itself, clipped.
func errorMessage(b []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var str string
		switch {
		case json.Unmarshal(e.Error, &obj) == nil && obj.Message != "":
			return clip(obj.Message)
		case json.Unmarshal(e.Error, &str) == nil && str != "":
			return clip(str)
		case e.Message != "":
			return clip(e.Message)
		}
	}
	return clip(string(bytes.TrimSpace(b)))
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
