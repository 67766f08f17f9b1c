package cascade

import (
	"context"
	"errors"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
)

// TestPlanWithoutGPUs: a cluster whose GPU counts sum to 0 is infeasible for every strategy
// (the gear simulator used to index its first server and panic).
func TestPlanWithoutGPUs(t *testing.T) {
	c := longTable()
	tk, probs := NewTask(c, "workload: cascades[0]", []*formats.Profile{BERT.Profile()}, BERT.GPU, BERT.GPUMem)
	if probs != nil {
		t.Fatal(probs)
	}
	for _, s := range []string{"", StrategyNoCascade, StrategyNoSwitch} {
		t.Run("strategy="+s, func(t *testing.T) {
			_, err := Plan(context.Background(), tk, c, Hardware{GPU: BERT.GPU, N: 0, PerServer: 2, Mem: BERT.GPUMem}, Options{Strategy: s})
			if !errors.Is(err, planner.ErrInfeasible) {
				t.Fatalf("err %v, want ErrInfeasible", err)
			}
		})
	}
}
