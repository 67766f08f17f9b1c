package serve

import "time"

// wakeTimer wakes the driver at the earliest pending timer entry. C receives a token when
// the timer fires; spurious tokens are harmless (the driver re-checks its heap).
type wakeTimer interface {
	C() <-chan struct{}
	// Reset arms the timer to fire after d (replacing any pending expiry).
	Reset(d time.Duration)
	Close()
}

// goTimer is the portable wakeTimer on a time.Timer.
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
