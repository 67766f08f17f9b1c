//go:build linux

package waketimer

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fdWaiter is the Linux Waiter: its owner waits on a timerfd in the network poller
// (RawConn.Read), as fdTimer's relay does, and the poller readies the owner itself when the
// hrtimer expires. The descriptor's read deadline is the rest: a runtime timer for the coarse
// deadline, and a deadline in the past for a poke, which the runtime turns into a wakeup of
// the blocked reader without a system call (poll_runtime_pollSetDeadline).
//
// A poke leaves the read deadline expired: the next Sleep sets it again before its busy looks
// at the owner's queues, so a poke that comes after that look is never overwritten.
type fdWaiter struct {
	fd     int
	f      *os.File
	rc     syscall.RawConn
	due    int64 // the precise deadline, ns since epoch; 0: none
	coarse time.Time
	// pokes counts pokes; seen is the count the read deadline was last set after.
	pokes    atomic.Uint64
	seen     uint64
	sleeping atomic.Bool
	stale    bool // the read deadline expired (a poke, or the coarse deadline)
	read     func(uintptr) bool
	woken    bool
}

// NewWaiter makes a disarmed Waiter; Close releases it.
func NewWaiter() Waiter {
	fd, f, rc, ok := openTimerfd()
	if !ok {
		return newGoWaiter()
	}
	w := &fdWaiter{fd: fd, f: f, rc: rc}
	w.read = w.expired
	return w
}

// expired is the RawConn.Read callback: true once the precise deadline passed (fdTimer's
// relay explains the clock check and the read when the poller readied it early).
func (w *fdWaiter) expired(fd uintptr) bool {
	if w.due != 0 && int64(time.Since(epoch)) >= w.due {
		return true
	}
	if w.woken && w.due != 0 {
		var buf [8]byte
		if n, _ := unix.Read(int(fd), buf[:]); n == 8 {
			return true
		}
	}
	w.woken = true
	return false
}

func (w *fdWaiter) Arm(d time.Duration) {
	var spec unix.ItimerSpec
	if d < 0 {
		w.due = 0
	} else {
		// A zero it_value disarms a timerfd: fire "now" as 1 ns.
		d = max(d, time.Nanosecond)
		w.due = int64(time.Since(epoch) + d)
		spec.Value = unix.NsecToTimespec(int64(d))
	}
	_ = unix.TimerfdSettime(w.fd, 0, &spec, nil)
}

func (w *fdWaiter) ArmCoarse(d time.Duration) {
	if d < 0 {
		w.coarse = time.Time{}
	} else {
		w.coarse = time.Now().Add(max(d, time.Nanosecond))
	}
	w.stale = true
}

// refresh sets the read deadline again if it changed or expired (a poke, or the coarse
// deadline: one that passed before this sleep is set as it is, a time in the past, and
// ends the sleep at once).
func (w *fdWaiter) refresh() {
	if n := w.pokes.Load(); n != w.seen {
		w.seen, w.stale = n, true
	}
	if w.stale {
		_ = w.f.SetReadDeadline(w.coarse)
		w.stale = false
	}
}

func (w *fdWaiter) Poke() {
	if w.sleeping.CompareAndSwap(true, false) {
		w.pokes.Add(1)
		_ = w.f.SetReadDeadline(pokeTime)
	}
}

// pokeTime is a read deadline in the past.
var pokeTime = time.Unix(1, 0)

func (w *fdWaiter) Sleep(busy func() bool) bool {
	w.refresh()
	w.sleeping.Store(true)
	defer w.sleeping.Store(false)
	if busy() {
		return false
	}
	w.woken = false
	err := w.rc.Read(w.read)
	if err == nil {
		w.due = 0
		return true
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// A poke, or the coarse deadline; either way the deadline is set again next time,
		// even for a poke whose count refresh has seen already (it landed late). A coarse
		// deadline that passed has fired.
		w.stale = true
		if !w.coarse.IsZero() && !time.Now().Before(w.coarse) {
			w.coarse = time.Time{}
		}
	}
	return false
}

func (w *fdWaiter) Close() { _ = w.f.Close() }
