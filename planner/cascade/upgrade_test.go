package cascade

import (
	"context"
	"testing"
	"time"
)

// TestUpgradePass is the regression test of the planner's upgrade pass (Llama stand-ins,
// 10,000 samples, 12 ranges to 15 QPS, p95 ≤ 6 s): without it the 6-GPU plan gave every
// range above 7.5 QPS to OpenLlama-3B alone (weighted accuracy 0.5706, below the 5-GPU
// plan's 0.6212); with it no range falls back to the cheapest cascade while a more
// accurate one fits, and 6 GPUs plan at least what 5 do.
func TestUpgradePass(t *testing.T) {
	if testing.Short() {
		t.Skip("plans the Llama set-up twice")
	}
	f := Llama
	c := benchWorkload(f, 15, 12, 6*time.Second, 0)
	c.Validation = f.Generate(10000, 1)
	tk := standinTask(t, f, 10000, 1)
	acc := map[int]float64{}
	for _, n := range []int{5, 6} {
		res, err := Plan(context.Background(), tk, c, Hardware{GPU: f.GPU, N: n, PerServer: 2, Mem: f.GPUMem}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		acc[n] = res.Acc
		for i, g := range res.Gears {
			if len(g.C.Models) == 1 && tk.Models[g.C.Models[0]].Name == "openllama-3b" {
				t.Errorf("%d GPUs: gear %d (QPS < %g) serves OpenLlama-3B alone", n, i, g.QHi)
			}
		}
	}
	t.Logf("weighted accuracy: 5 GPUs %.4f, 6 GPUs %.4f", acc[5], acc[6])
	if acc[6] < acc[5] || acc[6] < 0.6 {
		t.Errorf("6 GPUs plan %.4f, 5 GPUs %.4f: want 6 ≥ 5 and ≥ 0.60", acc[6], acc[5])
	}
}
