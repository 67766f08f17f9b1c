// Package benchapi is the contract of a `plan bench NAME` subcommand: Bench (what the system
// registry lists and the CLI turns into a subcommand), the Env a bench writes to, and
// ReportReader (how `plan validate` reads a bench.json back). It is a leaf, so the registry
// and `plan validate` name benches without importing bench, which sits under cmd alone
// (DESIGN.md: nothing imports bench); the benches implement it in bench/*bench, with the
// helpers they share in bench.
package benchapi

import (
	"context"
	"io"
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
	// Progress, when set, replaces a transient status line on a terminal (internal/base/progress
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
