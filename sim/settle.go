package sim

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
)

// A prediction reads of every load but 1 only whether each application holds its targets
// there: headroom, appHeadroom and sustained judge the points, findLimit tests them against
// MaxLoadTarget, and none reports their metrics. Past what a plan sustains, a run's verdict
// is settled long before the run ends: its misses come by the hundred while its arrivals
// go on. A settle watch stops such a run as soon as the full run is certain to fail every
// one of those tests:
//
//   - every application the run counts requests of misses a check of its judge: its misses
//     so far already exceed what its target allows of all the requests the run will count,
//   - and one of them misses MaxLoadTarget the same way (findLimit's test).
//
// It is exact, not a heuristic, because a finished request's outcome never changes, every
// arrival in the measured window [warmup, duration) finishes before a run ends, and those
// arrivals are known before the run starts (settleCounts draws them from sources seeded as
// the run's own). A load that holds is never stopped, so its metrics are the full run's,
// and a stopped run's Point says so (workload.Point.Stopped): it passes no test.
//
// A capacity probe (PoissonProbe) asks less: whether every application holds, its verdict
// failing with any one that does not. Its watch (first) stops the run at the first
// application certain to fail its judge, by the same limits; a probe that holds is never
// stopped either.

// settleWatch follows one run's misses per application against the limits its judge sets.
type settleWatch struct {
	apps []appSettle
	// open counts the applications with requests not yet certain to miss; below99 says that
	// one is certain to miss MaxLoadTarget.
	open    int
	below99 bool
	// first: the first application certain to fail stops the run (a capacity probe's
	// verdict), not every one together with MaxLoadTarget's miss (a prediction's search).
	first bool
}

// appSettle is one application's limits: the misses at which a check is certain to fail,
// given the n requests the run will count (never: it cannot fail).
type appSettle struct {
	n int64
	// llm: judged on its LLM SLOs (workload.LLMChecks), whose misses are the requests
	// dropped or cancelled plus those past that SLO; else on its attainment, whose misses
	// are the requests not completed.
	llm bool
	// att is the attainment's limit (not llm); e2e, ttft and tpot the SLOs' (llm); att99
	// the attainment's against MaxLoadTarget.
	att, e2e, ttft, tpot, att99 int64
	failed                      bool
}

// never is a limit no count reaches (what workload.MissLimit returns when none fails).
const never = math.MaxInt64

// newSettleWatch sets the limits of a run that will count n[i] requests of application i,
// stopping it at the first application certain to fail (first) or once all are (settleWatch).
func newSettleWatch(j judge, n []int64, first bool) *settleWatch {
	w := &settleWatch{apps: make([]appSettle, len(n)), first: first}
	probe := Point{Metrics: Metrics{Apps: make([]AppMetrics, len(n))}}
	// fails is whether the judge fails application i on metrics m.
	fails := func(i int, m AppMetrics) bool {
		probe.Apps[i] = m
		f := !j.app(&probe, i)
		probe.Apps[i] = AppMetrics{}
		return f
	}
	for i, count := range n {
		a := &w.apps[i]
		*a = appSettle{n: count, att: never, e2e: never, ttft: never, tpot: never, att99: never}
		if count <= 0 {
			continue // no requests: the judge passes it
		}
		w.open++
		completed := func(m int64) AppMetrics {
			return AppMetrics{Requests: count, Completed: count - m, Attainment: attainmentOf(count-m, count)}
		}
		a.att99 = workload.MissLimit(count, func(m int64) bool { return attainmentOf(count-m, count) < MaxLoadTarget })
		llm := AppMetrics{Requests: count, Completed: count, Attainment: 1, LLM: &workload.LLMMetrics{Answered: count}}
		if j.checks(&llm, i) == nil {
			a.att = workload.MissLimit(count, func(m int64) bool { return fails(i, completed(m)) })
			continue
		}
		a.llm = true
		// One SLO's misses at a time, the others' none: each check reads only its own.
		slo := func(set func(*workload.LLMMetrics, int64)) int64 {
			return workload.MissLimit(count, func(m int64) bool {
				l := workload.LLMMetrics{Answered: count}
				set(&l, m)
				return fails(i, AppMetrics{Requests: count, Completed: count, Attainment: 1, LLM: &l})
			})
		}
		a.e2e = slo(func(l *workload.LLMMetrics, m int64) { l.E2EMissed = m })
		a.ttft = slo(func(l *workload.LLMMetrics, m int64) { l.TTFTMissed = m })
		a.tpot = slo(func(l *workload.LLMMetrics, m int64) { l.TPOTMissed = m })
	}
	return w
}

// finished takes application i's counts after one of its measured requests finished and
// reports whether the run is now certain to fail.
func (w *settleWatch) finished(i dataplane.AppID, c *appCol) bool {
	a := &w.apps[i]
	misses := c.requests - c.completed
	if misses >= a.att99 {
		w.below99 = true
	}
	if !a.failed {
		if a.llm {
			lost := c.dropped + c.cancelled
			a.failed = lost+c.llm.e2eMiss >= a.e2e || lost+c.llm.ttftMiss >= a.ttft || lost+c.llm.tpotMiss >= a.tpot
		} else {
			a.failed = misses >= a.att
		}
		if a.failed {
			w.open--
			if w.first {
				return true
			}
		}
	}
	return w.open == 0 && w.below99
}

// settleJudge is the judge a run at load stops by once certain to fail (nil: it runs whole)
// and whether the first application certain to fail stops it (a capacity probe, cfg.probe)
// rather than all of them (a prediction's loads but 1, cfg.settle). A replay's or a run
// recording its requests runs whole: their counts are not drawn ahead (settleCounts), and
// a record must be complete.
func (cfg *SweepConfig) settleJudge(load float64) (j *judge, first bool) {
	switch {
	case cfg.Replay != nil || cfg.RecordRequests:
		return nil, false
	case cfg.probe != nil:
		return cfg.probe, true
	case cfg.settle != nil && load != 1:
		return cfg.settle, false
	}
	return nil, false
}

// check confirms, at the end of a run it did not stop, that the run counted the requests
// the watch was set for (anything else would make its limits wrong).
func (w *settleWatch) check(col *collector, dep *dataplane.Deployment) error {
	for i := range w.apps {
		if got := col.apps[i].requests; got != w.apps[i].n {
			return fmt.Errorf("sim: %s: the run counted %d requests, its arrivals %d", dep.Apps[i].Name, got, w.apps[i].n)
		}
	}
	return nil
}

// settleCounts are the requests a run at load will count per application: the arrivals in
// [Warmup, Duration) of sources seeded as the run's (the simulator's scheduleArrival rules:
// a time before the last is taken at the last).
func settleCounts(cfg *SweepConfig, load float64) ([]int64, error) {
	srcs, _, err := pointSources(cfg, load)
	if err != nil {
		return nil, err
	}
	n := make([]int64, len(srcs))
	for a, src := range srcs {
		if src == nil {
			continue
		}
		var last dataplane.Time
		for {
			t := src.Next()
			if t == dataplane.Never || t >= cfg.Duration {
				break
			}
			last = max(last, t)
			if last >= cfg.Warmup {
				n[a]++
			}
		}
	}
	return n, nil
}
