package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
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

// TestCalibrateRuns: runs of one deployment at several loads, given as a directory, or one
// run, are fitted through plan profile's own path, for BF16 and FP8 (weights and KV cache)
// at TP 1 and 2: the scales come back within 2% of the truth's, the engine settings are the
// deployment's exactly, and the record and the report give each run's held-out error. The
// runs' decode steps span too little to tell the decode scale from a per-step overhead: the
// overhead is held at 0 (the truth's) and the report says so. Runs of short prompts do not
// constrain the prefill scale: it is held at 1 and said so, not pushed to a bound.
func TestCalibrateRuns(t *testing.T) {
	want := calibrate.Factors{PrefillScale: 1.3, DecodeScale: 0.8}
	type tcase struct {
		name         string
		tp, dtype    string
		rates        []float64
		n            int // requests a run
		prompt       [2]int
		held         string // the factor held at 1, "" for none
		wantRequests int
	}
	var cases []tcase
	for _, dtype := range []string{"", "fp8"} {
		for _, tp := range []string{"1", "2"} {
			for _, r := range []struct {
				rates []float64
				n     int
			}{{[]float64{8}, 300}, {[]float64{3, 6, 9}, 120}} {
				name := fmt.Sprintf("%s tp%s %d run(s)", map[string]string{"": "bf16", "fp8": "fp8"}[dtype], tp, len(r.rates))
				cases = append(cases, tcase{name, tp, dtype, r.rates, r.n, [2]int{64, 2048}, "", r.n * len(r.rates)})
			}
		}
	}
	cases = append(cases, tcase{"short prompts", "1", "", []float64{3, 6, 9}, 120, [2]int{8, 24}, "prefill_scale", 360})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := Args{LLM: "llama-3.1-8b", GPUs: []string{"H100"}, TP: c.tp, TPSet: true, KVCacheDtype: c.dtype, Quantization: c.dtype, Seed: 1}
			base, _, _, err := calibrationBase(args)
			if err != nil {
				t.Fatal(err)
			}
			truth, err := calibrate.Apply(base.LLMs[0], want)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			runs := filepath.Join(dir, "runs")
			if err := os.Mkdir(runs, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, rate := range c.rates {
				writeSynthRun(t, filepath.Join(runs, fmt.Sprintf("run-%d.json", i)), truth, c.n, rate, uint64(7+i), c.prompt, [2]int{8, 256})
			}
			args.Calibrate, args.Out = []string{runs}, filepath.Join(dir, "cal.json")
			io, stdout, _ := calibrateIO()
			if err := Run(context.Background(), args, io); err != nil {
				t.Fatal(err)
			}
			doc, err := formats.ReadProfileFor(args.Out, formats.UsePlan)
			if err != nil {
				t.Fatal(err)
			}
			got := doc.LLMs[0]
			rec := got.Calibration
			if rec.Requests != c.wantRequests || len(c.rates) > 1 && len(rec.Runs) != len(c.rates) {
				t.Fatalf("calibration %+v: want %d runs of %d requests", rec, len(c.rates), c.n)
			}
			ge, _ := json.Marshal(got.Engine)
			be, _ := json.Marshal(base.LLMs[0].Engine)
			if string(ge) != string(be) || got.GPUCount != base.LLMs[0].GPUCount || got.KVCapacityTokens != base.LLMs[0].KVCapacityTokens {
				t.Errorf("engine %s on %d GPUs, KV %d; want the deployment's %s on %d, KV %d", ge, got.GPUCount, got.KVCapacityTokens, be, base.LLMs[0].GPUCount, base.LLMs[0].KVCapacityTokens)
			}
			for i := range len(c.rates) {
				if w := fmt.Sprintf("run-%d.json held out (%d)", i, c.n/2); len(c.rates) > 1 && !strings.Contains(stdout.String(), w) {
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
			if rec.StepOverheadUs != 0 || !strings.Contains(stdout.String(), "warning: "+calibrate.WarnOverheadHeld+": step overhead held at 0") {
				t.Errorf("overhead %g µs: want it held at 0 and said so:\n%s", rec.StepOverheadUs, stdout.String())
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"prefill", rec.PrefillScale, want.PrefillScale}, {"decode", rec.DecodeScale, want.DecodeScale}} {
				if math.Abs(f.got/f.want-1) > 0.02 {
					t.Errorf("%s scale %g, want %g ± 2%%", f.name, f.got, f.want)
				}
			}
		})
	}
}

// TestCalibrateCaps: a run file past calibrate.MaxBytes is refused by name before it is
// read (a sparse file: no disk used), as are more runs than a joint fit takes and a
// directory with no run in it.
func TestCalibrateCaps(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(calibrate.MaxBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var many []string
	for i := range maxRuns + 1 {
		many = append(many, filepath.Join(dir, fmt.Sprintf("r%d.json", i)))
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		runs []string
		want string
	}{
		{"too large", []string{big}, "big.json: cannot read: 268435457 bytes: larger than 268435456 bytes"},
		{"too many runs", many, "--calibrate: 17 runs: a joint fit takes at most 16"},
		{"empty directory", []string{empty}, "a directory with no *.json run in it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			io, _, _ := calibrateIO()
			err := Run(context.Background(), Args{Calibrate: c.runs, LLM: "llama-3.1-8b", GPUs: []string{"H100"}, Out: filepath.Join(dir, "out.json")}, io)
			var ee *run.ExitError
			if !errors.As(err, &ee) || ee.Code != run.ExitUsage || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want exit 2 saying %q", err, c.want)
			}
		})
	}
}
