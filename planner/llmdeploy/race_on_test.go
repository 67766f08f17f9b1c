//go:build race

package llmdeploy

// raceOn: the race detector slows the engine simulation 5–10×, so the tests that search the
// whole space search the reduced one (small) under it: the worker pool is what it checks.
const raceOn = true
