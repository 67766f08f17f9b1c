package cascade

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	pc "github.com/plan-dev/plan/planner/cascade"
)

// NewPolicy builds one of this data plane's policies (cfg.Policy empty = "cascadeserve").
func NewPolicy(cfg dataplane.Config) (dataplane.Policy, error) {
	return Registry().New(nil, cfg, PolicyGears)
}

// Sample builds a small random cascade deployment from r for the conformance harness: two
// or three BERT stand-ins with random validation samples, one or two GPUs, two to four
// gears with random cascades, thresholds, shares and triggers.
func Sample(r *rand.Rand) *dataplane.Deployment {
	f := pc.BERT
	k := 2 + r.IntN(2)
	f.Models = append([]pc.StandinModel(nil), pc.BERT.Models[:k]...)
	f.MaxBatch = 32
	c := &formats.Cascade{Name: "sample", Models: f.Names(), QPSMax: 500, Validation: f.Generate(50+r.IntN(100), r.Uint64())}
	t, probs := pc.NewTask(c, "sample", []*formats.Profile{f.Profile()}, f.GPU, f.GPUMem)
	if probs != nil {
		panic(fmt.Sprintf("cascade.Sample: %v", probs))
	}
	n := 1 + r.IntN(2)
	cp := &formats.CascadePlan{Task: "sample", PollMs: 50 + float64(r.IntN(100)), Alpha: float64(1 + r.IntN(8)), MaxBatch: 64}
	reps := map[string]int{}
	for m := range t.Models {
		for g := 0; g < n; g++ {
			if g == 0 || r.IntN(2) == 0 {
				cp.Placement = append(cp.Placement, formats.Replica{Model: t.Models[m].Name, GPUs: []int{g}})
				reps[t.Models[m].Name]++
			}
		}
	}
	ng := 2 + r.IntN(3)
	for gi := 0; gi < ng; gi++ {
		perm := r.Perm(k)[:1+r.IntN(k)]
		g := formats.Gear{QLo: float64(gi) * 500 / float64(ng), QHi: float64(gi+1) * 500 / float64(ng), Share: map[string][]float64{}, Trigger: map[string]int{}}
		for i, m := range perm {
			name := t.Models[m].Name
			g.Models = append(g.Models, name)
			if i > 0 {
				g.Thr = append(g.Thr, r.Float64())
			}
			sh := make([]float64, reps[name])
			sum := 0.0
			for j := range sh {
				sh[j] = r.Float64() + 0.01
				sum += sh[j]
			}
			for j := range sh {
				sh[j] /= sum
			}
			g.Share[name] = sh
			g.Trigger[name] = 1
			if i == 0 {
				g.Trigger[name] = 1 + r.IntN(8)
			}
		}
		cp.Gears = append(cp.Gears, g)
	}
	d, err := NewDeployment(cp, t, pc.Hardware{GPU: f.GPU, N: n, PerServer: 2, Mem: f.GPUMem}, 200*time.Millisecond, 500)
	if err != nil {
		panic(fmt.Sprintf("cascade.Sample built an invalid deployment: %v", err))
	}
	return d
}
