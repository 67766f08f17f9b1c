// Package progress is the one place plan decides whether a long command shows progress:
// on a terminal a status line on the error stream, drawn when the work starts and rewritten
// in place (Task, NewStatus; the older Reporter); piped or redirected, at most one summary
// line per task when it ends (Reporter: nothing), so a CI log reads a line per task and never
// a carriage return. Whether a writer is a terminal is IsTerminal's answer alone; a test
// gives a Buffer, a fake terminal or pipe, to see either without a pty or a clock.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// Reporter writes transient status lines. The zero value and a nil *Reporter are silent.
type Reporter struct {
	mu    sync.Mutex
	w     io.Writer
	dirty bool
}

// Terminal is a writer that says itself whether it is a terminal: a test's fake terminal
// (or pipe) implements it, so a test sees what a user at a terminal sees without a pty.
type Terminal interface {
	IsTerminal() bool
}

// IsTerminal reports whether w is a terminal, the test every command uses: golang.org/x/term
// asks the kernel for the descriptor's terminal attributes, so a pipe, a file, /dev/null (a
// character device, but no terminal) or an in-memory buffer is not; a Terminal answers for
// itself.
func IsTerminal(w any) bool {
	if t, ok := w.(Terminal); ok {
		return t.IsTerminal()
	}
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// New returns a reporter writing to w when w is a terminal and PLAN_NO_PROGRESS is unset,
// and a silent one otherwise.
func New(w io.Writer) *Reporter {
	if os.Getenv("PLAN_NO_PROGRESS") != "" || !IsTerminal(w) {
		return &Reporter{}
	}
	return &Reporter{w: w}
}

// Active reports whether the reporter writes anything.
func (r *Reporter) Active() bool { return r != nil && r.w != nil }

// Printf replaces the status line with the formatted message.
func (r *Reporter) Printf(format string, a ...any) {
	if !r.Active() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, "\r\033[K"+format, a...)
	r.dirty = true
}

// Done clears the status line so the command's own output starts on a clean line.
func (r *Reporter) Done() {
	if !r.Active() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dirty {
		fmt.Fprint(r.w, "\r\033[K")
		r.dirty = false
	}
}
