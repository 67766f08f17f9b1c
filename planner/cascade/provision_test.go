package cascade

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// burstyHistogram: 90% of the time at 1,200 QPS, 9.5% at 3,000, 0.5% at the 7,600 peak (a
// Twitter-like shape: peaks rare and short).
func burstyHistogram() []float64 {
	h := make([]float64, 7601)
	h[1200], h[3000], h[7600] = 0.9, 0.095, 0.005
	return h
}

func TestProvisionRate(t *testing.T) {
	tests := []struct {
		name string
		hist []float64
		p    float64
		want float64
	}{
		{"bursty p95", burstyHistogram(), 0.95, 3000},
		{"bursty p99.9", burstyHistogram(), 0.999, 7600},
		{"no histogram", nil, 0.95, 7600},
		{"flat", []float64{0, 0, 1}, 0.95, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &cascadesec.Cascade{QPSHistogram: tc.hist}
			if got := provisionRate(c, 7600, tc.p); got != tc.want {
				t.Errorf("provisionRate = %g, want %g", got, tc.want)
			}
		})
	}
}

// TestBaselineProvisioning: DynBa sized by the paper's rule (peaks queued) needs fewer GPUs
// than sized for the peak (--min-gpus gave DynBa 8 GPUs where the paper's
// 4 absorb short peaks), and its gear still covers qps_max.
func TestBaselineProvisioning(t *testing.T) {
	c := benchWorkload(BERT, 7600, 8, 400*time.Millisecond, 0)
	c.QPSHistogram = burstyHistogram()
	tk, probs := NewTask(c, "workload: cascades[0]", []*formats.Profile{BERT.Profile()}, BERT.GPU, BERT.GPUMem)
	if probs != nil {
		t.Fatal(probs)
	}
	hw := Hardware{GPU: BERT.GPU, N: 10, PerServer: 2, Mem: BERT.GPUMem}
	gpus := map[string]int{}
	for _, prov := range []string{ProvisionQueue, ProvisionPeak} {
		res, err := Plan(context.Background(), tk, c, hw, Options{Strategy: StrategyDynBa, Accuracy: 0.845, Latency: 400 * time.Millisecond, MinGPUs: true, Provision: prov})
		if err != nil {
			t.Fatalf("%s: %v", prov, err)
		}
		if g := res.Gears[len(res.Gears)-1]; g.QHi != 7600 {
			t.Errorf("%s: last gear ends at %g, want qps_max 7600", prov, g.QHi)
		}
		gpus[prov] = res.HW.N
		t.Logf("%s: %d GPUs, %s", prov, res.HW.N, tk.Names(&res.Gears[0].C))
	}
	if gpus[ProvisionQueue] >= gpus[ProvisionPeak] {
		t.Errorf("DynBa: %d GPUs provisioned by queueing, %d for the peak: want fewer", gpus[ProvisionQueue], gpus[ProvisionPeak])
	}
}

// TestMSPlusAccuracySLO: under an accuracy SLO MS+ keeps its capacity rule (the most
// accurate single model whose fleet throughput covers each QPS range), so it is not the
// no-cascade ablation (both planned the same models per range).
func TestMSPlusAccuracySLO(t *testing.T) {
	c := benchWorkload(BERT, 7600, 8, 0, 0.835)
	tk, probs := NewTask(c, "workload: cascades[0]", []*formats.Profile{BERT.Profile()}, BERT.GPU, BERT.GPUMem)
	if probs != nil {
		t.Fatal(probs)
	}
	hw := Hardware{GPU: BERT.GPU, N: 2, PerServer: 2, Mem: BERT.GPUMem}
	models := map[string][]string{}
	for _, st := range []string{StrategyMSPlus, StrategyNoCascade} {
		res, err := Plan(context.Background(), tk, c, hw, Options{Strategy: st})
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		for _, g := range res.Gears {
			models[st] = append(models[st], tk.Names(&g.C))
		}
		t.Logf("%s: acc %.4f %v", st, res.Acc, models[st])
	}
	if slices.Equal(models[StrategyMSPlus], models[StrategyNoCascade]) {
		t.Errorf("MS+ plans the same model per range as no-cascade: %v", models[StrategyMSPlus])
	}
	// MS+'s rule: the model per range never gets more accurate as QPS rises.
	var prev float64 = 2
	for _, m := range models[StrategyMSPlus] {
		a := tk.Accuracy(slices.IndexFunc(tk.Models, func(x ModelInfo) bool { return x.Name == m }))
		if a > prev+1e-12 {
			t.Errorf("MS+ serves %s (acc %.4f) above a range served by a less accurate model", m, a)
		}
		prev = a
	}
}
