package profile

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/systems"
	"github.com/plan-dev/plan/profiler/llm/calibrate"
)

// writeSynthRun replays n Poisson arrivals at rate through one engine of truth (seeded
// prompt and output lengths in the ranges given) and writes what vllm bench serve
// --save-result --save-detailed records of them to path.
func writeSynthRun(t *testing.T, path string, truth formats.LLMProfile, n int, rate float64, seed uint64, prompt, output [2]int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	reqs := make([]calibrate.Request, n)
	var at float64
	for i := range reqs {
		at += rng.ExpFloat64() / rate
		reqs[i] = calibrate.Request{Index: i, Arrival: at, PromptTokens: prompt[0] + rng.IntN(prompt[1]-prompt[0]+1), OutputTokens: output[0] + rng.IntN(output[1]-output[0]+1)}
	}
	tim, err := Simulator(systems.Default(), "synthetic")(truth, reqs)
	if err != nil {
		t.Fatal(err)
	}
	in, out, ttfts, starts := make([]int, n), make([]int, n), make([]float64, n), make([]float64, n)
	itls, errs := make([][]float64, n), make([]string, n)
	for i, r := range reqs {
		if !tim[i].Done {
			t.Fatalf("request %d: the engine did not finish it", i)
		}
		in[i], out[i], ttfts[i], starts[i] = r.PromptTokens, r.OutputTokens, tim[i].TTFT, 500+r.Arrival
		itls[i] = make([]float64, r.OutputTokens-1)
		for j := range itls[i] {
			itls[i][j] = (tim[i].E2E - tim[i].TTFT) / float64(r.OutputTokens-1)
		}
	}
	// std_ttft_ms, a summary key the fit does not read, as Python's json writes a NaN.
	data, err := json.Marshal(map[string]any{"model_id": "meta-llama/Llama-3.1-8B-Instruct", "request_rate": rate, "burstiness": 1.0,
		"completed": n, "input_lens": in, "output_lens": out, "ttfts": ttfts, "itls": itls, "errors": errs, "start_times": starts, "std_ttft_ms": "__NaN__"})
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), `"__NaN__"`, "NaN", 1))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCalibrateRuns: three runs of one deployment at three loads, given as a directory, are
// fitted jointly through plan profile's own path: the factors come back near the truth's,
// and the record and the report give each run's held-out error. Runs of short prompts do not
// constrain the prefill scale: it is held at 1 and said so, not pushed to a bound.
func TestCalibrateRuns(t *testing.T) {
	base, _, _, err := calibrationBase(Args{LLM: "llama-3.1-8b", GPUs: []string{"H100"}, TP: "1"})
	if err != nil {
		t.Fatal(err)
	}
	want := calibrate.Factors{PrefillScale: 1.3, DecodeScale: 0.8}
	truth, err := calibrate.Apply(base.LLMs[0], want)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		prompt [2]int
		// held: the factor held at 1 (prefill_scale), "" for none
		held string
	}{
		{"three loads", [2]int{64, 2048}, ""},
		{"short prompts", [2]int{8, 24}, "prefill_scale"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			runs := filepath.Join(dir, "runs")
			if err := os.Mkdir(runs, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, rate := range []float64{3, 6, 9} {
				writeSynthRun(t, filepath.Join(runs, fmt.Sprintf("run-%d.json", i)), truth, 120, rate, uint64(7+i), c.prompt, [2]int{8, 256})
			}
			out := filepath.Join(dir, "cal.json")
			io, stdout, _ := calibrateIO()
			if err := Run(context.Background(), Args{Calibrate: []string{runs}, LLM: "llama-3.1-8b", GPUs: []string{"H100"}, TP: "1", TPSet: true, Seed: 1, Out: out}, io); err != nil {
				t.Fatal(err)
			}
			doc, err := formats.ReadProfileFor(out, formats.UsePlan)
			if err != nil {
				t.Fatal(err)
			}
			rec := doc.LLMs[0].Calibration
			if len(rec.Runs) != 3 || rec.Requests != 360 || rec.Source != "run-0.json, run-1.json, run-2.json" {
				t.Fatalf("calibration %+v: want three runs of 120 requests", rec)
			}
			for i := range 3 {
				if w := fmt.Sprintf("run-%d.json held out (60)", i); !strings.Contains(stdout.String(), w) {
					t.Errorf("report does not say %q:\n%s", w, stdout.String())
				}
			}
			t.Logf("factors ×%g ×%g %+g µs; held %v", rec.PrefillScale, rec.DecodeScale, rec.StepOverheadUs, rec.HeldAtOne)
			if c.held != "" {
				if len(rec.HeldAtOne) != 1 || rec.HeldAtOne[0] != c.held || rec.PrefillScale != 1 || !strings.Contains(stdout.String(), "held: prefill scale held at 1") {
					t.Errorf("held %v, prefill ×%g: want %s held at 1 and said so:\n%s", rec.HeldAtOne, rec.PrefillScale, c.held, stdout.String())
				}
				return
			}
			if len(rec.HeldAtOne) != 0 {
				t.Errorf("held %v: the runs constrain every factor", rec.HeldAtOne)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"prefill", rec.PrefillScale, want.PrefillScale}, {"decode", rec.DecodeScale, want.DecodeScale}} {
				if math.Abs(f.got/f.want-1) > 0.10 {
					t.Errorf("%s scale %g, want %g ± 10%%", f.name, f.got, f.want)
				}
			}
		})
	}
}
