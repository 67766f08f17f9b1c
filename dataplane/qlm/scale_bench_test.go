package qlm

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/simbench"
	"github.com/plan-dev/plan/sim"
)

// scaleBase is the number of instances of BenchmarkSimScale's 1× point.
const scaleBase = 8

// scaledDeployment is a fixed QLM set-up at k × scaleBase instances and k times the rate:
// A100 instances alternately loaded with the small (7B) and large (13B) models of Sample's
// profiles, an interactive class on each model and a batch class on the small one, at a
// per-instance rate that keeps the instances busy without overload. Only N grows; the work
// per request stays the same.
func scaledDeployment(tb testing.TB, k int) *dataplane.Deployment {
	tb.Helper()
	return mixedDeployment(tb, scaleBase*k, 1)
}

// mixedDeployment is the set-up of scaledDeployment at n instances and load × its rate
// (the equivalence tests of stepset_test.go run it too).
func mixedDeployment(tb testing.TB, n int, load float64) *dataplane.Deployment {
	tb.Helper()
	const kv = 6000
	setup := Setup{Profiles: []formats.LLMProfile{
		sampleProfile("small", "A100", 7, 1, kv),
		sampleProfile("large", "A100", 13, 1.6, kv/2),
	}}
	for i := 0; i < n; i++ {
		setup.Instances = append(setup.Instances, Instance{Name: fmt.Sprintf("i%d", i), GPU: "A100", Model: []string{"small", "large"}[i%2]})
	}
	tok := func(m float64) formats.TokenProfile {
		return formats.TokenProfile{Mean: m, Std: m / 2, Max: int(4 * m)}
	}
	per := float64(n) * load
	cls := []formats.LLMClass{
		{Name: "chat", Model: "small", SLO: formats.Duration(2 * time.Second), Interactive: true, RateRPS: 3 * per, InputTokens: tok(100), OutputTokens: tok(30)},
		{Name: "code", Model: "large", SLO: formats.Duration(4 * time.Second), Interactive: true, RateRPS: 1 * per, InputTokens: tok(200), OutputTokens: tok(40)},
		{Name: "batch", Model: "small", SLO: formats.Duration(30 * time.Second), RateRPS: 1 * per, InputTokens: tok(300), OutputTokens: tok(60)},
	}
	d, err := Build(cls, setup)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// BenchmarkSimScale checks that simulation cost grows linearly with instances for QLM and its vLLM baseline:
// 8, 32 and 128 instances at the same per-instance load for 10 simulated seconds.
// events/cpu-s should not fall with N.
func BenchmarkSimScale(b *testing.B) {
	for _, pol := range []string{PolicyQLM, PolicyFCFS} {
		for _, k := range []int{1, 4, 16} {
			dep := scaledDeployment(b, k)
			b.Run(fmt.Sprintf("%s/instances=%d", pol, len(dep.Topo.Workers)), func(b *testing.B) {
				meter := simbench.Start(b)
				for i := 0; i < b.N; i++ {
					runtime.GC()
					p, err := Registry().New(dep, dataplane.Config{Policy: pol, Params: paperAdmission}, PolicyQLM)
					if err != nil {
						b.Fatal(err)
					}
					spec, _ := sim.ParseArrival("poisson")
					var srcs []sim.Source
					for a := range dep.Apps {
						s, err := spec.New(dep.Apps[a].RateRPS, dep.Apps[a].Name, uint64(a)+1)
						if err != nil {
							b.Fatal(err)
						}
						srcs = append(srcs, s)
					}
					s, err := sim.New(dep, p, srcs, sim.Options{Duration: 10 * dataplane.Second, Seed: 1})
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
