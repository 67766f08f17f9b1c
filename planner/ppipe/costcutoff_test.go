package ppipe

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
)

// TestCostCutoff: on small cost instances whose full MILP proves its optimum quickly, reduced-
// cost fixing for a cut-off just above the optimum keeps it (the minimizing side of
// fixByReducedCost) and fixes something, a cut-off below the LP bound fixes nothing, and the
// cost cut-off phase from the whole-GPU start returns a plan and a bound within the gap of
// each other that bracket the optimum.
func TestCostCutoff(t *testing.T) {
	cases := []struct {
		name   string
		models int
		seed   uint64
		rate   float64
	}{
		{"1 model", 1, 7, 400},
		{"1 model, another profile", 1, 3, 250},
	}
	t.Parallel()
	var fixed atomic.Int64
	// The group returns once every parallel case has, so that fixed counts them all.
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				gpus := []gpuSpec{specL4, specT4}
				in := costInputs(gpus, c.models, c.seed, c.rate, nil)
				in.Cluster = sized(in.Cluster, func(formats.GPUPool) int { return 40 })
				opts := withDiagnostics(Options{Alpha: DefaultAlpha, MaxPartitions: 2, Gap: 0.01, Objective: planner.ObjectiveCost, Deterministic: true, TimeLimit: 5 * time.Minute}).withDefaults()
				p, err := prepare(in, opts)
				if err != nil {
					t.Fatal(err)
				}
				s := testSession(p)
				cfg := spaceConfig{P: 2, cost: []float64{defaultPrice("L4"), defaultPrice("T4")}}
				spaces, err := s.spaces(cfg)
				if err != nil {
					t.Fatal(err)
				}
				lcfg := cfg
				lcfg.relax = true
				lp, err := s.run(p.build(spaces, lcfg), solveCall{phase: "lp"})
				skipWithoutSolver(t, err)
				if err != nil {
					t.Fatal(err)
				}
				optRes, err := s.run(p.build(spaces, cfg), solveCall{phase: "full", gap: 1e-9})
				if err != nil {
					t.Fatal(err)
				}
				opt := optRes.Objective

				full := p.build(spaces, cfg)
				n := fixByReducedCost(full.m, lp, opt*(1+1e-6))
				fixed.Add(int64(n))
				res, err := s.run(full, solveCall{phase: "fixed", gap: 1e-9})
				if err != nil {
					t.Fatalf("after fixing %d columns: %v", n, err)
				}
				if math.Abs(res.Objective-opt) > 1e-6*opt {
					t.Errorf("optimum %.9g after fixing %d columns, %.9g before", res.Objective, n, opt)
				}
				below := p.build(spaces, cfg)
				if n := fixByReducedCost(below.m, lp, lp.Objective*0.99); n != 0 {
					t.Errorf("a cut-off below the LP bound %.6g fixed %d columns", lp.Objective, n)
				}

				start := costStart(p, spaces, cfg.cost)
				if start == nil {
					t.Fatal("no whole-GPU start")
				}
				startObj := p.cost(p.pipes(spaces, start, 1), cfg.cost)
				r, err := s.costCutoff(p.build(spaces, cfg), incumbent{best: start, obj: startObj, bound: lp.Objective}, cutoffOpts{lp: lp, race: proofRace()})
				if err != nil {
					t.Fatal(err)
				}
				best, bound := r.best, r.bound
				obj := p.cost(p.pipes(spaces, best, 1), cfg.cost)
				if obj < opt*(1-1e-6) || bound > opt*(1+1e-6) {
					t.Errorf("cost %.9g and bound %.9g do not bracket the optimum %.9g (start %.9g)", obj, bound, opt, startObj)
				}
				if obj-bound > 0.01*obj*(1+1e-9) {
					t.Errorf("gap %.6g after the cost cut-off phase, want ≤ 1%% (cost %.9g, bound %.9g)", (obj-bound)/obj, obj, bound)
				}
				t.Logf("optimum %.4g, start %.4g, phase %.4g (bound %.4g); %d columns fixed", opt, startObj, obj, bound, n)
			})
		}
	})
	if fixed.Load() == 0 {
		t.Error("no case fixed any column: the test exercises nothing")
	}
}
