package progress

import (
	"bytes"
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
