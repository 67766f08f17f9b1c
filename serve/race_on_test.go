//go:build race

package serve

// raceOn: the race detector slows the server 5–10×, so wall-clock bounds relax under it.
const raceOn = true
