package progress

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestTaskPiped: piped, a task writes exactly one summary line when it finishes, none while
// it runs; quiet and nil tasks write nothing.
func TestTaskPiped(t *testing.T) {
	var buf bytes.Buffer
	task := NewTask(&buf, false, "simulate", "load points", 4)
	for i := 1; i <= 4; i++ {
		task.Step(i, 4, "load 0.5")
	}
	if buf.Len() != 0 {
		t.Fatalf("wrote %q before finishing", buf.String())
	}
	task.Finish("")
	got := buf.String()
	if strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "simulate: 4/4 load points, ") || !strings.HasSuffix(got, ": load 0.5\n") {
		t.Errorf("summary %q", got)
	}
	task.Finish("again") // a second Finish writes nothing
	if buf.String() != got {
		t.Errorf("second Finish wrote %q", buf.String()[len(got):])
	}
	var q bytes.Buffer
	NewTask(&q, true, "x", "y", 1).Finish("z")
	var none *Task
	none.Step(1, 1, "")
	none.Finish("")
	if q.Len() != 0 {
		t.Errorf("quiet wrote %q", q.String())
	}
}

// TestTaskTerminalLine: the terminal line carries the bar, done/total, the time so far and
// the estimate of the time left.
func TestTaskTerminalLine(t *testing.T) {
	clock := time.Unix(0, 0)
	task := &Task{tty: true, w: &bytes.Buffer{}, label: "simulate", unit: "segments", now: func() time.Time { return clock }, total: 10}
	task.start = clock
	clock = clock.Add(2 * time.Second)
	task.done = 4
	if got, want := task.line(true), "simulate [########............] 4/10 segments, 2s, about 3s left"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestETA: extrapolated from the rate so far; nothing before the first step; never negative.
func TestETA(t *testing.T) {
	cases := []struct {
		elapsed     time.Duration
		done, total int
		want        time.Duration
		ok          bool
	}{
		{10 * time.Second, 0, 10, 0, false},
		{10 * time.Second, 5, 10, 10 * time.Second, true},
		{10 * time.Second, 10, 10, 0, true},
		{10 * time.Second, 12, 10, 0, true},
	}
	for _, c := range cases {
		got, ok := ETA(c.elapsed, c.done, c.total)
		if got != c.want || ok != c.ok {
			t.Errorf("ETA(%v, %d, %d) = %v, %v; want %v, %v", c.elapsed, c.done, c.total, got, ok, c.want, c.ok)
		}
	}
}

// TestStatus: a status (no counted steps) draws "label: time" at once on a terminal, keeps
// Println's lines above its own line, and is erased by Clear; piped, Println's lines pass
// through, Finish writes the one summary line and Clear writes nothing.
func TestStatus(t *testing.T) {
	tty := &Buffer{TTY: true}
	s := NewStatus(tty, false, "solve ppipe")
	if got := tty.String(); !strings.HasPrefix(got, "\r\033[Ksolve ppipe: ") {
		t.Fatalf("first draw %q", got)
	}
	s.Println("solve mip 1.0s incumbent 3")
	s.Clear()
	s.Println("after") // ended: a plain line
	got := tty.String()
	if !strings.Contains(got, "\r\033[Ksolve mip 1.0s incumbent 3\n\r\033[Ksolve ppipe: ") || !strings.HasSuffix(got, "\r\033[Kafter\n") {
		t.Errorf("terminal %q", got)
	}

	pipe := &Buffer{}
	s = NewStatus(pipe, false, "bench ppipe")
	s.Note("row 1 of 3")
	s.Println("an info line")
	s.Finish("done")
	lines := strings.Split(strings.TrimSuffix(pipe.String(), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "an info line" || !strings.HasPrefix(lines[1], "bench ppipe: ") || !strings.HasSuffix(lines[1], ": done") {
		t.Errorf("piped %q", pipe.String())
	}
	cleared := &Buffer{}
	NewStatus(cleared, false, "x").Clear()
	NewStatus(cleared, true, "quiet").Finish("y")
	if cleared.String() != "" {
		t.Errorf("cleared or quiet wrote %q", cleared.String())
	}
}

// TestTaskBeforeFirstStep: a task started before its total is known shows its time, then
// its bar once a step gives the total and the unit SetUnit named.
func TestTaskBeforeFirstStep(t *testing.T) {
	clock := time.Unix(0, 0)
	task := &Task{tty: true, w: &bytes.Buffer{}, label: "simulate", now: func() time.Time { return clock }}
	task.start = clock
	if got, want := task.line(true), "simulate: 0s"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	task.SetUnit("segments")
	task.done, task.total = 1, 4
	if got := task.line(true); !strings.HasPrefix(got, "simulate [#####...............] 1/4 segments") {
		t.Errorf("%q", got)
	}
}

// TestFakeTerminal: IsTerminal asks a Terminal.
func TestFakeTerminal(t *testing.T) {
	if !IsTerminal(&Buffer{TTY: true}) || IsTerminal(&Buffer{}) {
		t.Error("Buffer's TTY not honoured")
	}
}

// TestTaskAbove: output written through Above onto the task's terminal never starts on the
// status line's row: the line is erased first and drawn again below each complete line; on a
// pipe, or with a nil task, Above is the writer itself.
func TestTaskAbove(t *testing.T) {
	t.Setenv("PLAN_NO_PROGRESS", "")
	term := &Buffer{TTY: true}
	task := NewStatus(term, false, "bench dyorc")
	out := task.Above(term)
	fmt.Fprint(out, "  SYSTEM   GOODPUT\n")
	got := term.String()
	for _, want := range []string{"bench dyorc: 0s\r\033[K  SYSTEM   GOODPUT\n", "\n\r\033[Kbench dyorc: "} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output %q lacks %q", got, want)
		}
	}
	pipe := &Buffer{}
	if w := NewStatus(pipe, false, "x").Above(pipe); w != io.Writer(pipe) {
		t.Errorf("on a pipe Above must return the writer itself")
	}
	var nilTask *Task
	if w := nilTask.Above(pipe); w != io.Writer(pipe) {
		t.Errorf("a nil task's Above must return the writer itself")
	}
}
