package qlm

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/base/simbench"
	"github.com/plan-dev/plan/sim"
)

// azureConv reads the Azure LLM inference trace 2023, conversation service (CC-BY 4.0; cite
// Patel et al., Splitwise, ISCA 2024), as embedded for plan bench qlm
// (bench/qlmbench/data): arrival times from the first request, prompt and output tokens.
func azureConv(tb testing.TB) (at []dataplane.Time, attrs []dataplane.Attrs) {
	tb.Helper()
	gz, err := os.ReadFile(filepath.Join("..", "..", "bench", "qlmbench", "data", "azure-llm-2023-conv.csv.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		tb.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		tb.Fatal(err)
	}
	var t0 time.Time
	for i, r := range recs[1:] {
		t, err := time.Parse("2006-01-02 15:04:05.9999999", r[0])
		if err != nil {
			tb.Fatal(err)
		}
		if i == 0 {
			t0 = t
		}
		in, err1 := strconv.Atoi(r[1])
		out, err2 := strconv.Atoi(r[2])
		if err1 != nil || err2 != nil {
			tb.Fatalf("row %d: %v", i+2, r)
		}
		at = append(at, dataplane.Time(t.Sub(t0)/time.Microsecond))
		attrs = append(attrs, dataplane.Attrs{InTokens: int32(max(in, 1)), OutTokens: int32(max(out, 1))})
	}
	return at, attrs
}

// BenchmarkAzureConvHour replays the hour of the Azure conversation trace (19,366 requests)
// through one instance of the bundled Mistral-7B A100 profile under vLLM-FCFS: the engine
// model's cost (target: ≤ 5 CPU seconds, so an hour of trace replays in seconds). It reports CPU seconds per replay and the
// mean TTFT and E2E the model predicts.
func BenchmarkAzureConvHour(b *testing.B) {
	at, attrs := azureConv(b)
	pr, err := formats.ReadInto[*formats.Profile](filepath.Join("..", "..", "testdata", "qlm", "profile.json"), nil)
	if err != nil {
		b.Fatal(err)
	}
	cls := []llmspec.LLMClass{{Name: "conv", Model: "mistral-7b", SLO: formats.Duration(time.Hour), RateRPS: 5,
		InputTokens: llmspec.TokenProfile{Mean: 1000, Std: 500, Max: 20000}, OutputTokens: llmspec.TokenProfile{Mean: 200, Std: 100, Max: 4000}}}
	dep, err := Build(cls, Setup{Profiles: pr.LLMs, Instances: []Instance{{Name: "i0", GPU: "A100", Model: "mistral-7b"}}})
	if err != nil {
		b.Fatal(err)
	}
	var ttft, e2e float64
	n := 0
	cpu := time.Duration(0)
	for i := 0; i < b.N; i++ {
		runtime.GC()
		c0 := simbench.CPUTime()
		p, err := Registry().New(dep, dataplane.Config{Policy: PolicyFCFS}, PolicyQLM)
		if err != nil {
			b.Fatal(err)
		}
		ttft, e2e, n = 0, 0, 0
		s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: at}}, sim.Options{Duration: at[len(at)-1] + 1, NoLatencies: true,
			Attrs: func(_ dataplane.AppID, k int64) dataplane.Attrs { return attrs[k] },
			OnFinish: func(now dataplane.Time, r *dataplane.Request) {
				if r.FirstToken != dataplane.Never {
					ttft += float64(r.FirstToken - r.Arrival)
					e2e += float64(now - r.Arrival)
					n++
				}
			}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Run(); err != nil {
			b.Fatal(err)
		}
		cpu += simbench.CPUTime() - c0
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(ttft/float64(max(n, 1))/1e3, "ttft-ms")
	b.ReportMetric(e2e/float64(max(n, 1))/1e3, "e2e-ms")
	b.ReportMetric(float64(n), "served")
}
