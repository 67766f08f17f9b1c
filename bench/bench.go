// Package bench holds what the `plan bench NAME` subcommands share: reports (bench.json),
// usage errors, progress and selection helpers. Each system's paper evaluation lives in its
// own package under bench/ (ppipebench, pardbench, ...) and implements benchapi.Bench; the
// system registry (internal/registry/systems) lists them and the CLI turns each into a subcommand.
// Benches import planners and the simulator; nothing but cmd and the registry's per-system
// packages imports a bench, so planner and sim never import each other.
package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
)

// Reread is ReadReport (benchapi.ReportReader) for a bench.json of type T: strict decoding (formats.StrictUnmarshal),
// the kind checked against kind, then WriteReport's encoding.
func Reread[T any](name string, data []byte, kind string, kindOf func(*T) string) ([]byte, error) {
	var v T
	if err := formats.StrictUnmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if got := kindOf(&v); got != kind {
		return nil, fmt.Errorf("%s: kind: %q: must be %s", name, got, kind)
	}
	return reportBytes(v)
}

// Report is the bench.json of a bench whose report is its result, under the bench's kind.
type Report[R any] struct {
	Kind   string `json:"kind"`
	Result *R     `json:"result"`
}

// RereadResult is ReadReport for a bench whose bench.json is a Report[R] of kind.
func RereadResult[R any](name string, data []byte, kind string) ([]byte, error) {
	return Reread(name, data, kind, func(r *Report[R]) string { return r.Kind })
}

// Finish ends a bench's Run the one way they all do: report written to dir/bench.json when
// dir is set (WriteReport), then out as JSON when env asks for it, else print's tables.
func Finish(env benchapi.Env, dir string, report, out any, print func()) error {
	if dir != "" {
		if err := WriteReport(dir, report); err != nil {
			return err
		}
	}
	if env.JSON {
		return env.WriteJSON(out)
	}
	print()
	return nil
}

// Finished adapts a bench's progress callback (nil: none) to sim.Parallel's, called as each
// of total runs finishes: finished of total runs.
func Finished(progress func(done, total int), total int) func(i, finished int, err error) {
	return func(_, finished int, _ error) {
		if progress != nil {
			progress(finished, total)
		}
	}
}

// Override sets *dst, a bench's default, to a flag's value v when the flag gave one: v > 0
// (the flags of a run's sizes are 0 unless given).
func Override[T int | float64](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// TraceSeconds checks --seconds, a trace's length: 0 (the bench's default) or at least 60.
func TraceSeconds(seconds int) error {
	if seconds > 0 && seconds < 60 {
		return Usagef("--seconds %d: must be at least 60", seconds)
	}
	return nil
}

func reportBytes(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// ErrUsage marks bad bench arguments (exit 2).
var ErrUsage = errors.New("bad bench arguments")

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
func (e usageError) Unwrap() error { return ErrUsage }

// Usagef returns an error matching ErrUsage.
func Usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// PickNamed selects the items of all whose name is in want (case-insensitive; all when want
// is empty), refusing unknown names with the valid ones listed.
func PickNamed[T any](all []T, name func(T) string, want []string, flag string) ([]T, error) {
	if len(want) == 0 {
		return all, nil
	}
	var out []T
	for _, w := range want {
		found := false
		for _, x := range all {
			if strings.EqualFold(name(x), w) {
				out = append(out, x)
				found = true
			}
		}
		if !found {
			var names []string
			for _, x := range all {
				names = append(names, name(x))
			}
			return nil, Usagef("--%s %q: must be one of %s", flag, w, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Pct formats a fraction as a percentage with two decimals.
func Pct(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }

// Usage marks err as a usage error (it then matches ErrUsage too).
func Usage(err error) error { return usageError{err.Error()} }

// PrepareReport applies the one output rule to a --report directory before any work: it may
// exist (and must then be a writable directory) or be created in a directory that exists;
// nothing is created on the way. An empty dir means no report.
func PrepareReport(dir string) error {
	if dir == "" {
		return nil
	}
	if err := formats.CheckOutputDir(dir); err != nil {
		return Usagef("--report: %q: %v", dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return Usagef("--report: %q: %v", dir, err)
	}
	return nil
}

// WriteReport writes v, indented JSON, to DIR/bench.json atomically: the one report file of
// every bench's --report DIR (PrepareReport has checked DIR before the work).
func WriteReport(dir string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Usagef("--report %s: %v", dir, err)
	}
	data, err := reportBytes(v)
	if err != nil {
		return err
	}
	return formats.WriteAtomic(filepath.Join(dir, "bench.json"), data)
}
