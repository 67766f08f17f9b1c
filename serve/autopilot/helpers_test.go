package autopilot

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/fixture/servetest"
	"github.com/plan-dev/plan/serve"
)

// The helpers serve's own tests use, for a server the autopilot fronts: PPipe and PARD
// stand in for the system registry (internal/registry/systems).

func loadPlan(t testing.TB, name string) *formats.Plan {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "serve", name), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testServer runs a Server behind httptest and shuts both down at the end of the test,
// checking that no goroutine outlives them.
func testServer(t testing.TB, opts serve.Options) (*serve.Server, *httptest.Server) {
	t.Helper()
	before := goruntime.NumGoroutine()
	if opts.Deploy == nil {
		opts.Deploy = servetest.Deploy
	}
	if opts.Policies == nil {
		opts.Policies = servetest.Policies()
	}
	s, err := serve.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		_ = s.Shutdown(context.Background())
		ts.Close()
		http.DefaultClient.CloseIdleConnections()
		checkGoroutines(t, before)
	})
	return s, ts
}

func checkGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := goruntime.NumGoroutine()
		if n <= before+2 { // slack: the HTTP client's transport may keep a reader briefly
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:goruntime.Stack(buf, true)]
			t.Errorf("goroutines: %d before, %d after\n%s", before, n, buf)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func inferBody(vals ...float32) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":"r1","inputs":[{"name":"input","shape":[1,%d],"datatype":"FP32","data":[`, len(vals))
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%g", v)
	}
	b.WriteString("]}]}")
	return b.String()
}

func post(t testing.TB, url, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// metricValue returns the value of the series written exactly as series (0 if absent).
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}
