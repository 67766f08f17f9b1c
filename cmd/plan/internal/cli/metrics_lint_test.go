package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/internal/base/promcheck"
	"github.com/plan-dev/plan/serve"
)

// TestMetricsExpositionEverySystem: `plan serve` of each system's golden plan, after some
// load, exposes /metrics that promtool's lint rules pass (promcheck.Lint, always) and that
// `promtool check metrics` passes when promtool is installed (CI installs it; skipped here
// when absent, failed under PLAN_REQUIRE_ALL=1).
func TestMetricsExpositionEverySystem(t *testing.T) {
	for _, tc := range []struct{ system, plan string }{
		{"ppipe", "demo-ppipe.json"},
		{"pard", "pard-4apps.json"},
		{"cascade", "cascade-sentiment.json"},
		{"qlm", "qlm-3classes.json"},
		{"dyorc", "dyorc-small.json"},
	} {
		t.Run(tc.system, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", t.TempDir())
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
			go func() {
				var sout bytes.Buffer
				done <- Run([]string{"serve", filepath.Join("..", "..", "..", "..", "testdata", "golden", tc.plan), "--addr", "127.0.0.1:0"},
					Streams{In: strings.NewReader(""), Out: &sout, Err: serr})
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
			// Load fills the per-model, per-worker and drop series; its verdict is not
			// this test's business.
			rootRun(t, "load", "http://"+addr, "--rate", "300", "--duration", "200ms", "--seed", "1", "-q")
			client := &http.Client{Timeout: 30 * time.Second}
			resp, err := client.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			text, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
			}
			if !bytes.Contains(text, []byte("plan_requests_total")) {
				t.Fatalf("/metrics has no plan_requests_total:\n%s", text)
			}
			probs, err := promcheck.Lint(text)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range probs {
				t.Errorf("lint: %s", p)
			}
			promcheck.RequirePromtool(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := promcheck.Promtool(ctx, text); err != nil {
				t.Error(err)
			}
		})
	}
}
