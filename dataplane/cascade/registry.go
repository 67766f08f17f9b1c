package cascade

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// NewPolicy builds one of this data plane's policies (cfg.Policy empty = "cascadeserve").
func NewPolicy(cfg dataplane.Config) (dataplane.Policy, error) {
	return Registry().New(nil, cfg, PolicyGears)
}

// Sample builds a small random cascade deployment from r for the conformance harness: two
// or three models with random latency curves and per-sample outputs, one or two GPUs, two
// to four gears with random cascades, thresholds, shares and triggers.
func Sample(r *rand.Rand) *dataplane.Deployment {
	k := 2 + r.IntN(2)
	n := 50 + r.IntN(100)
	t := &Task{Name: "sample", N: n}
	for m := 0; m < k; m++ {
		base, per := 1000+float64(r.IntN(8000)), float64(r.IntN(2000))
		mi := ModelInfo{Name: fmt.Sprintf("m%d", m), LatUs: []float64{0}, Parts: []int64{int64(1+r.IntN(4)) << 28}}
		for b := 1; b <= 32; b++ {
			mi.LatUs = append(mi.LatUs, base+per*float64(b))
		}
		mi.Rt1, mi.RtOpt = mi.LatUs[1]/1e6, mi.LatUs[32]/32/1e6
		t.Models = append(t.Models, mi)
		cert, right := make([]float64, n), make([]bool, n)
		for s := range cert {
			cert[s] = r.Float64()
			right[s] = r.Float64() < 0.5+cert[s]/2
		}
		t.Cert, t.Correct = append(t.Cert, cert), append(t.Correct, right)
	}
	nGPU := 1 + r.IntN(2)
	cp := &cascadesec.CascadePlan{Task: "sample", PollMs: 50 + float64(r.IntN(100)), Alpha: float64(1 + r.IntN(8)), MaxBatch: 64}
	reps := map[string]int{}
	for m := range t.Models {
		for g := 0; g < nGPU; g++ {
			if g == 0 || r.IntN(2) == 0 {
				cp.Placement = append(cp.Placement, cascadesec.Replica{Model: t.Models[m].Name, GPUs: []int{g}})
				reps[t.Models[m].Name]++
			}
		}
	}
	ng := 2 + r.IntN(3)
	for gi := 0; gi < ng; gi++ {
		perm := r.Perm(k)[:1+r.IntN(k)]
		g := cascadesec.Gear{QLo: float64(gi) * 500 / float64(ng), QHi: float64(gi+1) * 500 / float64(ng), Share: map[string][]float64{}, Trigger: map[string]int{}}
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
	d, err := NewDeployment(cp, t, Hardware{GPU: "V100", N: nGPU, PerServer: 2, Mem: 32 << 30}, 200*time.Millisecond, 500)
	if err != nil {
		panic(fmt.Sprintf("cascade.Sample built an invalid deployment: %v", err))
	}
	return d
}
