package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/profiler/llm/calibrate"
)

// maxRuns bounds the runs of one joint fit (each is replayed for every candidate).
const maxRuns = 16

// runFiles are the measured runs --calibrate names: each a file, or a directory whose *.json
// files (sorted by name) are each a run; the same file named twice is one run.
func runFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
			continue
		}
		m, err := filepath.Glob(filepath.Join(a, "*.json"))
		if err != nil {
			return nil, run.UsageErrorf("--calibrate %s: %v", a, err)
		}
		if len(m) == 0 {
			return nil, run.UsageErrorf("--calibrate %s: a directory with no *.json run in it", a)
		}
		slices.Sort(m)
		for _, f := range m {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	if len(out) > maxRuns {
		return nil, run.UsageErrorf("--calibrate: %d runs: a joint fit takes at most %d (each is replayed for every candidate)", len(out), maxRuns)
	}
	return out, nil
}

// readRuns reads every run --calibrate names (calibrate.ReadBenchResult, checked against the
// engine's max_model_len), warning of a run of another model.
func readRuns(ctx context.Context, a Args, prof *formats.LLMProfile, src string, io *run.IO) ([]*calibrate.Bench, error) {
	files, err := runFiles(a.Calibrate)
	if err != nil {
		return nil, err
	}
	limit, from := contextLimit(prof, src)
	var runs []*calibrate.Bench
	for i, f := range files {
		data, err := formats.ReadText(f, calibrate.MaxBytes)
		if err != nil {
			if errors.Is(err, formats.ErrTooLarge) {
				return nil, run.UsageErrorf("--calibrate: %v: a run file holds at most %d requests and %d bytes (calibrate on a sample of the run)", err, calibrate.MaxRequests, calibrate.MaxBytes)
			}
			return nil, run.UsageErrorf("--calibrate: %v", err)
		}
		// Each run's arrivals regenerated (no start_times) are drawn from their own seed.
		b, err := calibrate.ReadBenchResult(f, data, calibrate.ReadOptions{MaxModelLen: limit, LimitFrom: from, Seed: uint64(a.Seed) + uint64(i), Context: ctx})
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, run.UsageError(err)
		}
		if !sameModel(b.Model, prof) {
			fmt.Fprintf(io.Err, "warning: %s: model_id %q is not the profile's model %s: calibrating anyway\n", f, b.Model, prof.Model)
		}
		runs = append(runs, b)
	}
	if len(runs) > 1 {
		var names []string
		for _, b := range runs {
			names = append(names, filepath.Base(b.Name))
		}
		fmt.Fprintf(io.Err, "profile --calibrate: %d runs (%s): one joint fit, each run's first half fitted and its second half held out\n", len(runs), strings.Join(names, ", "))
	}
	return runs, nil
}
