package waketimer

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkArm is the cost of Waiter.Arm, re-arming one precise deadline d from now. There
// are two cases: alone, and behind an earlier deadline that another Waiter holds (re-armed
// every 64 iterations, before it can fire). On Linux the first case is timerfd_settime for a
// deadline that becomes the CPU's earliest timer. That reprograms the CPU's timer hardware,
// and in a VM the reprogramming exits to the hypervisor. A deadline behind an earlier one
// only enters the kernel's timer tree. serve's driver re-arms for each hop end (serve's
// README, "what answering on time costs"). On the 2-core VM of bench/RESULTS.md
// (-benchtime 20000x): alone, 31 µs at 10 µs, 3.1 µs at 100 µs, 2.8 µs at 300 µs and 0.3 µs
// at 5 ms; behind an earlier deadline, 0.59 µs at 100 µs and 0.53 µs at 300 µs (at 10 µs the
// earlier deadline fires during the loop and shields nothing).
func BenchmarkArm(b *testing.B) {
	for _, d := range []time.Duration{10 * time.Microsecond, 100 * time.Microsecond, 300 * time.Microsecond, 5 * time.Millisecond} {
		for _, behind := range []bool{false, true} {
			name := fmt.Sprintf("deadline=%v/alone", d)
			if behind {
				name = fmt.Sprintf("deadline=%v/behind", d)
			}
			b.Run(name, func(b *testing.B) {
				w, earlier := NewWaiter(), NewWaiter()
				defer w.Close()
				defer earlier.Close()
				for i := 0; b.Loop(); i++ {
					if behind && i%64 == 0 {
						earlier.Arm(d / 2)
					}
					w.Arm(d)
				}
			})
		}
	}
}
