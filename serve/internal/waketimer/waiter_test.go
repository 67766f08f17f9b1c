package waketimer

import (
	"sync"
	"testing"
	"time"
)

// TestWaiter: each wake comes for its reason and no earlier — a precise deadline (reported
// as precise), a coarse one, a poke from another goroutine — a poke between busy's look and
// the sleep is not lost, a poke that raced with a look makes at most one early return, and
// re-arming replaces a pending deadline.
func TestWaiter(t *testing.T) {
	for name, mk := range map[string]func() Waiter{"default": NewWaiter, "go": func() Waiter { return newGoWaiter() }} {
		t.Run(name, func(t *testing.T) {
			w := mk()
			defer w.Close()
			idle := func() bool { return false }
			// sleep returns whether the wake was precise and the time since start. A deadline
			// counts from its Arm, so callers that check one pass the time taken before arming:
			// under -race on a busy machine the goroutine can start well after the arm.
			sleepSince := func(start time.Time, busy func() bool) (bool, time.Duration) {
				t.Helper()
				done := make(chan bool)
				go func() { done <- w.Sleep(busy) }()
				select {
				case p := <-done:
					return p, time.Since(start)
				case <-time.After(10 * time.Second):
					t.Fatal("Sleep did not return")
					return false, 0
				}
			}
			sleep := func(busy func() bool) (bool, time.Duration) {
				t.Helper()
				return sleepSince(time.Now(), busy)
			}

			for _, d := range []time.Duration{300 * time.Microsecond, 2 * time.Millisecond} {
				armed := time.Now()
				w.Arm(d)
				if p, got := sleepSince(armed, idle); !p || got < d {
					t.Fatalf("precise %v: woke after %v, precise %v", d, got, p)
				}
			}
			armed := time.Now()
			w.ArmCoarse(time.Millisecond)
			if p, got := sleepSince(armed, idle); p || got < time.Millisecond {
				t.Fatalf("coarse 1ms: woke after %v, precise %v", got, p)
			}
			// A coarse deadline due at once (or passed before the sleep) ends the sleep.
			w.ArmCoarse(0)
			if p, _ := sleep(idle); p {
				t.Fatal("coarse 0: woke as precise")
			}

			// Re-arming replaces: a far precise deadline is not delivered early.
			w.Arm(time.Millisecond)
			w.Arm(time.Hour)
			w.Arm(-1)
			w.ArmCoarse(time.Hour)
			w.ArmCoarse(-1)
			var mu sync.Mutex
			queued := 0
			launched := time.Now()
			go func() {
				time.Sleep(5 * time.Millisecond)
				mu.Lock()
				queued++
				mu.Unlock()
				w.Poke()
			}()
			busy := func() bool { mu.Lock(); defer mu.Unlock(); return queued > 0 }
			if p, got := sleepSince(launched, busy); p || got < 5*time.Millisecond {
				t.Fatalf("poke after 5ms: woke after %v, precise %v", got, p)
			}

			// Work queued between busy's look and the sleep: its poke still wakes.
			queued = 0
			look := func() bool {
				b := busy()
				go func() {
					mu.Lock()
					queued++
					mu.Unlock()
					w.Poke()
				}()
				return b
			}
			if p, _ := sleep(look); p {
				t.Fatal("a poke woke the sleep as precise")
			}
			// A poke that raced with a look that found work: the next sleep may return early
			// once, and the one after sleeps until its deadline.
			if p, _ := sleep(func() bool { w.Poke(); return true }); p {
				t.Fatal("a look that found work returned precise")
			}
			w.Arm(20 * time.Millisecond)
			p, got := sleep(idle)
			if !p {
				p, got = sleep(idle)
			}
			if !p || got <= 0 {
				t.Fatalf("after a raced poke: precise %v", p)
			}
		})
	}
}
