package pard

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
)

// Sample builds a small random PARD deployment from r: one pipeline of two to four modules
// as a chain or a DAG with a fan-out from the entry and a merge into the one sink, random
// latency tables and worker counts. The conformance harness runs every PARD policy on such
// deployments, so every one of them must accept it (TestSampleAccepted).
func Sample(r *rand.Rand) *dataplane.Deployment {
	n := 2 + r.IntN(3)
	spec := PipelineSpec{Name: "app", RateRPS: float64(50 + r.IntN(500))}
	var sum dataplane.Time
	dag := n >= 4 && r.IntN(2) == 0
	capacity := math.Inf(1)
	for k := 0; k < n; k++ {
		m := ModuleSpec{Name: fmt.Sprintf("m%d", k), GPU: "T4", Batch: 1 + r.IntN(8), Workers: 1 + r.IntN(3)}
		m.MaxWorkers = m.Workers + r.IntN(2)
		base := dataplane.Time(1000 + r.IntN(8000))
		m.LatUs = make([]dataplane.Time, m.Batch+1)
		for b := 1; b <= m.Batch; b++ {
			m.LatUs[b] = base + dataplane.Time(b-1)*base/3
		}
		switch {
		case k == 0:
		case dag && k == n-1:
			// Merge branch m1…m(n-3) with branch m(n-2): one sink, as the pipeline
			// policies require (PARD §3: an application is a DAG with one output).
			m.After = []string{fmt.Sprintf("m%d", n-3), fmt.Sprintf("m%d", n-2)}
		case dag && k == n-2:
			m.After = []string{"m0"} // the second branch of the fan-out from module 0
		default:
			m.After = []string{fmt.Sprintf("m%d", k-1)}
		}
		if k > 0 && r.IntN(3) == 0 {
			m.Prob = 0.2 + 0.6*r.Float64() // a conditional module
		}
		sum += 2 * m.LatUs[m.Batch]
		capacity = min(capacity, float64(m.Workers*m.Batch)/(float64(m.LatUs[m.Batch])/1e6))
		spec.Modules = append(spec.Modules, m)
	}
	// The planned rate is one the starting workers sustain (a plan would not promise more),
	// so the harness's loads below 1 are really under capacity.
	spec.RateRPS = min(spec.RateRPS, capacity)
	spec.SLO = sum + dataplane.Time(r.IntN(int(sum)+1))
	d, err := NewPipelineDeployment([]PipelineSpec{spec}, DefaultHop)
	if err != nil {
		panic(fmt.Sprintf("pard.Sample built an invalid deployment: %v", err)) // a bug in Sample
	}
	return d
}
