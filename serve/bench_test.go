package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkServeHTTP measures the server's CPU cost per request without the network: handler
// (decode, validate), driver (engine, timers, emulated 2 ms hop), answer encoding. Requests
// run concurrently (the 2 ms of emulated work overlap), so ns/op is the throughput cost.
func BenchmarkServeHTTP(b *testing.B) {
	s, err := New(Options{Plan: loadPlan(b, "wide.json")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	body := inferBody(1, 2, 3, 4)
	b.SetParallelism(64)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(http.MethodPost, "/v2/models/w/infer", strings.NewReader(body))
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if w.Code != 200 && w.Code != 503 {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}
