//go:build !linux

package waketimer

// New makes a disarmed timer; Close releases it.
func New() Timer { return newGoTimer() }

// NewWaiter makes a disarmed Waiter; Close releases it.
func NewWaiter() Waiter { return newGoWaiter() }
