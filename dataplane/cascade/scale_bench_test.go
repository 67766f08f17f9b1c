package cascade_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/base/simbench"
	"github.com/plan-dev/plan/sim/simscale"
)

// scaleBase is how many copies of the golden plan the 1× point of BenchmarkSimScale serves
// (simscale.CascadeBase).
const scaleBase = simscale.CascadeBase

// goldenPlan is the golden cascade plan (2 V100s, 6 replicas).
var goldenPlan = filepath.Join("..", "..", "testdata", "cascade", "golden-plan.json")

// scaledDeployment is the golden plan laid out k times over k times the GPUs
// (dpc.ScaledDeployment).
func scaledDeployment(tb testing.TB, k int) *dataplane.Deployment {
	tb.Helper()
	d, err := dpc.FromPlan(scaledPlan(tb, k))
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// scaledPlan is the plan scaledDeployment deploys (dpc.ScalePlan).
func scaledPlan(tb testing.TB, k int) *formats.Plan {
	tb.Helper()
	p, err := formats.ReadInto[*formats.Plan](goldenPlan, intree.Sections())
	if err != nil {
		tb.Fatal(err)
	}
	if err := dpc.ScalePlan(p, k); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkSimScale checks that simulation cost grows linearly with GPUs for CascadeServe: the golden plan
// at scaleBase×k copies (16, 64 and 256 GPUs) under Poisson arrivals at half the scaled
// qps_max for 2 simulated seconds, per policy (simscale.Cascade; `plan bench speed` runs the
// same cases); cascadeserve-scan is CascadeServe routing and forwarding by the scans the
// index of deficit.go replaced (the before of the same process). events/cpu-s should not
// fall with N.
func BenchmarkSimScale(b *testing.B) {
	data, err := os.ReadFile(goldenPlan)
	if err != nil {
		b.Fatal(err)
	}
	for _, pol := range []string{dpc.PolicyGears, dpc.PolicyGears + "-scan", dpc.PolicyCocktail} {
		name, scan := strings.CutSuffix(pol, "-scan")
		for _, k := range []int{1, 4, 16} {
			c, err := simscale.Cascade(intree.Sections(), data, name, k, 0)
			if err != nil {
				b.Fatal(err)
			}
			c.Tweak = func(p dataplane.Policy) {
				if cp, ok := p.(*dpc.Policy); ok {
					dpc.SetScan(cp, scan)
				}
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
					meter.SampleHeap()
					runtime.KeepAlive(s)
				}
				meter.Report()
			})
		}
	}
}
