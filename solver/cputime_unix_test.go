//go:build unix

package solver

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used (user + system). The
// benchmarks report it beside wall time because a shared 2-core machine
// makes wall time noisy; for single-threaded solves it is the better
// measure of the engines' speed.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
