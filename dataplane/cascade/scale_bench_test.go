package cascade_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/simbench"
	"github.com/plan-dev/plan/sim"
)

// scaleBase is how many copies of the golden plan (2 V100s, 6 replicas) the 1× point of
// BenchmarkSimScale serves: 16 GPUs, so that a per-event cost linear in the GPUs shows
// against the per-request work at 4× and 16×.
const scaleBase = 8

// scaledDeployment is the golden cascade plan (testdata/cascade/golden-plan.json) laid out
// k times over k times the GPUs: copy c's replicas sit on GPUs 2c and 2c+1, every gear's
// QPS range and the workload's qps_max grow k-fold and each replica's share is divided by k,
// so every replica sees the load of the original plan at k times the rate and the
// simulator's work per request stays constant while N grows.
func scaledDeployment(tb testing.TB, k int) *dataplane.Deployment {
	tb.Helper()
	d, err := dpc.FromPlan(scaledPlan(tb, k))
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// scaledPlan is the plan scaledDeployment deploys.
func scaledPlan(tb testing.TB, k int) *formats.Plan {
	tb.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "cascade", "golden-plan.json"))
	if err != nil {
		tb.Fatal(err)
	}
	e := p.Provenance.Embedded
	per := 0
	for i := range e.Cluster.GPUs {
		per += e.Cluster.GPUs[i].Count
		e.Cluster.GPUs[i].Count *= k
	}
	for i := range e.Workload.Cascades {
		e.Workload.Cascades[i].QPSMax *= float64(k)
	}
	cp := p.Cascade
	base := cp.Placement
	cp.Placement = nil
	for c := 0; c < k; c++ {
		for _, r := range base {
			gs := make([]int, len(r.GPUs))
			for i, g := range r.GPUs {
				gs[i] = g + c*per
			}
			cp.Placement = append(cp.Placement, formats.Replica{Model: r.Model, GPUs: gs})
		}
	}
	for gi := range cp.Gears {
		g := &cp.Gears[gi]
		g.QLo *= float64(k)
		g.QHi *= float64(k)
		for m, sh := range g.Share {
			var out []float64
			for c := 0; c < k; c++ {
				for _, x := range sh {
					out = append(out, x/float64(k))
				}
			}
			g.Share[m] = out
		}
	}
	return p
}

// BenchmarkSimScale checks that simulation cost grows linearly with GPUs for CascadeServe: the golden plan
// at scaleBase×k copies (16, 64 and 256 GPUs) under Poisson arrivals at half the scaled
// qps_max for 2 simulated seconds, per policy; cascadeserve-scan is CascadeServe routing
// and forwarding by the scans the index of deficit.go replaced (the before of the same
// process). events/cpu-s should not fall with N.
func BenchmarkSimScale(b *testing.B) {
	for _, pol := range []string{dpc.PolicyGears, dpc.PolicyGears + "-scan", dpc.PolicyCocktail} {
		for _, k := range []int{1, 4, 16} {
			dep := scaledDeployment(b, scaleBase*k)
			b.Run(fmt.Sprintf("%s/gpus=%d", pol, len(dep.Topo.GPUs)), func(b *testing.B) {
				benchRun(b, dep, pol, 0.5, 2*dataplane.Second)
			})
		}
	}
}

// benchRun simulates dep under policy pol at load × the application's rate for dur, b.N
// times, and reports the event rates (wall and CPU time) and the live heap after a run.
func benchRun(b *testing.B, dep *dataplane.Deployment, pol string, load float64, dur dataplane.Time) {
	spec, _ := sim.ParseArrival("poisson")
	meter := simbench.Start(b)
	name, scan := strings.CutSuffix(pol, "-scan")
	for i := 0; i < b.N; i++ {
		runtime.GC()
		p, err := dpc.Registry().New(dep, dataplane.Config{Policy: name}, dpc.PolicyGears)
		if err != nil {
			b.Fatal(err)
		}
		if cp, ok := p.(*dpc.Policy); ok {
			dpc.SetScan(cp, scan)
		}
		rate := dep.Apps[0].RateRPS * load
		src, err := spec.New(rate, dep.Apps[0].Name, 1)
		if err != nil {
			b.Fatal(err)
		}
		s, err := sim.New(dep, p, []sim.Source{src}, sim.Options{Duration: dur, Seed: 1,
			ExpectedRequests: int(rate*float64(dur)/1e6*1.1 + 1024)})
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
}
