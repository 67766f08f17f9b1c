package serve

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/worker"
)

// submit queues a call for the driver; false means the driver has stopped.
func (d *driver) submit(c *call) bool {
	d.inMu.Lock()
	if d.inClosed {
		d.inMu.Unlock()
		return false
	}
	d.inQ = append(d.inQ, c)
	d.inMu.Unlock()
	d.wt.Poke()
	return true
}

// jobDone queues a real worker's finished job for the driver (dropped once it stopped: its
// requests were answered on the way out).
func (d *driver) jobDone(j *worker.Job) {
	d.inMu.Lock()
	if d.inClosed {
		d.inMu.Unlock()
		return
	}
	d.doneQ = append(d.doneQ, j)
	d.inMu.Unlock()
	d.wt.Poke()
}

// pending reports whether anything is queued for the driver (the waiter's busy check).
func (d *driver) pending() bool {
	d.inMu.Lock()
	n := d.queuedLocked()
	d.inMu.Unlock()
	return n > 0
}

// queuedLocked is how many items wait in the driver's queues; inMu is held.
func (d *driver) queuedLocked() int {
	return len(d.inQ) + len(d.cancelQ) + len(d.doneQ) + len(d.cmdQ)
}

// work is what the driver took off its queues at one wakeup.
type work struct {
	calls, cancels []*call
	dones          []*worker.Job
	cmds           []func()
}

// takeWork swaps the queues for their spare arrays; false when all were empty.
func (d *driver) takeWork() (work, bool) {
	d.inMu.Lock()
	defer d.inMu.Unlock()
	if d.queuedLocked() == 0 {
		return work{}, false
	}
	w := work{calls: d.inQ, cancels: d.cancelQ, dones: d.doneQ, cmds: d.cmdQ}
	d.inQ, d.cancelQ, d.doneQ, d.cmdQ = d.inSpare[:0], d.cancelSp[:0], d.doneSpare[:0], d.cmdSpare[:0]
	return w, true
}

// onWork handles what takeWork took; each item is one event (due timers before it, the
// bookkeeping after it), as if it had come alone. Finished jobs come first (they free
// workers), then commands, calls and cancellations: a call is always queued before its
// cancellation.
func (d *driver) onWork(w work) {
	for i, j := range w.dones {
		d.onDone(j)
		d.onTimers()
		d.afterEvent()
		w.dones[i] = nil
	}
	for i, f := range w.cmds {
		d.onCmd(f)
		d.onTimers()
		d.afterEvent()
		w.cmds[i] = nil
	}
	for i, c := range w.calls {
		d.onTimers() // d.now is the wall clock
		d.onCall(c)
		d.onTimers()
		d.afterEvent()
		w.calls[i] = nil
	}
	if n := dataplane.Time(len(w.calls)); n > 0 {
		d.intakeGap += (min((d.now-d.intakeAt)/n, busyQuiet) - d.intakeGap) / 8
		d.intakeAt = d.now
	}
	for i, c := range w.cancels {
		d.onTimers()
		d.onCancel(c)
		close(c.cancelDone)
		d.onTimers()
		d.afterEvent()
		w.cancels[i] = nil
	}
	d.inSpare, d.cancelSp, d.doneSpare, d.cmdSpare = w.calls[:0], w.cancels[:0], w.dones[:0], w.cmds[:0]
}
