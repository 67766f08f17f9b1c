package ppipe_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/base/simbench"
	"github.com/plan-dev/plan/sim/simscale"
)

// fixture is the 100-GPU fixture hc1-100 (75 P4 + 25 L4, one GPU per server).
var fixture = filepath.Join("..", "..", "testdata", "sim", "hc1-100.json")

// scaleCase is one BenchmarkSimScale load point (simscale.PPipe: the fixture at k × 100
// GPUs, load 0.9, 30 simulated seconds): mode "interval" runs the dispatcher in interval
// mode, "busy-until-retain" keeps every request in the engine (the others compact it as
// sweeps do), the others busy-until.
func scaleCase(tb testing.TB, mode string, k int) *simscale.Case {
	tb.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := simscale.PPipe(intree.Sections(), data, mode, k, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkSimScale checks that simulation cost grows linearly with GPUs: 100, 400 and 1,600 GPUs
// at load 0.9 for 30 simulated seconds under the reservation dispatcher (busy-until, the
// default, and interval mode; and busy-until with engine compaction). Events/s should not
// fall with N. heap-MB is the live heap after the run (without compaction the simulation
// keeps every request and batch, so that is about the peak; the process's peak RSS is the
// better figure: run one sub-benchmark per process under /usr/bin/time -v). `plan bench
// speed` runs the same cases.
func BenchmarkSimScale(b *testing.B) {
	for _, mode := range []string{simscale.ModeBusyUntil, simscale.ModeInterval, simscale.ModeBusyUntilRetain} {
		for _, k := range []int{1, 4, 16} {
			c := scaleCase(b, mode, k)
			b.Run(c.Name(mode), func(b *testing.B) {
				meter := simbench.Start(b)
				for i := 0; i < b.N; i++ {
					runtime.GC()
					s, err := c.Run()
					if err != nil {
						b.Fatal(err)
					}
					meter.Add(s.Engine.Events())
					meter.SampleHeap()
					runtime.KeepAlive(s)
				}
				meter.Report()
			})
		}
	}
}
