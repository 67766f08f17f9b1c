package dyorcsys

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems/dyorcsys/dyorcsim"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/dyorc"
)

// autopilotPlan is testdata/autopilot/dyorc-plan.json: a DyOrc plan with its inputs embedded.
func autopilotPlan(t *testing.T) *formats.Plan {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join(dir, "autopilot", "dyorc-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNoSimulator: a system built without its simulator refuses to plan, re-solve or size
// a plan (ErrNoSimulator) instead of falling back to planner/dyorc's fitted formula, which
// is not the prediction `plan solve` judges the plan by.
func TestNoSimulator(t *testing.T) {
	s := New(system.Handle{}).(dyorcSystem)
	p := autopilotPlan(t)
	if _, err := s.NewPlanner().Solve(context.Background(), planner.Inputs{Workload: p.Provenance.Embedded.Workload, Cluster: p.Provenance.Embedded.Cluster}, planner.Settings{}); !errors.Is(err, ErrNoSimulator) {
		t.Errorf("Solve: err = %v, want ErrNoSimulator", err)
	}
	if _, err := s.Checker().Resolve(context.Background(), p, 0); !errors.Is(err, ErrNoSimulator) {
		t.Errorf("Resolve: err = %v, want ErrNoSimulator", err)
	}
	if _, err := s.Capacity(p, nil); !errors.Is(err, ErrNoSimulator) {
		t.Errorf("Capacity: err = %v, want ErrNoSimulator", err)
	}
}

// TestCapacityUsesHandle: the system's capacity runs the simulator it was handed, and gives
// what planner/dyorc gives with that simulator (not the fitted formula, sim nil).
func TestCapacityUsesHandle(t *testing.T) {
	var calls atomic.Int64
	counting := func(ctx context.Context, p *formats.Plan, dep *dataplane.Deployment, policies *dataplane.Registry, policy string) (bool, error) {
		calls.Add(1)
		return dyorcsim.PredictAtRates(ctx, p, dep, policies, policy)
	}
	p := autopilotPlan(t)
	got, err := New(system.Handle{Predict: counting}).(dyorcSystem).Capacity(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() == 0 {
		t.Fatal("Capacity ran no simulation: the system did not size with its Handle.Predict")
	}
	want, err := dyorc.Capacity(p, dyorcsim.PredictAtRates)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("Capacity = %v, want planner/dyorc's with the simulator %v", got, want)
	}
	formula, err := dyorc.Capacity(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if maps.Equal(got, formula) {
		t.Errorf("Capacity = %v, the fitted formula's: the test cannot tell the simulator was used", got)
	}
}
