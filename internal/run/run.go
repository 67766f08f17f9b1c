// Package run holds what every command's work shares once the flags are parsed: the streams
// and global output options a command writes through (IO), the exit-code contract of
// DESIGN.md (ExitError: 1 a failed check, 2 bad input or usage), the plain table layout, and
// the readers of a plan argument. Each command's work lives in a package under run/ with one
// Run(ctx, args, io) (GitHub CLI's shape: the cobra command in cmd/plan only fills the typed
// args and calls it), so what a command does can be called and tested without cobra.
package run

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	progressline "github.com/plan-dev/plan/internal/base/progress"
)

// Streams are the process's standard streams, injected so tests need no terminal.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// IO is what a command's work writes through: the streams and the global output options.
type IO struct {
	Streams
	// Output is "table" or "json" (--output).
	Output string
	// Quiet is --quiet: only results and errors.
	Quiet bool
	// Log is the logger at --log-level (never nil once the CLI has set up a command).
	Log *slog.Logger
}

// JSONOutput reports whether --output json was asked for.
func (o *IO) JSONOutput() bool { return o.Output == "json" }

// WriteJSON prints v as indented JSON.
func (o *IO) WriteJSON(v any) error {
	enc := json.NewEncoder(o.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Table prints rows under a header in a plain, CI-log-friendly table (WriteTable).
func (o *IO) Table(header []string, rows [][]string) { WriteTable(o.Out, header, rows) }

// Infof logs progress to stderr unless --quiet.
func (o *IO) Infof(format string, args ...any) {
	if o.Quiet {
		return
	}
	fmt.Fprintf(o.Err, format+"\n", args...)
}

// Logger is Log, or a logger that discards everything when none was set (a caller in code).
func (o *IO) Logger() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

// Bold is s in bold on a terminal stderr (ANSI escapes), plain elsewhere (logs keep no
// escapes).
func (o *IO) Bold(s string) string {
	if IsTerminal(o.Err) {
		return "\x1b[1m" + s + "\x1b[0m"
	}
	return s
}

// IsTerminal reports whether w is a character device (a terminal), where a progress bar may
// redraw itself with \r.
func IsTerminal(w any) bool { return progressline.IsTerminal(w) }
