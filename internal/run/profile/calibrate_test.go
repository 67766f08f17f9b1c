package profile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
)

// benchFixture is calibrate's plan load result: four requests with their send times.
var benchFixture = filepath.Join("..", "..", "..", "profiler", "llm", "calibrate", "testdata", "plan-load.json")

func calibrateIO() (*run.IO, *strings.Builder, *strings.Builder) {
	var out, errb strings.Builder
	return &run.IO{Streams: run.Streams{Out: &out, Err: &errb}, Output: "table"}, &out, &errb
}

// TestCalibrate: --calibrate writes the profile it names (an --llm estimate, then that file's
// entry again through --profile and --model) with corrected curves and a calibration block,
// and reports the factors and the errors of both halves; -o - writes the profile to stdout
// and the report to stderr.
func TestCalibrate(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "cal.json")
	for _, c := range []struct {
		name string
		args Args
		// where the report goes
		toErr bool
	}{
		{"--llm", Args{Calibrate: []string{benchFixture}, LLM: "llama-3.1-8b", GPUs: []string{"H100"}, TP: "1", TPSet: true, Seed: 1, Out: first}, false},
		{"--profile", Args{Calibrate: []string{benchFixture}, Profile: first, ProfileModel: "llama-3.1-8b@1xH100", Seed: 1, Out: filepath.Join(dir, "again.json")}, false},
		{"-o -", Args{Calibrate: []string{benchFixture}, Profile: first, Seed: 1, Out: "-"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			io, out, errb := calibrateIO()
			if err := Run(context.Background(), c.args, io); err != nil {
				t.Fatal(err)
			}
			report, doc := out.String(), (*formats.Profile)(nil)
			if c.toErr {
				report = errb.String()
				p, err := formats.DecodeProfileFor("stdout", []byte(out.String()), formats.UsePlan)
				if err != nil {
					t.Fatal(err)
				}
				doc = p
			} else {
				p, err := formats.ReadProfileFor(c.args.Out, formats.UsePlan)
				if err != nil {
					t.Fatal(err)
				}
				doc = p
			}
			for _, w := range []string{"factors: prefill ×", "fit (2)", "held out (2)", "arrivals: start_times"} {
				if !strings.Contains(report, w) {
					t.Errorf("report does not say %q:\n%s", w, report)
				}
			}
			cal := doc.LLMs[0].Calibration
			if cal == nil || cal.Source != "plan-load.json" || cal.Requests != 4 || cal.FitRequests != 2 {
				t.Fatalf("calibration %+v", cal)
			}
		})
	}
}

// TestCalibrateRefuses: --calibrate's usage errors and bad runs are exit-2 errors naming the
// flag, or the file, field and value.
func TestCalibrateRefuses(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	for _, c := range []struct {
		name string
		args Args
		want string
	}{
		{"no profile", Args{Calibrate: []string{benchFixture}, Out: out}, "needs the profile to calibrate"},
		{"no gpu", Args{Calibrate: []string{benchFixture}, LLM: "llama-3.1-8b", Out: out}, "needs --gpu GPU"},
		{"two gpus", Args{Calibrate: []string{benchFixture}, LLM: "llama-3.1-8b", GPUs: []string{"H100", "A100"}, Out: out}, "--gpu: H100,A100"},
		{"two models", Args{Calibrate: []string{benchFixture}, LLM: "llama-3.1-8b,mistral-7b", GPUs: []string{"H100"}, Out: out}, "name one model"},
		{"two degrees", Args{Calibrate: []string{benchFixture}, LLM: "llama-3.1-8b", GPUs: []string{"H100"}, TP: "1,2", TPSet: true, Out: out}, "--tp: \"1,2\""},
		{"both", Args{Calibrate: []string{benchFixture}, LLM: "llama-3.1-8b", Profile: "p.json", Out: out}, "not both"},
		{"--model alone", Args{ProfileModel: "m", Out: out}, "--profile and --model: only with --calibrate"},
		{"--zoo", Args{Calibrate: []string{benchFixture}, Zoo: "resnet50", LLM: "llama-3.1-8b", GPUs: []string{"H100"}, Out: out}, "--zoo: not with --calibrate"},
		{"missing run", Args{Calibrate: []string{filepath.Join(dir, "none.json")}, LLM: "llama-3.1-8b", GPUs: []string{"H100"}, Out: out}, "none.json"},
		{"past the context", Args{Calibrate: []string{benchFixture}, Profile: writeProfileWithLen(t, dir, 500), Out: out}, "input_lens[2] + output_lens[2]: 514: more tokens than the engine's max_model_len 500 (engine.max_model_len of "},
	} {
		t.Run(c.name, func(t *testing.T) {
			io, _, _ := calibrateIO()
			err := Run(context.Background(), c.args, io)
			var ee *run.ExitError
			if !errors.As(err, &ee) || ee.Code != run.ExitUsage {
				t.Fatalf("error %v, want a usage error (exit 2)", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// writeProfileWithLen writes the analytic llama-3.1-8b profile on an H100 with the engine's
// max_model_len set to maxLen and returns its path.
func writeProfileWithLen(t *testing.T, dir string, maxLen int) string {
	t.Helper()
	doc, li, _, err := calibrationBase(Args{LLM: "llama-3.1-8b", GPUs: []string{"H100"}})
	if err != nil {
		t.Fatal(err)
	}
	doc.LLMs[li].Engine.MaxModelLen = maxLen
	path := filepath.Join(dir, "short.json")
	if err := writeProfile(path, doc, formats.UsePlan); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCalibrateObservesCancel: a calibration whose context is cancelled (SIGINT, SIGTERM)
// stops before its next replay and writes nothing: the fit checks the context between
// replays, so the work after a cancellation is at most one replay.
func TestCalibrateObservesCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "cal.json")
	io, _, _ := calibrateIO()
	err := Run(ctx, Args{Calibrate: []string{benchFixture}, LLM: "llama-3.1-8b", GPUs: []string{"H100"}, TP: "1", TPSet: true, Seed: 1, Out: out}, io)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while reading") {
		t.Fatalf("err %v, want the read interrupted", err)
	}
	if _, statErr := os.Stat(out); statErr == nil {
		t.Errorf("%s written by a cancelled calibration", out)
	}
	// Cancelled during the fit: the next replay does not run.
	_, err = SimulatorContext(ctx, nil, "run.json")(formats.LLMProfile{}, nil)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted after 0 replays") {
		t.Fatalf("err %v, want an interruption before the first replay", err)
	}
}

// vllmFixture is calibrate's vLLM result: five successful requests (two fitted, three held
// out), one failed, no start_times.
var vllmFixture = filepath.Join("..", "..", "..", "profiler", "llm", "calibrate", "testdata", "vllm-detailed.json")

// TestCalibrateWarnsAndStrict: a fit on five requests whose held-out ITL error rises is
// written with named warnings; with --strict it is an exit-2 error naming them and nothing is
// written; --strict without --calibrate is refused by name.
func TestCalibrateWarnsAndStrict(t *testing.T) {
	dir := t.TempDir()
	for _, strict := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("cal-%v.json", strict))
		io, stdout, errb := calibrateIO()
		err := Run(context.Background(), Args{Calibrate: []string{vllmFixture}, LLM: "llama-3.1-8b", GPUs: []string{"H100"}, TP: "1", TPSet: true, Seed: 1, Out: out, Strict: strict}, io)
		report := stdout.String() + errb.String()
		for _, w := range []string{"warning: few-requests: vllm-detailed.json: 5 successful requests", "at least 64", "warning: held-out-worse: vllm-detailed.json: the held-out requests' median ITL error rose", "held: decode scale held at 1: 2 fitted requests"} {
			if !strings.Contains(report, w) {
				t.Errorf("strict %v: report does not say %q:\n%s", strict, w, report)
			}
		}
		_, statErr := os.Stat(out)
		var ee *run.ExitError
		switch {
		case !strict && (err != nil || statErr != nil):
			t.Errorf("not strict: err %v, file %v", err, statErr)
		case strict && (!errors.As(err, &ee) || ee.Code != run.ExitUsage || !strings.Contains(err.Error(), "--strict: the fit has 3 warning(s) (near-bound, few-requests, held-out-worse): nothing written")):
			t.Errorf("strict: err %v, want exit 2 naming the warnings", err)
		case strict && statErr == nil:
			t.Errorf("strict: %s written", out)
		}
	}
	io, _, _ := calibrateIO()
	if err := Run(context.Background(), Args{LLM: "llama-3.1-8b", Strict: true, Out: filepath.Join(dir, "x.json")}, io); err == nil || !strings.Contains(err.Error(), "--strict: only with --calibrate") {
		t.Errorf("--strict alone: %v", err)
	}
}

func TestOneDecimal(t *testing.T) {
	for v, want := range map[float64]string{math.Copysign(0, -1): "0.0", -0.04: "0.0", -857.25: "-857.2", 12.34: "12.3"} {
		if got := oneDecimal(v); got != want {
			t.Errorf("oneDecimal(%g) = %q, want %q", v, got, want)
		}
	}
}
