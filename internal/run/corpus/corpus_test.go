package corpus

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/plan-dev/plan/internal/systems"
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
