//go:build unix

package ppipesys

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used so far, and whether it is
// known.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
