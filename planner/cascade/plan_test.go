package cascade

import (
	"context"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

func benchWorkload(f Family, qmax float64, n int, lat time.Duration, acc float64) *cascadesec.Cascade {
	c := &cascadesec.Cascade{Name: f.Name, Models: f.Names(), QPSMax: qmax, QPSRanges: n, Validation: f.Generate(2000, 1)}
	if lat > 0 {
		c.LatencySLO = &cascadesec.LatencySLO{Percentile: 0.95, Latency: formats.Duration(lat)}
	} else {
		c.AccuracySLO = acc
	}
	return c
}

func TestPlanStrategies(t *testing.T) {
	tests := []struct {
		name  string
		f     Family
		qmax  float64
		gpus  int
		lat   time.Duration
		acc   float64
		strat string
	}{
		{"bert latency", BERT, 7600, 2, 400 * time.Millisecond, 0, StrategyCascadeServe},
		{"bert accuracy", BERT, 7600, 2, 0, 0.84, StrategyCascadeServe},
		{"bert dynba", BERT, 7600, 4, 400 * time.Millisecond, 0, StrategyDynBa},
		{"bert no-cascade", BERT, 7600, 2, 400 * time.Millisecond, 0, StrategyNoCascade},
		{"bert cocktail+", BERT, 7600, 4, 400 * time.Millisecond, 0, StrategyCocktail},
		{"llama latency", Llama, 6, 4, 8 * time.Second, 0, StrategyCascadeServe},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := benchWorkload(tc.f, tc.qmax, 8, tc.lat, tc.acc)
			tk, probs := NewTask(c, "workload: cascades[0]", []*formats.Profile{tc.f.Profile()}, tc.f.GPU, tc.f.GPUMem)
			if probs != nil {
				t.Fatal(probs)
			}
			hw := Hardware{GPU: tc.f.GPU, N: tc.gpus, PerServer: 2, Mem: tc.f.GPUMem}
			res, err := Plan(context.Background(), tk, c, hw, Options{Strategy: tc.strat})
			if err != nil {
				t.Fatal(err)
			}
			if single := tc.strat == StrategyDynBa || tc.strat == StrategyCocktail; single && (len(res.Gears) != 1 || len(res.Gears[0].C.Models) != 1) {
				t.Errorf("%s: want one single-model gear, got %d gears", tc.strat, len(res.Gears))
			}
			t.Logf("acc %.4f, %d gears, %d replicas, %d LPs, %d sims, %v", res.Acc, len(res.Gears), len(res.Placement), res.LPs, res.Sims, res.Elapsed)
			for _, g := range res.Gears {
				t.Logf("  [%g,%g) %s b1=%d p95=%.0fms sustained=%v", g.QLo, g.QHi, tk.Names(&g.C), g.B1, g.Sim.PLat*1000, g.Sim.Sustained)
			}
		})
	}
}
