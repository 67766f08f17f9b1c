package solver

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// TestWriteLPReadsBackIntoHiGHS parses WriteLP output with HiGHS's own LP
// reader and checks that the parsed model solves to the same optimum as the
// model passed directly.
func TestWriteLPReadsBackIntoHiGHS(t *testing.T) {
	needBackend(t)
	golden := lpGoldenModel()
	y := Var(1)
	x := Var(0)
	// Bound the golden model so that it has an optimum to compare.
	golden.AddRow("boundx", -Inf, 100, Term{x, 1})
	golden.AddRow("boundy", -100, Inf, Term{y, 1})
	models := []*Model{golden, multiKnapsack(9, 15, 2), facilityLocation(3, 5, 8)}
	for _, m := range models {
		res, err := Solve(context.Background(), m, Options{RelGap: 1e-9})
		if err != nil || res.Status != StatusOptimal {
			t.Fatalf("%s: direct solve %v, %v", m.Name(), res, err)
		}
		var lp bytes.Buffer
		if err := m.WriteLP(&lp); err != nil {
			t.Fatal(err)
		}
		obj, st := solveLPText(t, lp.Bytes())
		if st != highs.ModelOptimal || math.Abs(obj-res.Objective) > 1e-6*math.Max(1, math.Abs(obj)) {
			t.Errorf("%s: LP file solves to %v (%v), direct solve %v\n%s", m.Name(), obj, st, res.Objective, lp.String())
		}
	}
}

func solveLPText(t *testing.T, lp []byte) (float64, highs.ModelStatus) {
	t.Helper()
	ctx := context.Background()
	eng, _ := highs.Default()
	in, err := eng.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Release(ctx, in)
	var log bytes.Buffer
	must := func(err error) {
		if err != nil {
			t.Fatalf("%v\nHiGHS log:\n%s", err, log.String())
		}
	}
	must(in.Create(ctx))
	in.SetLog(&log)
	must(in.SetIntOption(ctx, "threads", 1))
	must(in.SetStringOption(ctx, "parallel", "off"))
	must(in.SetDoubleOption(ctx, "mip_rel_gap", 1e-9))
	must(in.ReadModel(ctx, "model.lp", lp))
	_, err = in.Run(ctx)
	must(err)
	st, err := in.ModelStatus(ctx)
	must(err)
	obj, err := in.DoubleInfo(ctx, "objective_function_value")
	must(err)
	return obj, st
}
