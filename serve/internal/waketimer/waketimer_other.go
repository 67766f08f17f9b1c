//go:build !linux

package waketimer

// New makes a disarmed timer; Close releases it.
func New() Timer { return newGoTimer() }
