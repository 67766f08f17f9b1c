package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Task is the progress of one long piece of work with a known total: on a terminal a bar
// rewritten in place with done/total, the time so far and an estimate of the time left;
// piped or redirected, one summary line when it finishes (so a CI log gets a line per
// task, not a line per step); with quiet, nothing. Its methods are safe for concurrent use
// and a nil *Task does nothing.
type Task struct {
	mu           sync.Mutex
	w            io.Writer
	tty          bool
	label, unit  string
	start        time.Time
	now          func() time.Time
	done, total  int
	detail       string
	lastDraw     time.Time
	drawn, ended bool
}

// NewTask starts a task named label counting unit ("load points", "segments"); on a
// terminal it draws its first line at once, so a long command speaks within its first
// second. The terminal test is IsTerminal's; PLAN_NO_PROGRESS=1 treats a terminal as a pipe.
func NewTask(w io.Writer, quiet bool, label, unit string, total int) *Task {
	if quiet || w == nil {
		return nil
	}
	t := &Task{w: w, tty: IsTerminal(w) && os.Getenv("PLAN_NO_PROGRESS") == "", label: label, unit: unit, now: time.Now, total: total}
	t.start = t.now()
	t.draw(true)
	if f, ok := w.(*os.File); ok && f != nil && t.tty {
		go t.tick()
	}
	return t
}

// tick redraws a terminal's line every second until the task ends, so its time moves while
// a long phase reports nothing (a MILP before its first incumbent, one simulation).
func (t *Task) tick() {
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	for range tk.C {
		stop := true
		t.with(func() {
			if !t.ended {
				stop = false
				t.draw(false)
			}
		})
		if stop {
			return
		}
	}
}

// NewStatus starts a task without counted steps (a solve, a bench, one replay): on a
// terminal its line, "label: 1.2s: detail", is drawn at once and rewritten as Note changes
// the detail; piped, nothing until Finish writes the one summary line (or Clear, none).
func NewStatus(w io.Writer, quiet bool, label string) *Task {
	return NewTask(w, quiet, label, "", 0)
}

// Note replaces the detail of the task's line (a status's phase, a solver's incumbent).
func (t *Task) Note(detail string) {
	t.live(func() {
		t.detail = detail
		t.draw(false)
	})
}

// SetUnit names what the task counts once it is known (a task started before its first
// step, so that its line shows at once).
func (t *Task) SetUnit(unit string) {
	t.with(func() { t.unit = unit })
}

// Println writes a line of its own (a solver's incumbent line, kept in a CI log): on a
// terminal above the task's line, which is drawn again below it.
func (t *Task) Println(line string) {
	t.with(func() {
		if t.tty && t.drawn && !t.ended {
			fmt.Fprint(t.w, "\r\033[K"+line+"\n")
			t.draw(true)
			return
		}
		fmt.Fprintln(t.w, line)
	})
}

// Above returns a writer to w for output that shares the task's terminal (a table on
// stdout under a status line on stderr): each write first erases the task's line, and once a
// line is complete the task's line is drawn again below it, so no output starts on the
// status line's row. A nil task, or one not on a terminal, returns w.
func (t *Task) Above(w io.Writer) io.Writer {
	if t == nil || !t.tty {
		return w
	}
	return aboveWriter{t: t, w: w}
}

type aboveWriter struct {
	t *Task
	w io.Writer
}

func (a aboveWriter) Write(p []byte) (n int, err error) {
	a.t.with(func() {
		live := a.t.drawn && !a.t.ended
		if live {
			fmt.Fprint(a.t.w, "\r\033[K")
		}
		n, err = a.w.Write(p)
		if live && len(p) > 0 && p[len(p)-1] == '\n' {
			a.t.draw(true)
		} else if live {
			a.t.drawn = false // mid-line: drawn again by the next note
		}
	})
	return n, err
}

// Clear ends the task without a summary: on a terminal its line is erased (the command
// prints its own summary), piped nothing is written.
func (t *Task) Clear() {
	t.live(func() {
		t.ended = true
		if t.tty && t.drawn {
			fmt.Fprint(t.w, "\r\033[K")
		}
	})
}

// Step records done of total (total may grow) and a short detail of the last step.
func (t *Task) Step(done, total int, detail string) {
	t.live(func() {
		t.done, t.total, t.detail = done, max(total, done), detail
		t.draw(done == t.total)
	})
}

// Finish ends the task: on a terminal the bar's last state stays on its own line; piped, the
// one summary line is written. detail replaces the last step's when not empty.
func (t *Task) Finish(detail string) {
	t.live(func() {
		if detail != "" {
			t.detail = detail
		}
		t.ended = true
		if t.tty {
			t.draw(true)
			fmt.Fprintln(t.w)
			return
		}
		fmt.Fprintln(t.w, t.line(false))
	})
}

// with runs f holding the task's lock; a nil task does nothing (every method's guard).
func (t *Task) with(f func()) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
}

// live is with for a task that has not ended: an ended task's line is final.
func (t *Task) live(f func()) {
	t.with(func() {
		if !t.ended {
			f()
		}
	})
}

// draw rewrites the terminal line, at most ten times a second unless force.
func (t *Task) draw(force bool) {
	if !t.tty {
		return
	}
	now := t.now()
	if !force && t.drawn && now.Sub(t.lastDraw) < 100*time.Millisecond {
		return
	}
	t.lastDraw, t.drawn = now, true
	fmt.Fprint(t.w, "\r\033[K"+t.line(true))
}

// line is the task's state: "label [####......] 3/10 unit, 1.2s, about 2.8s left: detail",
// or "label: 1.2s: detail" while nothing is counted.
func (t *Task) line(bar bool) string {
	elapsed := t.now().Sub(t.start)
	var b strings.Builder
	b.WriteString(t.label)
	if t.total == 0 && t.done == 0 {
		// Nothing counted yet (a status, or a task before its first step): the time so far.
		fmt.Fprintf(&b, ": %s", round(elapsed))
		if t.detail != "" {
			b.WriteString(": " + t.detail)
		}
		return b.String()
	}
	if bar {
		const width = 20
		fill := 0
		if t.total > 0 {
			fill = t.done * width / t.total
		}
		fmt.Fprintf(&b, " [%s%s]", strings.Repeat("#", fill), strings.Repeat(".", width-fill))
	} else {
		b.WriteString(":")
	}
	fmt.Fprintf(&b, " %d/%d %s, %s", t.done, t.total, t.unit, round(elapsed))
	if left, ok := ETA(elapsed, t.done, t.total); ok && t.done < t.total {
		fmt.Fprintf(&b, ", about %s left", round(left))
	}
	if t.detail != "" {
		b.WriteString(": " + t.detail)
	}
	return b.String()
}

// ETA extrapolates the time left from the time so far at the rate steps finished: ok is
// false before the first step (nothing to extrapolate from). Never negative.
func ETA(elapsed time.Duration, done, total int) (time.Duration, bool) {
	if done <= 0 || total <= done {
		return 0, done > 0
	}
	return time.Duration(float64(elapsed) * float64(total-done) / float64(done)), true
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
