package qlmsys

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/planner"
	pq "github.com/plan-dev/plan/planner/qlm"
	"github.com/plan-dev/plan/sim"
)

// ragInputs is testdata/qlm's RAG class on testdata/qlm/cluster.yaml: a solve that sizes its one instance by
// simulation.
func ragInputs(t *testing.T) planner.Inputs {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "testdata", "qlm")
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "workload-rag.yaml"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	c, err := formats.ReadInto[*formats.Cluster](filepath.Join(dir, "cluster.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, "profile.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return planner.Inputs{Workload: w, Cluster: c, Profiles: []*formats.Profile{p}}
}

// TestPlannerUsesHandle: the system's planner sizes and checks its plan with the simulator
// it was handed at construction, for the placement and the cost solve alike; built
// without one, every solve and re-solve fails with pq.ErrNoSimulator (no package default
// to fall back on).
func TestPlannerUsesHandle(t *testing.T) {
	var calls atomic.Int64
	counting := func(dep *dataplane.Deployment, policies *dataplane.Registry, pol string, classes []llmspec.LLMClass, dur, warmup dataplane.Time, seed uint64) (*workload.Point, error) {
		calls.Add(1)
		return sim.PoissonPoint(dep, policies, pol, classes, dur, warmup, seed)
	}
	in := ragInputs(t)
	for _, objective := range []string{"", planner.ObjectiveCost} {
		t.Run("objective="+objective, func(t *testing.T) {
			calls.Store(0)
			s := planner.Settings{Objective: objective, Deterministic: true}
			p, err := New(system.Handle{Point: counting}).(qlmSystem).NewPlanner().Solve(context.Background(), in, s)
			if err != nil {
				t.Fatal(err)
			}
			if calls.Load() == 0 {
				t.Error("the solve ran no simulation: the planner did not size with its Handle.Point")
			}
			if _, err := New(system.Handle{}).(qlmSystem).NewPlanner().Solve(context.Background(), in, s); !errors.Is(err, pq.ErrNoSimulator) {
				t.Errorf("solve without a simulator: err = %v, want pq.ErrNoSimulator", err)
			}
			if _, err := New(system.Handle{}).(qlmSystem).Checker().Resolve(context.Background(), p, 0); !errors.Is(err, pq.ErrNoSimulator) {
				t.Errorf("re-solve without a simulator: err = %v, want pq.ErrNoSimulator", err)
			}
		})
	}
}

// TestCapacityProbesUseHandleProbe: where the handle gives a Probe (sim.PoissonProbe in the
// registry), the placement solve runs its instances' capacity probes on it, some of them
// stopped past capacity, and verifies its plan on Point.
func TestCapacityProbesUseHandleProbe(t *testing.T) {
	var points, probes, stopped atomic.Int64
	point := func(dep *dataplane.Deployment, policies *dataplane.Registry, pol string, classes []llmspec.LLMClass, dur, warmup dataplane.Time, seed uint64) (*workload.Point, error) {
		points.Add(1)
		return sim.PoissonPoint(dep, policies, pol, classes, dur, warmup, seed)
	}
	probe := func(dep *dataplane.Deployment, policies *dataplane.Registry, pol string, classes []llmspec.LLMClass, dur, warmup dataplane.Time, seed uint64) (*workload.Point, error) {
		probes.Add(1)
		p, err := sim.PoissonProbe(dep, policies, pol, classes, dur, warmup, seed)
		if err == nil && p.Stopped {
			stopped.Add(1)
		}
		return p, err
	}
	in := ragInputs(t)
	// A mix of its own (an SLO no other test sizes for): planner/qlm caches each mix's rate.
	w := *in.Workload
	w.Sections = maps.Clone(w.Sections) // a copy: the fixture's own sections unchanged
	cls := append([]llmspec.LLMClass(nil), llmspec.ClassesOf(&w)...)
	cls[0].SLO = formats.Duration(2100 * time.Millisecond)
	in.Workload = llmspec.SetClasses(&w, cls)
	if _, err := New(system.Handle{Point: point, Probe: probe}).(qlmSystem).NewPlanner().Solve(context.Background(), in, planner.Settings{Deterministic: true}); err != nil {
		t.Fatal(err)
	}
	if probes.Load() == 0 || stopped.Load() == 0 || points.Load() == 0 {
		t.Errorf("probes %d (%d stopped), points %d: want the capacity probes on Probe, some stopped, and the plan's check on Point", probes.Load(), stopped.Load(), points.Load())
	}
}
