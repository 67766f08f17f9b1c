//go:build !linux

package serve

func newWakeTimer() wakeTimer { return newGoTimer() }
