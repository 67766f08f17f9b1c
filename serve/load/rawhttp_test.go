package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRawClient: the raw client reads Content-Length and chunked answers, reconnects after
// Connection: close, classifies 503s by reason and stage, and reports a server that does
// not answer as a client timeout.
func TestRawClient(t *testing.T) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch n.Add(1) % 4 {
		case 0:
			w.Header().Set("Connection", "close")
			fmt.Fprint(w, `{"outcome":"completed","timing":{"latency_us":42}}`)
		case 1:
			w.(http.Flusher).Flush() // chunked
			fmt.Fprint(w, `{"outcome":"completed","timing":{"latency_us":42}}`)
		case 2:
			w.WriteHeader(503)
			fmt.Fprint(w, `{"error":"x","reason":"admission","stage":"intake","timing":{"latency_us":0}}`)
		case 3:
			fmt.Fprint(w, `{"timing":{"latency_us":7}}`)
		}
	}))
	defer ts.Close()
	targets := []target{{name: "m", body: []byte(`{}`)}}
	// A generous timeout: these answers come at once, but under -race on a loaded machine a
	// 100 ms one expired (CI); the timeout path is checked below on a server that never
	// answers.
	c, err := newRawClient(context.Background(), ts.URL, 4, 10*time.Second, 64, targets)
	if err != nil {
		t.Fatal(err)
	}
	samples := make([]Sample, 40)
	var wg sync.WaitGroup
	for i := range samples {
		wg.Add(1)
		c.send(&targets[0], &samples[i], wg.Done)
	}
	wg.Wait()
	c.close()
	var ok, dropped int
	for _, s := range samples {
		switch {
		case s.Status == 200 && s.ServerLatency > 0:
			ok++
		case s.Status == 503 && s.Reason == "admission" && s.Stage == "intake":
			dropped++
		default:
			t.Errorf("sample %+v", s)
		}
	}
	if ok < 20 || dropped < 5 {
		t.Errorf("%d answered 200, %d dropped", ok, dropped)
	}
	// A server that never answers: a client timeout.
	hang := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer silent.Close()
	defer close(hang)
	c2, _ := newRawClient(context.Background(), silent.URL, 1, 100*time.Millisecond, 1, targets)
	var lost Sample
	wg.Add(1)
	c2.send(&targets[0], &lost, wg.Done)
	wg.Wait()
	c2.close()
	if lost.Status != 0 || lost.Reason != ReasonCancelled || lost.Stage != "client" {
		t.Errorf("unanswered request: %+v", lost)
	}
	if v, ok := field([]byte(`{"a": "b","latency_us":12}`), "latency_us"); !ok || v != "12" {
		t.Errorf("field: %q %v", v, ok)
	}
}
