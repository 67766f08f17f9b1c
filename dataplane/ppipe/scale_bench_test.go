package ppipe_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/simbench"
	"github.com/plan-dev/plan/sim"
)

// scaledDeployment is the 100-GPU fixture (hc1-100: 75 P4 + 25 L4, one GPU per server)
// with every GPU pool, partition and throughput multiplied by k: the same plan shape at
// k × 100 GPUs, so the simulator's work per request stays constant and only N grows.
func scaledDeployment(tb testing.TB, k int) *dataplane.Deployment {
	tb.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "sim", "hc1-100.json"))
	if err != nil {
		tb.Fatal(err)
	}
	for i := range p.Cluster.GPUs {
		p.Cluster.GPUs[i].Count *= k
	}
	for mi := range p.PPipe.Models {
		m := &p.PPipe.Models[mi]
		m.ThroughputRPS *= float64(k)
		m.TargetRPS *= float64(k)
		for pi := range m.Pipelines {
			pl := &m.Pipelines[pi]
			pl.ThroughputRPS *= float64(k)
			for di := range pl.Partitions {
				pl.Partitions[di].Count *= k
			}
		}
	}
	d, err := ppipe.FromPlan(p)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// newRun builds one load point as the sweep does (sim's newPointSim: one seeded source per
// application, tables presized), optionally compacting the engine every 64k events as a
// long-running driver does (finished requests and batches are then dropped, which bounds
// memory; the work is the same).
func newRun(cfg *sim.SweepConfig, load float64, compact bool) (*sim.Sim, error) {
	pol, err := cfg.Policies.New(cfg.Dep, cfg.Policy, "")
	if err != nil {
		return nil, err
	}
	srcs := make([]sim.Source, len(cfg.Dep.Apps))
	var expect float64
	for a := range cfg.Dep.Apps {
		rate := cfg.Dep.Apps[a].RateRPS * load
		expect += rate * float64(cfg.Duration) / 1e6
		if srcs[a], err = cfg.Arrival.New(rate, cfg.Dep.Apps[a].Name, sim.PointSeed(cfg.Seed, load, a)); err != nil {
			return nil, err
		}
	}
	o := sim.Options{Duration: cfg.Duration, Seed: sim.PointSeed(cfg.Seed, load, -1), ExpectedRequests: int(expect*1.1 + 1024)}
	if compact {
		o.CompactEvery = 1 << 16
		o.ExpectedAnswers = o.ExpectedRequests
		o.ExpectedRequests = 0
	}
	return sim.New(cfg.Dep, pol, srcs, o)
}

// scaleConfig is one BenchmarkSimScale load point: mode "interval" runs the dispatcher in
// interval mode, the others busy-until.
func scaleConfig(tb testing.TB, mode string, k int) *sim.SweepConfig {
	dep := scaledDeployment(tb, k)
	spec, _ := sim.ParseArrival("poisson")
	pc := dataplane.Config{Policy: "ppipe"}
	if mode == "interval" {
		pc.Params = map[string]string{"interval": "true"}
	}
	reg := dataplane.NewRegistry(ppipe.Policies()...)
	return &sim.SweepConfig{Policies: reg, Dep: dep, Policy: pc, Arrival: spec, Duration: 30 * dataplane.Second, Seed: 1}
}

// BenchmarkSimScale checks that simulation cost grows linearly with GPUs: 100, 400 and 1,600 GPUs
// at load 0.9 for 30 simulated seconds under the reservation dispatcher (busy-until, the
// default, and interval mode; and busy-until with engine compaction). Events/s should not
// fall with N. heap-MB is the live heap after the run (without compaction the simulation
// keeps every request and batch, so that is about the peak; the process's peak RSS is the
// better figure: run one sub-benchmark per process under /usr/bin/time -v).
func BenchmarkSimScale(b *testing.B) {
	for _, mode := range []string{"busy-until", "interval", "busy-until-compact"} {
		compact := mode == "busy-until-compact"
		for _, k := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/gpus=%d", mode, 100*k), func(b *testing.B) {
				cfg := scaleConfig(b, mode, k)
				meter := simbench.Start(b)
				for i := 0; i < b.N; i++ {
					runtime.GC()
					s, err := newRun(cfg, 0.9, compact)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Run(); err != nil {
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
