package cascade_test

import (
	"math"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/sim"
)

// TestUtilizationOverPlanGPUs: a deployment holds the GPUs its placement uses, not the
// cluster's, so reported utilization is over the plan's GPUs (a plan on 2 of 8 GPUs busy all
// the time read as 25%); worker names keep the plan's GPU numbers.
func TestUtilizationOverPlanGPUs(t *testing.T) {
	const latUs = 10_000.0 // every batch 10 ms, whatever its size
	tk := &dpc.Task{Name: "t", N: 10}
	mi := dpc.ModelInfo{Name: "m", LatUs: []float64{0}, Parts: []int64{1 << 28}}
	for b := 1; b <= 8; b++ {
		mi.LatUs = append(mi.LatUs, latUs)
	}
	mi.Rt1, mi.RtOpt = latUs/1e6, latUs/8/1e6
	tk.Models = []dpc.ModelInfo{mi}
	tk.Cert, tk.Correct = [][]float64{make([]float64, 10)}, [][]bool{make([]bool, 10)}
	tests := []struct {
		name      string
		clusterN  int
		placement [][]int
		gpus      int
		workers   []string
	}{
		{"all GPUs", 2, [][]int{{0}, {1}}, 2, []string{"m@gpu[0]", "m@gpu[1]"}},
		{"2 of 8 GPUs", 8, [][]int{{0}, {1}}, 2, []string{"m@gpu[0]", "m@gpu[1]"}},
		{"GPUs 1 and 3 of 4", 4, [][]int{{3}, {1}}, 2, []string{"m@gpu[3]", "m@gpu[1]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cp := &cascadesec.CascadePlan{Task: "t", PollMs: 100, Alpha: 8, MaxBatch: 1,
				Gears: []cascadesec.Gear{{QLo: 0, QHi: 1000, Models: []string{"m"}, Thr: []float64{}, Share: map[string][]float64{"m": {0.5, 0.5}}, Trigger: map[string]int{"m": 1}}}}
			for _, g := range tc.placement {
				cp.Placement = append(cp.Placement, cascadesec.Replica{Model: "m", GPUs: g})
			}
			dep, err := dpc.NewDeployment(cp, tk, dpc.Hardware{GPU: "V100", N: tc.clusterN, PerServer: 2, Mem: 32 << 30}, time.Second, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(dep.Topo.GPUs) != tc.gpus {
				t.Errorf("%d GPUs in the topology, want the plan's %d", len(dep.Topo.GPUs), tc.gpus)
			}
			for i, w := range dep.Topo.Workers {
				if w.Name != tc.workers[i] {
					t.Errorf("worker %d: %q, want %q", i, w.Name, tc.workers[i])
				}
			}
			// 100 requests/s on two replicas, one request per 10 ms batch: each GPU half busy
			var ts []dataplane.Time
			for i := 0; i < 1000; i++ {
				ts = append(ts, dataplane.Time(i)*10_000)
			}
			pol, err := dpc.Registry().New(dep, dataplane.Config{}, dpc.PolicyGears)
			if err != nil {
				t.Fatal(err)
			}
			s, err := sim.New(dep, pol, []sim.Source{&sim.Times{T: ts}}, sim.Options{Duration: 10 * dataplane.Second, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.Run()
			if err != nil {
				t.Fatal(err)
			}
			if len(m.GPUTypes) != 1 || m.GPUTypes[0].GPUs != tc.gpus || math.Abs(m.GPUTypes[0].Busy-0.5) > 0.02 {
				t.Errorf("utilization %+v, want 50%% over %d GPUs", m.GPUTypes, tc.gpus)
			}
		})
	}
}
