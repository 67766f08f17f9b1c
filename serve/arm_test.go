package serve

import (
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/worker"
)

// TestArm: a driver whose calls arrive close together wakes for a near deadline on the
// waiter's coarse (runtime timer) deadline (no timerfd re-arm, whose syscall dominated the
// driver's CPU per request); one that went quiet, or a far deadline, gets the timerfd
// again, and the coarse deadline is disarmed. Either wake fires.
func TestArm(t *testing.T) {
	d := newDriver(worker.NewClock(), nil, nil, 0, 1)
	defer d.wt.Close()
	wait := func(precise bool, what string) {
		t.Helper()
		done := make(chan bool)
		go func() { done <- d.wt.Sleep(func() bool { return false }) }()
		select {
		case got := <-done:
			if got != precise {
				t.Fatalf("%s: woken with precise %v", what, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not fire", what)
		}
	}

	d.now = d.clk.Now()
	d.intakeAt, d.intakeGap = d.now, busyGap/2
	at := d.now + 300
	d.push(at, timerItem{kind: tDrain})
	d.arm()
	if d.soonAt != at || d.timerAt != dataplane.Never {
		t.Fatalf("busy, deadline 300 µs away: coarse at %d, timerfd at %d; want the coarse at %d", d.soonAt, d.timerAt, at)
	}
	wait(false, "the coarse deadline")
	d.soonAt = dataplane.Never
	d.timers.Pop()

	// Busy, but the deadline is far: the timerfd (a cheap re-arm).
	d.now = d.clk.Now()
	d.intakeAt = d.now
	far := d.now + 2*coarseHorizon
	d.push(far, timerItem{kind: tDrain})
	d.arm()
	if d.timerAt != far || d.soonAt != dataplane.Never {
		t.Fatalf("busy, deadline %d µs away: timerfd at %d, coarse at %d; want the timerfd at %d", far-d.now, d.timerAt, d.soonAt, far)
	}
	d.timers.Pop()

	// Quiet for busyQuiet: a near deadline takes the timerfd, and the coarse deadline is disarmed.
	d.now = d.clk.Now()
	d.intakeAt = d.now
	near := d.now + 200
	d.push(near, timerItem{kind: tDrain})
	d.arm()
	if d.soonAt != near {
		t.Fatalf("busy: coarse at %d, want %d", d.soonAt, near)
	}
	d.intakeAt = d.now - busyQuiet
	d.arm()
	if d.timerAt != near || d.soonAt != dataplane.Never {
		t.Fatalf("quiet: timerfd at %d, coarse at %d; want the timerfd at %d", d.timerAt, d.soonAt, near)
	}
	wait(true, "the timerfd")
}
