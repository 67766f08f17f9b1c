package cascade

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/solver"
)

// TestPlanSolverFailure: when the LP engine fails (no solver built), every strategy's plan
// is an error naming the LP, never a plan whose gears have no shares (Document indexed
// the missing shares and panicked: `plan bench cascade --setups llama` without a solver).
func TestPlanSolverFailure(t *testing.T) {
	broken := errors.New("engine unavailable")
	fail := func(context.Context, *solver.Model, solver.Options) (*solver.Result, error) { return nil, broken }
	tests := []struct {
		name  string
		lat   time.Duration
		acc   float64
		strat string
	}{
		{"accuracy cascadeserve", 0, 0.55, StrategyCascadeServe},
		{"accuracy no-cascade", 0, 0.55, StrategyNoCascade},
		{"latency cascadeserve", 8 * time.Second, 0, StrategyCascadeServe},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := benchWorkload(Llama, 6, 4, tc.lat, tc.acc)
			tk, probs := NewTask(c, "workload: cascades[0]", []*formats.Profile{Llama.Profile()}, Llama.GPU, Llama.GPUMem)
			if probs != nil {
				t.Fatal(probs)
			}
			hw := Hardware{GPU: Llama.GPU, N: 3, PerServer: 2, Mem: Llama.GPUMem}
			res, err := Plan(context.Background(), tk, c, hw, Options{Strategy: tc.strat, lpSolve: fail})
			if err == nil {
				t.Fatalf("plan succeeded with a failing LP engine: %d gears", len(res.Gears))
			}
			if !errors.Is(err, broken) && !strings.Contains(err.Error(), "no cascade") {
				t.Errorf("error %q: want the engine's failure", err)
			}
		})
	}
}
