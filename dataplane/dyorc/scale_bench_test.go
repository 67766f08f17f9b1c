package dyorc_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/base/simbench"
	"github.com/plan-dev/plan/sim/simscale"
)

// BenchmarkSimScale checks that simulation cost grows linearly with GPUs for DyOrc: the bundled MIX
// workload (testdata/dyorc/workload.json) on 8, 32 and 128 A800s at 1, 4 and 16 times its
// rates (half the per-GPU load of the package's tests, which run it at 1× on 4 GPUs: at
// their load the queues grow over a minute and the cost per event with them) for 60
// simulated seconds, per mode (simscale.DyOrc; `plan bench speed` runs the same cases).
// events/cpu-s should not fall with N.
func BenchmarkSimScale(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dyorc", "workload.json"))
	if err != nil {
		b.Fatal(err)
	}
	for _, pol := range []string{"dyorc", "dyorc-ray"} {
		for _, k := range []int{1, 4, 16} {
			c, err := simscale.DyOrc(intree.Sections(), data, pol, k, 0)
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
