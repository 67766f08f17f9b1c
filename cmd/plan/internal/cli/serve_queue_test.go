package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/serve"
)

// TestServeQueueStartupCheck: `plan serve` of a QLM plan opens its batch queue at start and
// logs where (by default a directory of its own under $XDG_STATE_HOME/plan/queue, named by
// --addr), or logs that --queue-url is unreachable, with /v2/health/ready 503 meanwhile.
func TestServeQueueStartupCheck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	state := t.TempDir()
	for _, tc := range []struct {
		name      string
		args      []string
		log       string
		readyCode int
	}{
		{"default dir", nil, "queue_dir=" + filepath.Join(state, "plan", "queue", "127.0.0.1_0"), 200},
		{"unreachable url", []string{"--queue-url", "nats://127.0.0.1:" + strconv.Itoa(deadPort)}, "batch queue unreachable", 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", state)
			ready := make(chan struct{})
			var srv *serve.Server
			var addr string
			serveHook = func(s *serve.Server, a string) {
				srv, addr = s, a
				close(ready)
			}
			defer func() { serveHook = nil }()
			serr := &syncBuffer{}
			done := make(chan int, 1)
			args := append([]string{"serve", filepath.Join("..", "..", "..", "..", "testdata", "golden", "qlm-3classes.json"), "--addr", "127.0.0.1:0"}, tc.args...)
			go func() {
				var sout bytes.Buffer
				done <- Run(args, Streams{In: strings.NewReader(""), Out: &sout, Err: serr})
			}()
			select {
			case <-ready:
			case code := <-done:
				t.Fatalf("serve exited %d: %s", code, serr.String())
			}
			defer func() {
				_ = srv.Shutdown(context.Background())
				<-done
			}()
			var code int
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if strings.Contains(serr.String(), tc.log) {
					resp, err := http.Get("http://" + addr + "/v2/health/ready")
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if code = resp.StatusCode; code == tc.readyCode {
						return
					}
				}
			}
			t.Errorf("want a log line with %q and ready %d; ready %d, log:\n%s", tc.log, tc.readyCode, code, serr.String())
		})
	}
}
