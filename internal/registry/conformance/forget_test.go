package conformance

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/sim"
)

var forgetN = flag.Int("forget.n", 0, "requests BenchmarkForget pushes through each policy (0: $PLAN_FORGET_N, else 1000000)")

// forgetRequests is BenchmarkForget's request count: -forget.n, else PLAN_FORGET_N, else 1 M.
func forgetRequests(b *testing.B) int {
	if *forgetN > 0 {
		return *forgetN
	}
	if s := os.Getenv("PLAN_FORGET_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 10 {
			b.Fatalf("PLAN_FORGET_N=%q: want a request count ≥ 10", s)
		}
		return n
	}
	return 1_000_000
}

// forgetCompactEvery is how often (in events) the forget runs compact, as serve does.
const forgetCompactEvery = 4096

// forgetResult is one forget run: requests pushed and the live heap (bytes, after a GC)
// once a tenth of them finished and at the end, before the run's state is dropped.
type forgetResult struct {
	requests           int64
	heapTenth, heapEnd uint64
	maxLive            int
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// forgetRun pushes about n requests through policy of system on the system's sample
// deployment and compacts every forgetCompactEvery events: with the engine's table
// compacted, every policy that forgets (dataplane.Forgetter) or keys its state by what is
// in flight keeps the heap flat. Arrivals are Poisson at 0.3 of the planned rate, so no
// queue grows (PARD's no-drop baseline already falls behind at 0.5).
func forgetRun(system, policy string, n int) (forgetResult, error) {
	var res forgetResult
	sys, ok := sampling(system)
	if !ok {
		return res, fmt.Errorf("system %q has no sample deployments", system)
	}
	const seed = 70
	dep := sys.Sample(rand.New(rand.NewPCG(seed, 0xc0f0)))
	pol, err := dataplane.NewRegistry(sys.Policies()...).New(dep, dataplane.Config{Policy: policy}, "")
	if err != nil {
		return res, err
	}
	const load = 0.3
	spec, err := sim.ParseArrival("poisson")
	if err != nil {
		return res, err
	}
	var rate float64
	srcs := make([]sim.Source, len(dep.Apps))
	for a := range dep.Apps {
		r := dep.Apps[a].RateRPS * load
		if !(r > 0) {
			continue
		}
		rate += r
		if srcs[a], err = spec.New(r, dep.Apps[a].Name, seed+uint64(a)); err != nil {
			return res, err
		}
	}
	if !(rate > 0) {
		return res, fmt.Errorf("%s's sample has no planned rate", system)
	}
	var s *sim.Sim
	tenth := int64(n / 10)
	opts := sim.Options{
		Duration: dataplane.Time(float64(n) / rate * float64(dataplane.Second)), Seed: seed, Jitter: 0.05,
		CompactEvery: forgetCompactEvery, NoLatencies: true,
		OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
			if res.requests++; res.requests == tenth {
				res.heapTenth = liveHeap()
			}
			res.maxLive = max(res.maxLive, s.Engine.HeldRequests())
		},
	}
	if s, err = sim.New(dep, pol, srcs, opts); err != nil {
		return res, fmt.Errorf("%s/%s: %w: %v", system, policy, ErrRefused, err)
	}
	if _, err := s.Run(); err != nil {
		return res, err
	}
	res.heapEnd = liveHeap()
	runtime.KeepAlive(s)
	return res, nil
}

// BenchmarkForget pushes -forget.n requests (default 1 M; the
// target is 10 M) through every policy of every in-tree system on its sample deployment,
// compacting every few thousand events as serve does, and reports the live heap once a
// tenth of them finished and at the end. Flat (heap-MB@end ≈ heap-MB@10%) means the
// policy's memory depends on what is in flight, not on how many requests have passed; a
// policy that keeps per-request state must implement dataplane.Forgetter. b.N repeats
// the whole run; the metrics are the last run's.
//
//	go test ./internal/registry/conformance -run '^$' -bench Forget -forget.n 10000000
func BenchmarkForget(b *testing.B) {
	n := forgetRequests(b)
	for _, sp := range Policies() {
		b.Run(sp[0]+"/"+sp[1], func(b *testing.B) {
			var res forgetResult
			for range b.N {
				var err error
				if res, err = forgetRun(sp[0], sp[1], n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.requests), "requests")
			b.ReportMetric(float64(res.heapTenth)/(1<<20), "heap-MB@10%")
			b.ReportMetric(float64(res.heapEnd)/(1<<20), "heap-MB@end")
			b.ReportMetric(float64(res.heapEnd)/float64(max(res.heapTenth, 1)), "end/10%")
			b.ReportMetric(float64(res.maxLive), "max-live-reqs")
		})
	}
}

// TestForgetSmoke: BenchmarkForget's run works for every policy (a few hundred requests
// each; the benchmark itself runs only under -bench).
func TestForgetSmoke(t *testing.T) {
	for _, sp := range Policies() {
		t.Run(sp[0]+"/"+sp[1], func(t *testing.T) {
			const n = 300
			res, err := forgetRun(sp[0], sp[1], n)
			if err != nil {
				t.Fatal(err)
			}
			if res.requests < n/2 || res.heapTenth == 0 || res.heapEnd == 0 {
				t.Fatalf("%+v: want about %d requests and both heap samples", res, n)
			}
		})
	}
}
