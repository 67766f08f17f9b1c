// Package bench is the contract of `plan bench NAME`: each system's paper evaluation lives in
// its own package under bench/ (ppipebench, pardbench, ...) and implements Bench; the system
// registry (internal/systems) lists them and the CLI turns each into a subcommand. Benches
// import planners and the simulator; nothing below them imports a bench, so planner and sim
// never import each other.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/spf13/pflag"
)

// Env is what a bench writes to: the CLI's output streams and renderers.
type Env struct {
	Out, Err io.Writer
	// JSON asks for machine output (WriteJSON) instead of tables.
	JSON      bool
	Infof     func(format string, a ...any)
	Table     func(header []string, rows [][]string)
	WriteJSON func(v any) error
	// Progress, when set, replaces a transient status line on a terminal (internal/progress
	// decides; it is nil or silent when the output is piped). Use Progressf.
	Progress func(format string, a ...any)
	// Sections are the registered systems' sections (the system registry's): what a bench
	// reads plans and workloads with, and what a server it starts reads plans with. Benches
	// sit below the registry, so the CLI hands them down.
	Sections *formats.SectionSet
}

// Progressf reports progress of a long bench; a no-op without a terminal.
func (e Env) Progressf(format string, a ...any) {
	if e.Progress != nil {
		e.Progress(format, a...)
	}
}

// Bench is one `plan bench NAME` subcommand. One value serves one run: Flags binds the
// bench's flags to it, Run reads them.
type Bench interface {
	// Help is the subcommand's name and help.
	Help() Help
	Flags(fs *pflag.FlagSet)
	Run(ctx context.Context, env Env) error
}

// Help is a bench's name (`plan bench NAME`) and its subcommand's help texts.
type Help struct {
	Name, Short, Long, Example string
}

// ReportReader is a Bench whose --report DIR/bench.json can be read back: `plan validate`
// recognises the file by its kind and checks it strictly, and the round trip of every file
// plan writes (write, validate, read, write again: byte-identical) covers it.
type ReportReader interface {
	// ReportKind is the "kind" bench.json carries ("PPipeBench").
	ReportKind() string
	// ReadReport decodes bench.json strictly (unknown fields, wrong types and trailing data
	// are errors) into the type the bench wrote and returns it encoded as WriteReport does.
	ReadReport(name string, data []byte) ([]byte, error)
}

// Reread is ReadReport for a bench.json of type T: strict decoding (formats.StrictUnmarshal),
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
func Finish(env Env, dir string, report, out any, print func()) error {
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

// RunProgress is the progress callback of a bench that counts its runs: "[elapsed] done/total
// runs" at most every 5 s, and at the last run; start is when the bench started.
func (e Env) RunProgress(start time.Time) func(done, total int) {
	last := time.Now()
	return func(done, total int) {
		if time.Since(last) > 5*time.Second || done == total {
			last = time.Now()
			e.Progressf("[%s] %d/%d runs", time.Since(start).Round(time.Second), done, total)
		}
	}
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

// DashNote prints, under a table, why some of its cells are "-", when any is (a cell or one
// part of a cell "a/b/c"): a dash without its reason reads as zero, or as a bug. why maps a
// column's header to the reason its dashes have; the columns are named in header order, on
// one line that starts with "-".
func DashNote(w io.Writer, header []string, rows [][]string, why map[string]string) {
	var notes []string
	for j, h := range header {
		reason, ok := why[h]
		if !ok {
			continue
		}
		for _, r := range rows {
			if j < len(r) && hasDash(r[j]) {
				notes = append(notes, h+": "+reason)
				break
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "-  %s\n", strings.Join(notes, "; "))
	}
}

func hasDash(cell string) bool {
	for _, part := range strings.Split(cell, "/") {
		if part == "-" {
			return true
		}
	}
	return false
}
