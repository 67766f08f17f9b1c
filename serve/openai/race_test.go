//go:build race

package openai

// raceEnabled: the race detector slows the HTTP path by an order of magnitude, so wall-clock
// comparisons finer than that skip under it.
const raceEnabled = true
