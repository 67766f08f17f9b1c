package workload

import "github.com/plan-dev/plan/dataplane"

// Warm-up rule, shared by plan simulate (sim) and plan load (serve/load). A
// run starts with empty queues, cold policy estimators (PARD's windows, CascadeServe's QPS
// poll, QLM's waiting-time estimates) and no batch in flight; requests arriving then read as
// misses that the steady state never has (a cascade at load 1 missed 6% of a 10 s run, all in
// its first second, and 0.9% of a 60 s one). The start-up lasts a few SLOs (queues settle over
// the time a request may wait), so the default window is five times the largest SLO of the
// deployment, at least DefaultWarmupFloor (the policies' own windows and polls run on the order
// of a second), and at most DefaultWarmupShare of the run, which leaves most of a short run
// measured.
const (
	DefaultWarmupSLOs  = 5
	DefaultWarmupFloor = 2 * dataplane.Second
	DefaultWarmupShare = 0.2
)

// DefaultWarmup is the warm-up window of a run of the given duration on dep when none is
// given: min(max(5 × the largest SLO, 2 s), 20% of the run).
func DefaultWarmup(dep *dataplane.Deployment, duration dataplane.Time) dataplane.Time {
	var slo dataplane.Time
	for _, a := range dep.Apps {
		slo = max(slo, a.SLO)
	}
	w := max(DefaultWarmupSLOs*slo, DefaultWarmupFloor)
	return min(w, dataplane.Time(DefaultWarmupShare*float64(duration)))
}
