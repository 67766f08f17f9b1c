package dyorc

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/simbench"
	"github.com/plan-dev/plan/sim"
)

// BenchmarkSimScale checks that simulation cost grows linearly with GPUs for DyOrc: the bundled MIX
// workload (testdata/dyorc/workload.json) on 8, 32 and 128 A800s at 1, 4 and 16 times its
// rates (half the per-GPU load of the package's tests, which run it at 1× on 4 GPUs: at
// their load the queues grow over a minute and the cost per event with them) for 60
// simulated seconds, per mode. events/cpu-s should not fall with N.
func BenchmarkSimScale(b *testing.B) {
	w := loadWorkflow(b, "workload.json")
	for _, pol := range []string{"dyorc", "dyorc-ray"} {
		for _, k := range []int{1, 4, 16} {
			g := 8 * k
			b.Run(fmt.Sprintf("%s/gpus=%d", pol, g), func(b *testing.B) {
				dep := spreadDeployment(b, w, g)
				sp, ok := Registry().Lookup(pol)
				if !ok {
					b.Fatalf("no policy %s", pol)
				}
				meter := simbench.Start(b)
				for i := 0; i < b.N; i++ {
					runtime.GC()
					p, err := sp.New(dataplane.Config{Policy: pol})
					if err != nil {
						b.Fatal(err)
					}
					var srcs []sim.Source
					for a := range dep.Apps {
						s, err := sim.ArrivalSpec{Kind: "poisson"}.New(max(dep.Apps[a].RateRPS, 0.5)*float64(k), dep.Apps[a].Name, uint64(a)+1)
						if err != nil {
							b.Fatal(err)
						}
						srcs = append(srcs, s)
					}
					s, err := sim.New(dep, p, srcs, sim.Options{Duration: 60 * dataplane.Second, Seed: 1, Jitter: 0.05})
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

// spreadDeployment places w on g A800 GPUs (8 per server), each service warm on GPU
// service mod g: the benchmarks' cluster at any size.
func spreadDeployment(tb testing.TB, w *Workflow, g int) *dataplane.Deployment {
	tb.Helper()
	warm := make([][]int, g)
	for sv := range w.Services {
		warm[sv%g] = append(warm[sv%g], sv)
	}
	dep, err := NewDeployment(w, Cluster{GPUs: g, PerServer: 8, MemBytes: 80e9, Type: "A800"}, warm, DefaultNet)
	if err != nil {
		tb.Fatal(err)
	}
	return dep
}
