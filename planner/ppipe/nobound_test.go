package ppipe

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/solver"
)

// TestNoBoundPlanIsWritten: a solve whose every phase after the NP warm start hits the time
// limit with no solution and no bound (a loaded machine: the LP relaxation itself timed out)
// still writes its plan, marked time-limit, with no bound and no gap rather than a bound of
// +Inf that plan validation refuses ("provenance.bound: +Inf: must be a finite number").
func TestNoBoundPlanIsWritten(t *testing.T) {
	t.Parallel()
	in := loadFixtureInputs(t)
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"lp-guided", Options{Alpha: DefaultAlpha, MaxPartitions: 2, Deterministic: true, TimeLimit: time.Minute}},
		{"full-milp", Options{Alpha: DefaultAlpha, MaxPartitions: 2, Deterministic: true, TimeLimit: time.Minute, NoLPGuide: true, NoContinuousCounts: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var phases []string
			opts := tc.opts.withHooks(solveHooks{result: func(phase string, res *solver.Result) *solver.Result {
				phases = append(phases, phase)
				if phase == "np" {
					return res
				}
				return &solver.Result{Status: solver.StatusTimeLimit, Objective: math.NaN(), Bound: math.Inf(1), Gap: math.Inf(1)}
			}})
			pl, err := Solve(context.Background(), in, opts)
			skipWithoutSolver(t, err)
			if err != nil {
				t.Fatal(err)
			}
			if len(phases) < 2 || phases[0] != "np" {
				t.Fatalf("phases %v: want the NP warm start and at least one bound-less phase", phases)
			}
			pv := pl.Provenance
			if pv.Status != "time-limit" || pv.Bound != nil || pv.Gap != nil || !(pv.Objective > 0) {
				t.Errorf("provenance: status %s objective %g bound %g gap %g, want time-limit, the NP objective, no bound, no gap",
					pv.Status, pv.Objective, formats.Num(pv.Bound), formats.Num(pv.Gap))
			}
			path := filepath.Join(t.TempDir(), "plan.json")
			if err := formats.WriteFile(path, pl, intree.Sections()); err != nil {
				t.Fatalf("plan not written: %v", err)
			}
			back, err := formats.ReadInto[*formats.Plan](path, intree.Sections())
			if err != nil {
				t.Fatalf("written plan does not read back: %v", err)
			}
			if back.Provenance.Bound != nil || back.Provenance.Gap != nil {
				t.Errorf("read back bound %g gap %g, want none", formats.Num(back.Provenance.Bound), formats.Num(back.Provenance.Gap))
			}
			if v := Verify(pl); len(v) > 0 {
				t.Errorf("violations: %v", v)
			}
		})
	}
}
