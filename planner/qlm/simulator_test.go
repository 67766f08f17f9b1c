package qlm

import (
	"errors"
	"testing"

	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
)

// testSim is the simulator the registry hands the planner (internal/registry/systems/qlmsys):
// the tests size by the same one, passed as the solve's dependency.
var testSim PointSimulator = sim.PoissonPoint

// TestNoSimulator: a solve handed no simulator fails with ErrNoSimulator rather than
// sizing by nothing; there is no package default to fall back on.
func TestNoSimulator(t *testing.T) {
	in := fixtureInputs(t, "workload-rag.yaml", "cluster-1xA100.yaml", "profile.json")
	w := in.Workload
	if _, err := Solve(in, Options{}); !errors.Is(err, ErrNoSimulator) {
		t.Errorf("Solve without Sim: err = %v, want ErrNoSimulator", err)
	}
	if _, err := SolveCost(t.Context(), in, Options{}, 0, planner.DefaultGap); !errors.Is(err, ErrNoSimulator) {
		t.Errorf("SolveCost without Sim: err = %v, want ErrNoSimulator", err)
	}
	if _, err := InstanceRate(nil, &in.Profiles[0].LLMs[0], w, llmspec.ClassesOf(w)[0].Model); !errors.Is(err, ErrNoSimulator) {
		t.Errorf("InstanceRate without a simulator: err = %v, want ErrNoSimulator", err)
	}
}
