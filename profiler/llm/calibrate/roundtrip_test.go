package calibrate_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	runprofile "github.com/plan-dev/plan/internal/run/profile"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/profiler/llm/calibrate"
)

// synthRun replays n Poisson arrivals at rate (requests/s, random prompt and output lengths,
// fixed seed) through one engine of truth and writes what `vllm bench serve --save-result
// --save-detailed` would record of them: each request's lengths, TTFT, inter-token gaps and
// send time. withStarts false leaves start_times out (vLLM's files before they existed).
func synthRun(t testing.TB, truth formats.LLMProfile, n int, rate float64, withStarts bool) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	reqs := make([]calibrate.Request, n)
	var at float64
	for i := range reqs {
		at += rng.ExpFloat64() / rate
		reqs[i] = calibrate.Request{Index: i, Arrival: at, PromptTokens: 64 + rng.IntN(1985), OutputTokens: 8 + rng.IntN(249)}
	}
	tim, err := runprofile.Simulator(systems.Default(), "synthetic")(truth, reqs)
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct", "request_rate": rate, "burstiness": 1.0,
		"max_concurrency": nil, "completed": n,
	}
	in, out, ttfts, starts := make([]int, n), make([]int, n), make([]float64, n), make([]float64, n)
	itls, errs := make([][]float64, n), make([]string, n)
	for i, r := range reqs {
		if !tim[i].Done {
			t.Fatalf("request %d: the engine did not finish it", i)
		}
		in[i], out[i], ttfts[i], starts[i] = r.PromptTokens, r.OutputTokens, tim[i].TTFT, 1000+r.Arrival
		gap := (tim[i].E2E - tim[i].TTFT) / float64(r.OutputTokens-1)
		itls[i] = make([]float64, r.OutputTokens-1)
		for j := range itls[i] {
			itls[i][j] = gap
		}
	}
	doc["input_lens"], doc["output_lens"], doc["ttfts"], doc["itls"], doc["errors"] = in, out, ttfts, itls, errs
	if withStarts {
		doc["start_times"] = starts
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRoundTrip: a run measured on an engine whose prefill is 1.3× and decode 0.8× the
// analytic profile's is fitted back from the analytic profile — the scales within 2% of the
// truth and the held-out requests' errors falling — with the file's send times, and with
// arrivals regenerated from request_rate when it has none (then within 10%: the draws differ
// from the run's, and so does every request's queueing). The run's decode steps span too
// little to tell the decode scale from a per-step overhead: the overhead is held at 0, and
// the fit says so (overhead-held).
func TestRoundTrip(t *testing.T) {
	base, err := llm.EstimateOn("llama-3.1-8b", "H100", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := calibrate.Factors{PrefillScale: 1.3, DecodeScale: 0.8}
	truth, err := calibrate.Apply(*base, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		withStarts bool
		// tol bounds the factors' relative error; ttftFalls asks the held-out TTFT error to
		// fall too (regenerated arrivals queue requests differently from the run, so a
		// request's TTFT is not the measured one's even with the true curves).
		tol       float64
		ttftFalls bool
	}{
		{"start_times", true, 0.02, true},
		{"regenerated arrivals", false, 0.10, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := synthRun(t, truth, 600, 6, c.withStarts)
			name := filepath.Join(t.TempDir(), "bench.json")
			b, err := calibrate.ReadBenchResult(name, data, calibrate.ReadOptions{MaxModelLen: 131072, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			res, err := calibrate.Fit(*base, b, runprofile.Simulator(systems.Default(), name), calibrate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rec := res.Profile.Calibration
			t.Logf("factors %v after %d replays; fit %+v; held out %+v", res.Factors, res.Replays, rec.Fit, rec.HeldOut)
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"prefill scale", res.Factors.PrefillScale, want.PrefillScale}, {"decode scale", res.Factors.DecodeScale, want.DecodeScale}} {
				if math.Abs(f.got/f.want-1) > c.tol {
					t.Errorf("%s %.4f, want %.2f ± %.0f%%", f.name, f.got, f.want, 100*c.tol)
				}
			}
			if res.Factors.StepOverheadUs != 0 || !hasWarning(res.Warnings, calibrate.WarnOverheadHeld) {
				t.Errorf("overhead %g µs, warnings %v: want it held at 0 and said so (%s)", res.Factors.StepOverheadUs, res.Warnings, calibrate.WarnOverheadHeld)
			}
			h := rec.HeldOut
			if !((h.After.TTFTPct < h.Before.TTFTPct || !c.ttftFalls) && h.After.ITLPct < h.Before.ITLPct && h.After.E2EPct < h.Before.E2EPct) {
				t.Errorf("held-out errors did not fall: before %+v, after %+v", h.Before, h.After)
			}
			if errs := (&formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile},
				Metadata: formats.Metadata{Name: "t"}, LLMs: []formats.LLMProfile{res.Profile}}).Validate(); len(errs) > 0 {
				t.Errorf("calibrated profile: %v", errs)
			}
		})
	}
}

func hasWarning(ws []calibrate.Warning, name string) bool {
	for _, w := range ws {
		if w.Name == name {
			return true
		}
	}
	return false
}

// BenchmarkCalibrate10k: reading and fitting a run of 10,000 requests (the target: at most
// 10 s on two cores; go test -bench Calibrate10k -benchtime 1x -cpu 2). It reports the
// file's size and the replays.
func BenchmarkCalibrate10k(b *testing.B) {
	base, err := llm.EstimateOn("llama-3.1-8b", "H100", 1)
	if err != nil {
		b.Fatal(err)
	}
	truth, err := calibrate.Apply(*base, calibrate.Factors{PrefillScale: 1.3, DecodeScale: 0.8})
	if err != nil {
		b.Fatal(err)
	}
	data := synthRun(b, truth, 10000, 20, true)
	// The heap the read and the fit add, sampled every 5 ms (the file itself excluded).
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
	}()
	b.ResetTimer()
	for range b.N {
		run, err := calibrate.ReadBenchResult("bench.json", data, calibrate.ReadOptions{MaxModelLen: 131072, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		res, err := calibrate.Fit(*base, run, runprofile.Simulator(systems.Default(), "bench.json"), calibrate.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Replays), "replays")
	}
	b.StopTimer()
	close(done)
	<-sampled
	b.ReportMetric(float64(len(data))/1e6, "file-MB")
	b.ReportMetric(float64(peak-heap0)/1e6, "peak-heap-MB")
}
