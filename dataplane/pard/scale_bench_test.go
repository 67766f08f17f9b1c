package pard_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/internal/simbench"
	"github.com/plan-dev/plan/sim"
)

// scaledPipeline is a fixed three-module PARD pipeline on T4s with k times the workers of
// its 1× point (4, 8 and 4 workers) and k times the rate, at load × its capacity: only N
// grows, the work per request stays the same.
func scaledPipeline(tb testing.TB, k int, load float64) *dataplane.Deployment {
	tb.Helper()
	lat := func(base dataplane.Time, batch int) []dataplane.Time {
		l := make([]dataplane.Time, batch+1)
		for b := 1; b <= batch; b++ {
			l[b] = base + dataplane.Time(b-1)*base/3
		}
		return l
	}
	mods := []pard.ModuleSpec{
		{Name: "detect", GPU: "T4", Batch: 4, Workers: 4 * k, LatUs: lat(6000, 4)},
		{Name: "classify", GPU: "T4", Batch: 8, Workers: 8 * k, LatUs: lat(9000, 8), After: []string{"detect"}},
		{Name: "caption", GPU: "T4", Batch: 4, Workers: 4 * k, LatUs: lat(5000, 4), After: []string{"classify"}},
	}
	capacity := 1e18
	var slo dataplane.Time
	for _, m := range mods {
		capacity = min(capacity, float64(m.Workers*m.Batch)/(float64(m.LatUs[m.Batch])/1e6))
		slo += 3 * m.LatUs[m.Batch]
	}
	dep, err := pard.NewPipelineDeployment([]pard.PipelineSpec{{Name: "app", Modules: mods, SLO: slo, RateRPS: load * capacity}}, pard.DefaultHop)
	if err != nil {
		tb.Fatal(err)
	}
	return dep
}

// BenchmarkSimScale checks that simulation cost grows linearly with workers for PARD and its FIFO baseline:
// 16, 64 and 256 workers at load 0.9 of the pipeline's capacity for 10 simulated seconds.
// events/cpu-s should not fall with N.
func BenchmarkSimScale(b *testing.B) {
	for _, pol := range []string{"pard", "none"} {
		for _, k := range []int{1, 4, 16} {
			dep := scaledPipeline(b, k, 0.9)
			b.Run(fmt.Sprintf("%s/workers=%d", pol, len(dep.Topo.Workers)), func(b *testing.B) {
				meter := simbench.Start(b)
				for i := 0; i < b.N; i++ {
					runtime.GC()
					p, err := pard.NewPolicy(dataplane.Config{Policy: pol})
					if err != nil {
						b.Fatal(err)
					}
					src, err := sim.ArrivalSpec{Kind: "poisson"}.New(dep.Apps[0].RateRPS, dep.Apps[0].Name, 1)
					if err != nil {
						b.Fatal(err)
					}
					s, err := sim.New(dep, p, []sim.Source{src}, sim.Options{Duration: 10 * dataplane.Second, Seed: 1})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Run(); err != nil {
						b.Fatal(err)
					}
					meter.Add(s.Engine.Events())
				}
				meter.Report()
			})
		}
	}
}
