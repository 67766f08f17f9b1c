package pard_test

import (
	"runtime"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/internal/base/simbench"
	"github.com/plan-dev/plan/sim/simscale"
)

// scaledPipeline is pard.ScaledPipeline: the fixed three-module pipeline at k times its
// workers and load × its capacity.
func scaledPipeline(tb testing.TB, k int, load float64) *dataplane.Deployment {
	tb.Helper()
	dep, err := pard.ScaledPipeline(k, load)
	if err != nil {
		tb.Fatal(err)
	}
	return dep
}

// BenchmarkSimScale checks that simulation cost grows linearly with workers for PARD and its FIFO baseline:
// 16, 64 and 256 workers at load 0.9 of the pipeline's capacity for 10 simulated seconds
// (simscale.PARD; `plan bench speed` runs the same cases). events/cpu-s should not fall with N.
func BenchmarkSimScale(b *testing.B) {
	for _, pol := range []string{"pard", "none"} {
		for _, k := range []int{1, 4, 16} {
			c, err := simscale.PARD(pol, k, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(c.Name(pol), func(b *testing.B) {
				meter := simbench.Start(b)
				for i := 0; i < b.N; i++ {
					runtime.GC()
					s, err := c.Run()
					if err != nil {
						b.Fatal(err)
					}
					meter.Add(s.Engine.Events())
				}
				meter.Report()
			})
		}
	}
}
