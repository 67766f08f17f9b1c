//go:build unix

package connlimit

import "syscall"

// fdLimit is the process's open-file limit (the Go runtime raised the soft limit to the hard
// one at start); 4096 when it cannot be read.
func fdLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 4096
	}
	return int(min(rl.Cur, 1<<24))
}
