package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/serve/kserve"
)

// BenchmarkServeHTTP measures the server's cost per request without the network: handler
// (decode, validate), driver (engine, timers, emulated 2 ms hop), answer encoding. Requests
// run concurrently (the 2 ms of emulated work overlap), so ns/op is the throughput cost, and
// that is bounded by the plan's capacity (wide.json: 32 L4 × 500/s = 62.5 µs per request).
// cpu-µs/req is the server's CPU per request, which bounds its throughput: the process's CPU time
// (user + system) per request. It includes the benchmark's own side (building each
// httptest request and recorder), which the "floor" case measures alone behind a trivial
// handler that reads the body and writes a small JSON answer: plan's own CPU per request is
// the difference.
func BenchmarkServeHTTP(b *testing.B) {
	body := inferBody(1, 2, 3, 4)
	run := func(b *testing.B, h http.Handler) {
		b.SetParallelism(64)
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := processCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req := httptest.NewRequest(http.MethodPost, "/v2/models/w/infer", strings.NewReader(body))
				w := &deadlineRecorder{httptest.NewRecorder()}
				h.ServeHTTP(w, req)
				if w.Code != 200 && w.Code != 503 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
		b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/req")
	}
	for _, scale := range []int{1, 10} {
		// ×10: 320 GPUs, 160,000 req/s of capacity, more than two cores can offer, so the
		// CPU per request is measured saturated rather than between idle spins.
		b.Run(fmt.Sprintf("plan/x%d", scale), func(b *testing.B) {
			p := loadPlan(b, "wide.json")
			p.Cluster.GPUs[0].Count *= scale
			m := &ppipesec.PlanOf(p).Models[0]
			m.ThroughputRPS *= float64(scale)
			m.Pipelines[0].ThroughputRPS *= float64(scale)
			m.Pipelines[0].Partitions[0].Count *= scale
			m.Pipelines[0].Partitions[0].ThroughputRPS *= float64(scale)
			s, err := New(withSystems(Options{Plan: p}))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			run(b, s)
		})
	}
	b.Run("floor", func(b *testing.B) {
		run(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"model_name":"w","outputs":[]}`)
		}))
	})
}

// deadlineRecorder is a recorder whose connection takes read and write deadlines, as a real
// one does: without them http.ResponseController builds an error for every call, a cost
// the server does not have on a socket.
type deadlineRecorder struct{ *httptest.ResponseRecorder }

func (deadlineRecorder) SetReadDeadline(time.Time) error  { return nil }
func (deadlineRecorder) SetWriteDeadline(time.Time) error { return nil }

// processCPU is the process's user + system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeImage decodes and validates a 3×224×224 FP32 request (150,528 elements).
func BenchmarkDecodeImage(b *testing.B) {
	vals := make([]float32, 3*224*224)
	for i := range vals {
		vals[i] = float32(i%255) / 255
	}
	in := kserve.Float32Tensor("input", []int64{1, 3, 224, 224}, vals)
	body, _ := json.Marshal(kserve.InferRequest{Inputs: []kserve.TensorJSON{in}})
	spec := kserve.TensorSpec{Name: "input", Datatype: "FP32", Shape: []int64{-1, 3, 224, 224}}
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := kserve.DecodeInferRequest(body, spec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeSmall decodes and validates the typical small request (four FP32 values).
func BenchmarkDecodeSmall(b *testing.B) {
	body := []byte(inferBody(1, 2, 3, 4))
	spec := kserve.TensorSpec{Name: "input", Datatype: "FP32", Shape: []int64{-1, 4}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kserve.DecodeInferRequest(body, spec); err != nil {
			b.Fatal(err)
		}
	}
}
