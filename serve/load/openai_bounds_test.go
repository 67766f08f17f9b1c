package load

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// endless repeats a pattern forever: a hostile server's body.
type endless struct {
	pat []byte
	at  int
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.pat[e.at%len(e.pat)]
		e.at++
	}
	return len(p), nil
}

// TestParseSSEBounded: a stream that never ends its line, piles data lines into one event,
// or sends valid chunks far past the request's max_tokens stops with ErrStreamTooLong after
// a bounded read, instead of growing until the timeout.
func TestParseSSEBounded(t *testing.T) {
	now := func() time.Duration { return 0 }
	for _, tc := range []struct {
		name      string
		body      io.Reader
		maxChunks int
		want      string
	}{
		{"endless line", &endless{pat: []byte("data: aaaaaaaa")}, 0, "SSE line longer than"},
		{"endless event", &endless{pat: []byte("data: aaaaaaaa\n")}, 0, "SSE event of more than"},
		{"past max_tokens", &endless{pat: []byte("data: {\"choices\":[{\"text\":\"x\"}]}\n\n")}, maxStreamChunks(16), "text chunks for a request of at most 96"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSSE(tc.body, now, false, false, tc.maxChunks)
			if !errors.Is(err, ErrStreamTooLong) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrStreamTooLong naming %q", err, tc.want)
			}
		})
	}
	// A well-formed stream within its bounds still parses.
	res, err := parseSSE(strings.NewReader("data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: [DONE]\n\n"), now, false, false, maxStreamChunks(1))
	if err != nil || !res.Done || len(res.Chunks) != 1 {
		t.Errorf("normal stream: %+v, %v", res, err)
	}
}
