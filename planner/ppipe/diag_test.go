package ppipe

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// Diagnostics for formulation work, skipped unless their environment variable is set:
//
//	PPIPE_SOLVER_LOG=1   HiGHS's log on stderr (the solves of withDiagnostics: these
//	                     diagnostics, the benchmarks and the tests of single phases)
//	CASE=i [P= LIMIT= ROUNDING= REPLICAS= NOLP=1 NOCC=1 NOCUT=1 DET=1]   one benchmark case: progress and summary
//	LPCASE=i             the LP relaxation of a case, with every option it uses

// withHooks is o with h injected into its solve: the session takes them from Options.hooks,
// so tests with different hooks run in parallel.
func (o Options) withHooks(h solveHooks) Options {
	o.hooks = &h
	return o
}

// withDiagnostics is o with the diagnostics the environment asks for (PPIPE_SOLVER_LOG).
func withDiagnostics(o Options) Options {
	if os.Getenv("PPIPE_SOLVER_LOG") == "" {
		return o
	}
	return o.withHooks(solveHooks{log: os.Stderr})
}

// testSession is a session on p, as Solve starts one, for the tests of single phases.
func testSession(p *problem) *session {
	return newSession(context.Background(), p, time.Now())
}

// TestDebugCase solves one benchmark case once (CASE=i, optional P=, LIMIT=) for diagnosis.
func TestDebugCase(t *testing.T) {
	if os.Getenv("CASE") == "" {
		t.Skip("set CASE")
	}
	i, _ := strconv.Atoi(os.Getenv("CASE"))
	c := benchCases[i]
	P := c.P
	if s := os.Getenv("P"); s != "" {
		P, _ = strconv.Atoi(s)
	}
	limit := 60 * time.Second
	if s := os.Getenv("LIMIT"); s != "" {
		limit, _ = time.ParseDuration(s)
	}
	start := time.Now()
	o := Options{Alpha: DefaultAlpha, MaxPartitions: P, TimeLimit: limit, Rounding: os.Getenv("ROUNDING"), Replicas: replicasEnv(), NoLPGuide: os.Getenv("NOLP") != "",
		NoContinuousCounts: os.Getenv("NOCC") != "", NoCutoff: os.Getenv("NOCUT") != "", Deterministic: os.Getenv("DET") != ""}
	// Phase changes and incumbent/bound moves, one line each.
	var last Progress
	o.Progress = func(pr Progress) {
		if pr.Phase != last.Phase || pr.Incumbent != last.Incumbent || pr.Bound != last.Bound {
			t.Logf("%8.2fs %-18s nodes %6d incumbent %.2f bound %.2f", pr.Elapsed.Seconds(), pr.Phase, pr.Nodes, pr.Incumbent, pr.Bound)
			last = pr
		}
	}
	pl, err := Solve(context.Background(), c.inputs(), withDiagnostics(o))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v status %s obj %.2f bound %.2f gap %.4f%% options %s/%s", time.Since(start), pl.Provenance.Status, pl.Provenance.Objective, formats.Num(pl.Provenance.Bound), formats.Num(pl.Provenance.Gap)*100, ppipesec.PlanOf(pl).Extra["options_kept"], ppipesec.PlanOf(pl).Extra["options_raw"])
}

func TestDebugLPCase(t *testing.T) {
	if os.Getenv("LPCASE") == "" {
		t.Skip("set LPCASE")
	}
	i, _ := strconv.Atoi(os.Getenv("LPCASE"))
	c := benchCases[i]
	o := withDiagnostics(Options{Alpha: DefaultAlpha, MaxPartitions: c.P, Rounding: os.Getenv("ROUNDING")}).withDefaults()
	p, err := prepare(c.inputs(), o)
	if err != nil {
		t.Fatal(err)
	}
	cfg := spaceConfig{P: c.P, relax: true}
	s := testSession(p)
	spaces, _ := s.spaces(cfg)
	b := p.build(spaces, cfg)
	res, err := s.run(b, solveCall{phase: "lp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("LP %.2f", res.Objective)
	for mi, ms := range spaces {
		for li, tp := range ms.tmpls {
			if res.Values[b.x[mi][li]] < 1e-6 {
				continue
			}
			t.Logf("m%d tmpl %v x=%.2f u=%.3f xmax %.1f", mi, tp.types, res.Values[b.x[mi][li]], res.Values[b.u[mi][li]], tp.xmax)
			for d := range tp.stages {
				for oi, op := range tp.stages[d] {
					if f := res.Values[b.f[mi][li][d][oi]]; f > 1e-6 || res.Values[b.y[mi][li][d][oi]] > 1e-6 {
						t.Logf("   d%d v%d b%d [%d,%d) y=%.3f f=%.1f g=%.2f X=%.1f lat=%.0f budget=%.0f G=%d", d, op.v, op.b, op.i, op.j, res.Values[b.y[mi][li][d][oi]], f, res.Values[b.g[mi][li][d][oi]], op.X, op.lat(), ms.md.budget, op.G)
					}
				}
			}
		}
	}
}

func replicasEnv() int {
	n, _ := strconv.Atoi(os.Getenv("REPLICAS"))
	return n
}
