package corpus

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/plan-dev/plan/internal/registry/systems"
	gen "github.com/plan-dev/plan/planner/ppipe/corpus"
)

// TestCorpusQuick is CI's slice of the generated corpus (plan bench ppipe-corpus runs 500):
// every case is written or refused with a reason, never a panic or exit 1, and every written
// plan passes plan check. PLAN_CORPUS_CASES=N runs N cases instead.
func TestCorpusQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("solves and simulates: not in -short")
	}
	n := 6
	if s := os.Getenv("PLAN_CORPUS_CASES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("PLAN_CORPUS_CASES=%q: %v", s, err)
		}
	}
	rep, err := Run(context.Background(), Options{Systems: systems.Default(), Seed: 1, Cases: n,
		TimeLimit: 2 * time.Second, Dir: t.TempDir(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Outcomes {
		t.Logf("%s: solve %d %.1fs %s", o.Case, o.SolveExit, o.Seconds, o.SolveErr)
		if o.Broken() {
			t.Errorf("%s breaks the property:\n  %s\n  (%s)\n  solve exit %d: %s\n  check: %v %s %v\n  panic: %s",
				o.Case, o.Describe, o.Command, o.SolveExit, o.SolveErr, o.CheckExit, o.CheckErr, o.Failed, o.Panic)
		}
	}
	// A gate that checked nothing must not pass: the slice's seed writes plans.
	if rep.Written == 0 {
		t.Fatalf("no case wrote a plan (%d refused: %v)", rep.Refused, rep.Reasons)
	}
}

// TestCorpusAuthorsQuick is the same property on the corpus of the authors' own set-up
// (three-model groups, SLO 5× the L4 latency, stage rounding, K^(P−D) replicas, the
// batch-formation allowance): every written plan states what it serves within its SLO and
// passes check, and none serves nothing. PLAN_CORPUS_CASES=N runs N cases.
func TestCorpusAuthorsQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("solves and simulates: not in -short")
	}
	n := 2
	if s := os.Getenv("PLAN_CORPUS_CASES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("PLAN_CORPUS_CASES=%q: %v", s, err)
		}
	}
	rep, err := Run(context.Background(), Options{Systems: systems.Default(), Seed: 1, Cases: n, Authors: true,
		TimeLimit: 3 * time.Second, Dir: t.TempDir(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Outcomes {
		t.Logf("%s: solve %d %.1fs (limit 3s) %s; served/target %v", o.Case, o.SolveExit, o.SolveSeconds, o.SolveErr, o.Sustained)
		if o.Broken() {
			t.Errorf("%s breaks the property:\n  %s\n  (%s)\n  solve exit %d: %s\n  check: %v %s %v\n  panic: %s",
				o.Case, o.Describe, o.Command, o.SolveExit, o.SolveErr, o.CheckExit, o.CheckErr, o.Failed, o.Panic)
		}
	}
	if rep.Written == 0 {
		t.Fatalf("no case wrote a plan (%d refused: %v)", rep.Refused, rep.Reasons)
	}
}

// TestReason: refusals of one cause count together whatever their numbers.
func TestReason(t *testing.T) {
	a := reason("model m0: slo 21.5ms: every pipeline that meets the SLO needs more GPUs than the cluster has left for it")
	b := reason("model m2: slo 1e+03ms: every pipeline that meets the SLO needs more GPUs than the cluster has left for it")
	if a != b || a != "model mN: slo Nms: every pipeline that meets the SLO needs more GPUs than the cluster has left for it" {
		t.Fatalf("reasons %q and %q", a, b)
	}
}

// TestCases: a run's cases are the generated ones it asks for (the authors' set-up's with
// Authors), then every regression case, once.
func TestCases(t *testing.T) {
	regs := gen.Regressions()
	if len(regs) == 0 {
		t.Fatal("no regression cases: nothing to hold a run to")
	}
	for _, tc := range []struct {
		name string
		o    Options
		want []string
	}{
		{"general", Options{Seed: 1, First: 3, Cases: 2}, []string{gen.Generate(1, 3).Name, gen.Generate(1, 4).Name}},
		{"authors", Options{Seed: 7, Cases: 1, Authors: true}, []string{gen.Authors(7, 0).Name}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases, n := Cases(tc.o)
			if n != len(regs) {
				t.Fatalf("%d regression cases, want %d", n, len(regs))
			}
			want := tc.want
			for _, r := range regs {
				want = append(want, r.Name)
			}
			var got []string
			for _, c := range cases {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("cases %v, want %v", got, want)
			}
		})
	}
}

// TestRegressionCases: each regression case, solved and checked as a run does, holds the
// property it once broke (its plan is written and passes check, or it is refused with a
// reason).
func TestRegressionCases(t *testing.T) {
	if testing.Short() {
		t.Skip("solves and simulates: not in -short")
	}
	o := Options{Systems: systems.Default(), TimeLimit: 3 * time.Second, Dir: t.TempDir()}
	for _, c := range gen.Regressions() {
		t.Run(c.Name, func(t *testing.T) {
			out := runCase(context.Background(), o, c)
			check := "none (no plan written)"
			if out.CheckExit != nil {
				check = fmt.Sprintf("exit %d", *out.CheckExit)
			}
			t.Logf("%s: solve exit %d %.1fs %s; check %s; served/target %v", c.Name, out.SolveExit, out.SolveSeconds, out.SolveErr, check, out.Sustained)
			if out.Broken() {
				t.Fatalf("%s breaks the property:\n  %s\n  (%s)\n  solve exit %d: %s\n  check: %v %s %v\n  panic: %s",
					c.Name, c.Describe, out.Command, out.SolveExit, out.SolveErr, out.CheckExit, out.CheckErr, out.Failed, out.Panic)
			}
		})
	}
}

// TestOptimumComparison: with Options.Optimum a case that wrote a plan is solved again at
// OptimumGap, and its objective is compared with that run's: the share is the case's
// objective over the better of the two, and the report counts a proven optimum.
func TestOptimumComparison(t *testing.T) {
	if testing.Short() {
		t.Skip("solves twice: not in -short")
	}
	o := Options{Systems: systems.Default(), TimeLimit: 2 * time.Second, Optimum: 10 * time.Second, Dir: t.TempDir()}
	for i := range 6 {
		c := gen.Generate(1, i)
		out := runCase(context.Background(), o, c)
		if out.SolveExit != 0 {
			continue
		}
		op := out.Optimum
		if op == nil {
			t.Fatalf("%s wrote a plan and has no long-run comparison", c.Name)
		}
		t.Logf("%s: objective %g; long run %+v", c.Name, out.Objective, *op)
		if op.Err != "" {
			t.Fatalf("%s: the long run failed: %s", c.Name, op.Err)
		}
		if !(out.Objective > 0) || !(op.Objective > 0) || !(op.Share > 0 && op.Share <= 1) || op.Seconds <= 0 {
			t.Fatalf("%s: objective %g, long run %+v", c.Name, out.Objective, *op)
		}
		if want := math.Min(1, math.Round(out.Objective/op.Objective*1e6)/1e6); op.Share != want {
			t.Fatalf("%s: share %g, want %g", c.Name, op.Share, want)
		}
		rep := tally([]Outcome{out}, o)
		if rep.Written != 1 || (op.Proven && rep.OptimumKnown != 1) || (!op.Proven && rep.OptimumKnown != 0) {
			t.Fatalf("report %+v for %+v", rep, *op)
		}
		return
	}
	t.Fatal("no case of seed 1 wrote a plan: nothing compared")
}
