// Package waketimer is a one-shot, re-armable timer with microsecond precision for the serve
// driver and the load generator. Go's runtime timers sleep in epoll_wait, whose timeout has
// millisecond granularity, so a process that is idle between events wakes up to ~1 ms late
// (0.5 ms on average); on Linux this package arms a timerfd instead, which the network poller
// watches like any other descriptor, so the wakeup comes when the hrtimer expires. Nothing
// busy-waits.
package waketimer

import "time"

// Timer wakes its owner. C receives a token when the timer fires; a token may be stale (the
// timer was re-armed meanwhile), so owners re-check the time.
type Timer interface {
	C() <-chan struct{}
	// Reset arms the timer to fire after d (replacing any pending expiry).
	Reset(d time.Duration)
	Close()
}

// goTimer is the portable Timer on a time.Timer.
type goTimer struct {
	t    *time.Timer
	c    chan struct{}
	stop chan struct{}
}

func newGoTimer() *goTimer {
	g := &goTimer{t: time.NewTimer(time.Hour), c: make(chan struct{}, 1), stop: make(chan struct{})}
	g.t.Stop()
	go func() {
		for {
			select {
			case <-g.t.C:
				select {
				case g.c <- struct{}{}:
				default:
				}
			case <-g.stop:
				return
			}
		}
	}()
	return g
}

func (g *goTimer) C() <-chan struct{}    { return g.c }
func (g *goTimer) Reset(d time.Duration) { g.t.Reset(d) }
func (g *goTimer) Close() {
	g.t.Stop()
	close(g.stop)
}
