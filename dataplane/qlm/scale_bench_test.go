package qlm_test

import (
	"runtime"
	"testing"

	"github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/internal/base/simbench"
	"github.com/plan-dev/plan/sim/simscale"
)

// BenchmarkSimScale checks that simulation cost grows linearly with instances for QLM and its vLLM baseline:
// 8, 32 and 128 instances at the same per-instance load for 10 simulated seconds
// (simscale.QLM; `plan bench speed` runs the same cases). events/cpu-s should not fall with N.
func BenchmarkSimScale(b *testing.B) {
	for _, pol := range []string{qlm.PolicyQLM, qlm.PolicyFCFS} {
		for _, k := range []int{1, 4, 16} {
			c, err := simscale.QLM(pol, k, 0)
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
