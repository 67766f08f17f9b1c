package sim

import (
	"fmt"
	"testing"

	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/base/simbench"
)

// BenchmarkSim100GPU is the speed target: a 100-GPU (25 L4 + 75 P4), 30-second run at load
// 1.0 (≈145k requests) under the reservation dispatcher. It reports simulated events per
// second of wall time and the wall time per run.
func BenchmarkSim100GPU(b *testing.B) {
	dep := loadDep(b, "hc1-100.json")
	spec, _ := ParseArrival("poisson")
	cfg := &SweepConfig{Policies: testPolicies, Dep: dep, Policy: dataplane.Config{Policy: "ppipe"}, Arrival: spec, Duration: 30 * dataplane.Second, Seed: 1}
	b.ReportAllocs()
	meter := simbench.Start(b)
	for i := 0; i < b.N; i++ {
		s, err := newPointSim(cfg, 1.0)
		if err != nil {
			b.Fatal(err)
		}
		m, err := s.Run()
		if err != nil {
			b.Fatal(err)
		}
		meter.Add(m.Events)
		if p, ok := s.Engine.Policy().(*dpppipe.PPipe); ok && i == 0 {
			st := p.Stats()
			b.ReportMetric(float64(st.Probes)/float64(st.Dispatches), "probes/batch")
		}
	}
	meter.Report()
}

// BenchmarkSimReactive100GPU is the same run under the reactive baseline.
func BenchmarkSimReactive100GPU(b *testing.B) {
	dep := loadDep(b, "hc1-100.json")
	spec, _ := ParseArrival("poisson")
	cfg := &SweepConfig{Policies: testPolicies, Dep: dep, Policy: dataplane.Config{Policy: "reactive"}, Arrival: spec, Duration: 30 * dataplane.Second, Seed: 1}
	meter := simbench.Start(b)
	for i := 0; i < b.N; i++ {
		s, err := newPointSim(cfg, 1.0)
		if err != nil {
			b.Fatal(err)
		}
		m, err := s.Run()
		if err != nil {
			b.Fatal(err)
		}
		meter.Add(m.Events)
	}
	meter.Report()
}

// BenchmarkEventHeap measures the bare event queue (pop + push) holding n events with
// times spread over a window, beside the binary dataplane.TimeHeap it replaced; n = 4,096
// is about a 1,600-GPU run's queue.
func BenchmarkEventHeap(b *testing.B) {
	for _, n := range []int{1024, 4096} {
		b.Run(fmt.Sprintf("evqueue/n=%d", n), func(b *testing.B) {
			var q evqueue
			for i := 0; i < n; i++ {
				q.Push(dataplane.Time(i*7919%n), dataplane.Event{Kind: dataplane.EvBatchDone})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				at, ev := q.Pop()
				q.Push(at+dataplane.Time(i*7919%n), ev)
			}
		})
		b.Run(fmt.Sprintf("timeheap/n=%d", n), func(b *testing.B) {
			var h dataplane.TimeHeap[dataplane.Event]
			for i := 0; i < n; i++ {
				h.Push(dataplane.Timed[dataplane.Event]{At: dataplane.Time(i * 7919 % n), Seq: uint64(i)})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				x := h.Pop()
				x.At += dataplane.Time(i * 7919 % n)
				x.Seq = uint64(i + n)
				h.Push(x)
			}
		})
	}
}
