package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkServeHTTP measures the server's CPU cost per request without the network: handler
// (decode, validate), driver (engine, timers, emulated 2 ms hop), answer encoding. Requests
// run concurrently (the 2 ms of emulated work overlap), so ns/op is the throughput cost.
func BenchmarkServeHTTP(b *testing.B) {
	s, err := New(withSystems(Options{Plan: loadPlan(b, "wide.json")}))
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

// BenchmarkDecodeImage decodes and validates a 3×224×224 FP32 request (150,528 elements).
func BenchmarkDecodeImage(b *testing.B) {
	vals := make([]float32, 3*224*224)
	for i := range vals {
		vals[i] = float32(i%255) / 255
	}
	in := Float32Tensor("input", []int64{1, 3, 224, 224}, vals)
	body, _ := json.Marshal(InferRequest{Inputs: []TensorJSON{in}})
	spec := TensorSpec{Name: "input", Datatype: "FP32", Shape: []int64{-1, 3, 224, 224}}
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeInferRequest(body, spec); err != nil {
			b.Fatal(err)
		}
	}
}
