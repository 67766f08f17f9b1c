package ppipe

import (
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

// cutoffCases are small single- and multi-model instances whose full MILP solves to a proven
// optimum in well under a second, so the cut-off phase can be checked against it.
var cutoffCases = []struct {
	name      string
	models, P int
	seed      uint64
	counts    []int
}{
	{"1 model", 1, 2, 4, []int{3, 8}},
	{"2 models", 2, 2, 2, []int{3, 8}},
	{"3 models", 3, 2, 5, []int{4, 12}},
}

// cutoffFixture is one case prepared as ppipe() prepares a solve: the session, the spaces, the
// LP relaxation solved, and the full MILP's proven optimum.
type cutoffFixture struct {
	s      *session
	spaces []*modelSpace
	cfg    spaceConfig
	lp     *solver.Result
	opt    float64
}

func newCutoffFixture(t *testing.T, models, P int, seed uint64, counts []int) cutoffFixture {
	t.Helper()
	gp := []gpuSpec{specL4, specP4}
	in := Inputs{Profiles: []*formats.Profile{genProfile(seed, models, 4, gp, 4)}, Cluster: genCluster(gp, counts, 30)}
	p, err := prepare(in, withDiagnostics(Options{Alpha: DefaultAlpha, MaxPartitions: P, Deterministic: true, TimeLimit: 5 * time.Minute}).withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	f := cutoffFixture{s: testSession(p), cfg: spaceConfig{P: P}}
	if f.spaces, err = f.s.spaces(f.cfg); err != nil {
		t.Fatal(err)
	}
	lcfg := f.cfg
	lcfg.relax = true
	f.lp, err = f.s.run(p.build(f.spaces, lcfg), solveCall{phase: "lp"})
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.lp.ReducedCosts) != len(f.lp.Values) {
		t.Fatalf("LP: %d reduced costs for %d columns", len(f.lp.ReducedCosts), len(f.lp.Values))
	}
	opt, err := f.s.run(p.build(f.spaces, f.cfg), solveCall{phase: "full", gap: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	f.opt = opt.Objective
	return f
}

// TestFixByReducedCost: fixing the full MILP's columns for a cut-off just below its optimum
// keeps that optimum (the fixing removes no plan that reaches the cut-off), and it fixes
// something; a cut-off above the LP bound fixes nothing (the LP already rules it out).
func TestFixByReducedCost(t *testing.T) {
	t.Parallel()
	var fixed atomic.Int64
	// The group returns once every parallel case has, so that fixed counts them all.
	t.Run("cases", func(t *testing.T) {
		for _, c := range cutoffCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				f := newCutoffFixture(t, c.models, c.P, c.seed, c.counts)
				full := f.s.p.build(f.spaces, f.cfg)
				n := fixByReducedCost(full.m, f.lp, f.opt*(1-1e-6))
				fixed.Add(int64(n))
				t.Logf("%d of %d columns fixed", n, full.m.NumVars())
				res, err := f.s.run(full, solveCall{phase: "fixed", gap: 1e-9})
				if err != nil {
					t.Fatalf("after fixing %d columns: %v", n, err)
				}
				if math.Abs(res.Objective-f.opt) > 1e-6*f.opt {
					t.Errorf("optimum %.9g after fixing %d columns, %.9g before", res.Objective, n, f.opt)
				}
				above := f.s.p.build(f.spaces, f.cfg)
				if n := fixByReducedCost(above.m, f.lp, f.lp.Objective*1.01); n != 0 {
					t.Errorf("a cut-off above the LP bound %.6g fixed %d columns", f.lp.Objective, n)
				}
			})
		}
	})
	if fixed.Load() == 0 {
		t.Error("no case fixed any column: the test exercises nothing")
	}
}

// TestCutoffPhase: from a plan below the optimum (NP's), the cut-off phase returns a plan and
// a bound within the gap of each other that bracket the proven optimum.
func TestCutoffPhase(t *testing.T) {
	t.Parallel()
	for _, c := range cutoffCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newCutoffFixture(t, c.models, c.P, c.seed, c.counts)
			gap := f.s.p.opts.Gap
			np, err := f.s.np()
			if errors.Is(err, planner.ErrInfeasible) {
				t.Skip("NP cannot serve every model")
			}
			if err != nil {
				t.Fatal(err)
			}
			start := f.s.p.build(f.spaces, f.cfg).assignFrom(np.pipes)
			startObj := f.s.p.objective(f.s.p.pipes(f.spaces, start, 1))
			// From NP's plan the phase must find a better one and prove it.
			full := f.s.p.build(f.spaces, f.cfg)
			inc, err := f.s.cutoff(full, incumbent{best: start, obj: startObj, bound: f.lp.Objective}, cutoffOpts{lp: f.lp, race: proofRace()})
			if err != nil {
				t.Fatal(err)
			}
			best, obj, bound := inc.best, inc.obj, inc.bound
			if best == nil {
				t.Fatal("no plan")
			}
			if got := f.s.p.objective(f.s.p.pipes(f.spaces, best, 1)); math.Abs(got-obj) > 1e-6*math.Max(1, obj) {
				t.Errorf("plan's objective %.9g, reported %.9g", got, obj)
			}
			if obj > f.opt*(1+1e-6) || bound < f.opt*(1-1e-6) {
				t.Errorf("objective %.9g and bound %.9g do not bracket the optimum %.9g (NP: %.9g)", obj, bound, f.opt, startObj)
			}
			if relGap(obj, bound) > gap*(1+1e-9) {
				t.Errorf("gap %.6g after the cut-off phase, want ≤ %g (objective %.9g, bound %.9g)", relGap(obj, bound), gap, obj, bound)
			}
		})
	}
}
